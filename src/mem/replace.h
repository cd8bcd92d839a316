/*
 * replace.h — which cached page goes when local memory is full: FIFO or
 * clock (seed 002, ATTEMPT-0's two policies).
 *
 * A pure data structure over page numbers, no system calls: the resident
 * pages in the order they came in, as a circular list threaded through
 * per-page links, and a reference bit per page. FIFO takes the oldest page;
 * clock sweeps a hand round the same list, clearing set reference bits (a
 * second chance) until it finds one clear. What a cleared bit costs (the
 * page's access is taken away, so the next touch sets it again) is the
 * caller's business: the `cleared` callback.
 */
#ifndef DSM_MEM_REPLACE_H
#define DSM_MEM_REPLACE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum replace_policy { REPLACE_FIFO = 0, REPLACE_CLOCK = 1 };

struct replace {
    enum replace_policy policy;
    size_t              npages;
    size_t              count;  /* pages in the list */
    uint32_t           *next;   /* per page: the next newer page (circular), plus one */
    uint32_t           *prev;   /* per page: the next older page, plus one */
    uint8_t            *ref;    /* per page: reference bit (clock) */
    uint32_t            oldest; /* plus one; 0: empty */
    uint32_t            hand;   /* clock: the page the hand points at, plus one */
};

/* Per-page tables for npages pages (mapped, untouched pages cost nothing).
 * Returns 0 or -ENOMEM. */
int  replace_init(struct replace *r, size_t npages, enum replace_policy policy);
void replace_free(struct replace *r);

static inline bool replace_has(const struct replace *r, size_t page) { return r->next[page] != 0; }

/* A page comes in: the newest, referenced. It must not be in already. */
void replace_insert(struct replace *r, size_t page);
/* A page goes (evicted, or no longer cached). No-op if it is not in. */
void replace_remove(struct replace *r, size_t page);
/* The page was used: its reference bit is set. */
static inline void replace_reference(struct replace *r, size_t page) { r->ref[page] = 1; }

/* The next victim, not removed: FIFO, the oldest page `refuse` does not
 * refuse; clock, from the hand on, the first page with a clear bit that
 * `refuse` does not refuse, clearing the set bits it passes (calling
 * `cleared` for each). Refused pages keep their bits and place. -1 when
 * every page is refused (clock: after two turns of the hand). */
long replace_victim(struct replace *r, bool (*refuse)(size_t page, void *arg),
                    void (*cleared)(size_t page, void *arg), void *arg);
#endif
