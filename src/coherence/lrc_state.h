/*
 * lrc_state.h — homeless lrc's messages, page records and state, shared by
 * its files (private to src/coherence: lrc.c, lrc_fault.c, lrc_handlers.c,
 * lrc_gc.c; lrc.c describes the protocol).
 *
 * One mutex, lrc.lock, guards the page records, the twins of written pages
 * and the fetch the program waits for. The program thread's actions
 * (faults, release, acquire, eviction, collection) also hold the fault
 * lock (coherence_lock); the handlers run on the delivery thread, or on a
 * program thread waiting for a reply, and take lrc.lock alone, never
 * while they send.
 */
#ifndef DSM_COHERENCE_LRC_STATE_H
#define DSM_COHERENCE_LRC_STATE_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coherence/coherence.h"
#include "coherence/msgcheck.h"

/* lrc's message types (coherence.h: the active protocol's own slots). */
enum lrc_type {
    LRC_DIFF_REQ = COH_PROTOCOL_TYPES, /* the diffs of a page's intervals, from their writer */
    LRC_DIFF_REP, /* those diffs */
    LRC_BASE_REQ, /* after a collection, a whole page from its keeper */
    LRC_BASE_REP, /* that page */
    LRC_COVER_REQ, /* the page whole, from its latest writer, if its copy has all we need */
    LRC_COVER_REP, /* that page and what it holds, or no */
    LRC_SEEN,      /* diffs of the receiver's that the sender will never ask for */
    LRC_TYPE_END
};
_Static_assert((int)LRC_TYPE_END <= (int)COHERENCE_TYPE_NEXT, "lrc has more message types than slots");

#define OPEN_STAMP LRC_OPEN_STAMP /* a diff of the interval still open: stamped at release */

struct ldiff {      /* a diff this node made */
    uint32_t       stamp;
    uint32_t       len;
    unsigned char *data;
};

struct lazy {       /* a closed interval's writes to the page, not yet diffed */
    uint32_t       stamp;
    unsigned char *before;   /* the page when the interval first wrote it */
    unsigned char *after;    /* the page when it closed; NULL: as it is now */
};

struct lnote {      /* a notice not yet applied to the local copy */
    uint32_t  stamp;
    int32_t   node;
    uint32_t *vt;   /* DSM_CHECK: its interval's vector time; else NULL */
};

struct lpage {
    struct ldiff  *diffs;
    uint32_t       ndiffs, cap_diffs;
    struct lnote  *pend;
    uint32_t       npend, cap_pend;
    struct lazy   *lazy;         /* oldest first; consecutive ones share copies */
    uint32_t       nlazy, cap_lazy;
    uint32_t       last_stamp;   /* the latest notice since the last collection: */
    int32_t        last_node;    /* its writer keeps the page at the next one (-1: none) */
    int32_t        base_from;    /* fetch a whole copy from this keeper first (-1: no) */
    uint8_t        allocated;    /* known to be allocated */
    uint8_t        listed;       /* in lrc.touched */
    uint32_t      *asked;        /* per node: the latest stamp it asked our diffs of the page for */
    uint32_t      *have;         /* per node: this copy holds its writes up to this stamp */
    uint8_t        cover_skip;   /* faults left to ask every writer (a cover was refused) */
    unsigned char *snapshot;     /* as keeper: the page at the last collection */
    unsigned char *next_snapshot;/* ... and at the collection under way */
    uint32_t      *seen;         /* DSM_CHECK: what the diffs applied here had seen (nodes) */
};

enum base_kind { BASE_PROBE = 0, BASE_COPY = 1 };
enum base_status { BASE_ALLOCATED = 0, BASE_UNALLOCATED = 1, BASE_DATA = 2 };

/* The diff fetch's bodies (struct diff_req, diff_rep, diff_item) are in
 * msgcheck.h, with their checks. */
struct base_req { uint32_t page, kind; };
struct base_rep { uint32_t page, status; };
/* A cover: LRC_COVER_REQ's body is followed by need[nodes], what the
 * asker's copy must come to hold (per writer, a stamp); LRC_COVER_REP's,
 * when status is 1, by the giver's have[nodes] and the page. */
struct cover_req { uint32_t page, nodes; };
struct cover_rep { uint32_t page, status; };


struct lrc_state {
    pthread_mutex_t lock;        /* the page records, twins of written pages, the fetch */
    struct lpage  **tab;         /* per page, made on first use */
    uint32_t       *recorded;    /* the pages with a record, for lrc_finish: the */
    size_t          nrecorded, cap_recorded; /* region is far larger than what is used */
    uint32_t        clock;       /* Lamport clock of intervals */
    uint32_t       *dirty;       /* pages written in the open interval */
    size_t          ndirty, cap_dirty;
    uint32_t       *touched;     /* pages named by notices since the last collection */
    size_t          ntouched, cap_touched;
    uint64_t        notices;     /* notices since the last collection (all nodes') */
    bool            collecting;
    unsigned char  *scratch;     /* diff creation, under lock */
    struct {                     /* the fetch the program waits for */
        bool            waiting;
        uint32_t        page;
        int             expected, got;
        bool           *asked;   /* per node: a diff reply is due */
        unsigned char **reply;   /* per node: its reply's payload */
        size_t         *reply_len;
        bool            base_done;
        uint32_t        base_status;
        bool            cover_done;
        int             cover_from;
    } f;
    struct seen_out {            /* per writer: LRC_SEEN pairs not sent yet (program thread) */
        uint32_t *v;
        size_t    n, cap;
    } *seen;
};
extern struct lrc_state lrc;

/* ---- lrc.c: the page records and the diffs they keep --------------------- */
/* The page's record, made on first use. Caller holds lrc.lock. */
struct lpage *lrc_record(size_t page);
/* Frees n pending notices. */
void lrc_pend_free(struct lnote *pend, uint32_t n);
/* The page's have[], made on first use. Caller holds lrc.lock. */
uint32_t *lrc_have_of(struct lpage *p);
/* Drops the page's lazy interval i, whose diff nobody will ask for. Caller
 * holds lrc.lock. */
void lrc_lazy_drop(size_t page, struct lpage *p, uint32_t i);
/* Makes the diff of the page's lazy interval i, now. The page must not be
 * writable while its "after" is the page itself. Caller holds lrc.lock. */
void lrc_lazy_take(size_t page, struct lpage *p, uint32_t i);
/* Frees the page's diffs. */
void lrc_free_page_record(struct lpage *p);
/* Drops the page's lazy intervals, whose diffs nobody asked for, and
 * their copies. Caller holds lrc.lock. */
void lrc_drop_lazy(size_t page, struct lpage *p);

/* ---- lrc_fault.c: bringing a page up to date (program thread) ------------ */
/* Makes an invalid page valid (read-only). */
void lrc_make_valid(size_t page);
void lrc_write_fault(size_t page);

/* ---- lrc_gc.c: collection ------------------------------------------------ */
/* `src` will never ask for the page's diffs up to stamp `latest`: drops
 * what every other node is done with. Caller holds lrc.lock. */
void lrc_note_asked(size_t page, struct lpage *p, int src, uint32_t latest);
/* coherence_ops.barrier_done: collects at the first barrier after
 * DSM_LRC_GC_NOTICES notices (coherence_params). */
bool lrc_barrier_done(uint32_t votes);
/* This copy holds `node`'s writes to the page up to `stamp` without having
 * asked it for them: tells the writer, in batches (program thread). */
void lrc_seen_add(int node, size_t page, uint32_t stamp);
/* LRC_SEEN: `src` will never ask for our diffs of these pages up to these
 * stamps. */
void lrc_on_seen(int src, const void *msg, size_t len);

/* ---- lrc_handlers.c: requests served, replies taken in ------------------- */
void lrc_on_diff_req(int src, const void *msg, size_t len);
void lrc_on_diff_rep(int src, const void *msg, size_t len);
void lrc_on_cover_req(int src, const void *msg, size_t len);
void lrc_on_cover_rep(int src, const void *msg, size_t len);
void lrc_on_base_req(int src, const void *msg, size_t len);
void *lrc_place_base_rep(int src, const void *head, size_t head_len, size_t msg_len,
                         size_t *skip);
void lrc_on_base_rep(int src, const void *msg, size_t len);

#endif
