/*
 * replace.c — FIFO and clock victim choice (replace.h).
 */
#include "mem/replace.h"

#include <errno.h>
#include <sys/mman.h>

static void *table(size_t n, size_t elem)
{
    void *p = mmap(NULL, n * elem, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int replace_init(struct replace *r, size_t npages, enum replace_policy policy)
{
    *r = (struct replace){.policy = policy, .npages = npages};
    r->next = table(npages, sizeof *r->next);
    r->prev = table(npages, sizeof *r->prev);
    r->ref = table(npages, sizeof *r->ref);
    if (!r->next || !r->prev || !r->ref) {
        replace_free(r);
        return -ENOMEM;
    }
    return 0;
}

void replace_free(struct replace *r)
{
    if (r->next)
        munmap(r->next, r->npages * sizeof *r->next);
    if (r->prev)
        munmap(r->prev, r->npages * sizeof *r->prev);
    if (r->ref)
        munmap(r->ref, r->npages * sizeof *r->ref);
    r->next = r->prev = NULL;
    r->ref = NULL;
    r->count = 0;
}

/* The list is circular: the newest page's next is the oldest. */
void replace_insert(struct replace *r, size_t page)
{
    uint32_t me = (uint32_t)page + 1;
    if (!r->oldest) {
        r->next[page] = r->prev[page] = me;
        r->oldest = r->hand = me;
    } else {
        uint32_t oldest = r->oldest, newest = r->prev[oldest - 1];
        r->next[newest - 1] = me;
        r->prev[page] = newest;
        r->next[page] = oldest;
        r->prev[oldest - 1] = me;
    }
    r->ref[page] = 1;
    r->count++;
}

void replace_remove(struct replace *r, size_t page)
{
    uint32_t me = (uint32_t)page + 1, next = r->next[page], prev = r->prev[page];
    if (!next)
        return;
    if (next == me) {
        r->oldest = r->hand = 0;
    } else {
        r->next[prev - 1] = next;
        r->prev[next - 1] = prev;
        if (r->oldest == me)
            r->oldest = next;
        if (r->hand == me)
            r->hand = next;
    }
    r->next[page] = r->prev[page] = 0;
    r->ref[page] = 0;
    r->count--;
}

long replace_victim(struct replace *r, bool (*refuse)(size_t page, void *arg),
                    void (*cleared)(size_t page, void *arg), void *arg)
{
    if (!r->count)
        return -1;
    if (r->policy == REPLACE_FIFO) {
        uint32_t p = r->oldest;
        for (size_t i = 0; i < r->count; i++, p = r->next[p - 1])
            if (!refuse || !refuse(p - 1, arg))
                return (long)p - 1;
        return -1;
    }
    /* Two turns: the first may clear every bit, the second then finds one
     * clear unless every page is refused. */
    for (size_t i = 0; i < 2 * r->count; i++) {
        size_t p = r->hand - 1;
        r->hand = r->next[p];
        if (refuse && refuse(p, arg))
            continue;
        if (!r->ref[p])
            return (long)p;
        r->ref[p] = 0;
        if (cleared)
            cleared(p, arg);
    }
    return -1;
}
