/*
 * home.h — homes: finding a page's home and fetching the page from it, for
 * the home-based protocols (hlrc, erc; sc finds its managers here too).
 *
 * Every page has a home. Its *base node* (the owner of the arena the page
 * lies in, mem_base_node) decides the home by the allocation's policy (a
 * first touch names the requester) and always knows it. A node that does
 * not know a page's home asks the base node, which serves the page if it
 * is the home, forwards the request to the home (telling it that it is
 * home), or answers that the requester is home. The reply names the home,
 * which is then remembered (mem_set_home). This file is the one place that
 * knows how homes are found: protocols ask it, never the base node.
 *
 * A fetch is two messages: COH_PAGE_REQ to the home (or the base node),
 * COH_PAGE_REP with the page, received straight into its frame.
 *
 * Homes may move (migrate.c, seed 003 §5-6): a former home forwards what
 * still reaches it (a request, a diff) to the page's next home, and the
 * base node learns the new home once that node holds the page.
 */
#ifndef DSM_COHERENCE_HOME_H
#define DSM_COHERENCE_HOME_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coh_atomic; /* coherence.h */

/* A page reply's status. */
enum home_status {
    HOME_DATA = 0,         /* the page follows */
    HOME_YOU_ARE_HOME = 1, /* the base node made the requester home (first touch) */
    HOME_UNALLOCATED = 2,  /* no allocation covers the page: a stray access */
};

/* The wire formats of coherence's message types (coherence.h), one each. */
struct page_req {      /* COH_PAGE_REQ */
    uint32_t page, need; /* need: the version the requester needs at least (0: any) */
    int32_t  requester;
    uint32_t flags;      /* HOME_FROM_BASE; a run in the bits above (home.c) */
};
struct page_rep {      /* COH_PAGE_REP (aux: home_send_page's unseen); the page follows if HOME_DATA */
    uint32_t page, version;
    int32_t  home;
    uint32_t status;     /* enum home_status */
    uint32_t run;        /* the pages after this one with the same home (home.c) */
};
struct diff_hdr {      /* COH_DIFF (aux: home_send_diff's interval); the diff follows */
    uint32_t page, idx;  /* idx: the writer's own reference, sent back in the ack */
};
struct diff_ack {      /* COH_DIFF_ACK; COH_DIFF_ACKS is an array of them */
    uint32_t page, idx, version, zero;
};
struct diffs_item {    /* COH_DIFFS (aux: the interval, as a diff's): items, each followed by its diff */
    uint32_t page, idx, len;
    uint32_t flags;      /* DIFFS_BEFORE_ARRIVAL */
};
/* The writer, the home's child in the barrier's tree, does not wait for
 * this diff's acknowledgement before its arrival: the home remembers the
 * version it gave, and fills it into the arrival's notice. */
#define DIFFS_BEFORE_ARRIVAL 1u

struct atomic_req {    /* COH_ATOMIC_REQ (aux: as a diff's, the requester's next interval) */
    uint32_t page, need;   /* need: as a page request's */
    uint32_t offset;       /* of the word in the page, a multiple of its size */
    uint8_t  op, size;     /* struct coh_atomic's */
    uint16_t zero;
    uint64_t value, expected;
};
struct atomic_rep {    /* COH_ATOMIC_REP */
    uint32_t page, version; /* version: the page's at the home after it (0: not done) */
    int32_t  home;          /* the page's home as the sender knows it (-1: not known) */
    uint32_t status;        /* enum home_atomic_status */
    uint64_t old;
};
enum home_atomic_status {
    HOME_ATOMIC_UNCHANGED = 0, /* done; the word did not change (a load, a failed CAS) */
    HOME_ATOMIC_CHANGED = 1,   /* done; the page is at `version` */
    HOME_ATOMIC_NOT_HOME = 2,  /* not done: the receiver is not the page's home */
};

/* A request carrying this flag comes from the page's base node, which has
 * made the receiver the page's home. */
#define HOME_FROM_BASE 1u

/* What a protocol adds to the fetch (its hooks run on the delivering
 * thread). */
struct home_ops {
    /* At the home: sends the page to `requester`, which needs at least
     * version `need`, with home_send_page (passing `run` on). */
    void (*serve)(int requester, size_t page, uint32_t need, size_t run);
    /* Optional: whether a page reply that no home_fetch waits for is
     * expected (hlrc's pulls). */
    bool (*expects)(size_t page);
    /* Optional: a reply is in place (HOME_DATA) or tells the home, which
     * is recorded. `unseen`: the home said the copy may hold writes of
     * intervals the requester has not seen (home_send_page). Returns true
     * when it was one `expects` accepted: no fetch waits for it. */
    bool (*landed)(size_t page, enum home_status status, uint32_t version, bool unseen);
    /* At the home: applies `src`'s diff of the page (whose home this node
     * is) and acknowledges it with home_ack_diff, now or later (erc: once
     * the copies have it). `interval`: the id of src's interval whose
     * notices will announce it (home_send_diff). Checks the diff. Counted
     * and timed by home.c. */
    void (*diff)(int src, size_t page, uint32_t idx, const void *diff, size_t len, uint32_t interval);
    /* Optional: at the home (delivering thread), performs `src`'s atomic
     * `a` on the word at `offset` of the page; src needs at least version
     * `need`. Returns the page's version after it when the word changed
     * (the change counts as src's write, as a diff's, announced in src's
     * interval `interval` or a later one), 0 when not. NULL: no atomic
     * reaches a home (coherence_ops.atomic is NULL). */
    uint32_t (*atomic)(int src, size_t page, uint32_t need, size_t offset, struct coh_atomic *a,
                       uint32_t interval);
    /* At the writer: the home acknowledged the diff; checks the ack. */
    void (*diff_acked)(int src, const struct diff_ack *a);
    /* Optional (homes that move; migrate.c): at the home, in a migration
     * window (every node inside the barrier, every diff applied), under
     * the fault lock: makes this node an ordinary holder of the page and
     * sends it with migrate_send (which makes `to` its home here), under
     * the lock that orders its serves; false (and nothing sent) when the
     * page cannot move now (erc: an invalidation still in flight). */
    bool (*give)(size_t page, int to);
    /* At the new home (delivering thread): installs `data`, the page at
     * `version` with `set` (the nodes that may hold copies, `words` words;
     * none for hlrc), and becomes its home (mem_set_home). */
    void (*take)(int from, size_t page, uint32_t version, const uint64_t *set, size_t words,
                 const void *data);
};

/* Registers coherence's message types (COH_PAGE_REQ ... COH_DIFF_ACKS but
 * the read-ahead runs, which are hlrc's), served through `ops`. */
void home_start(const struct home_ops *ops);

/* The page's home as far as this node knows it; as its base node, decided
 * now (a first touch makes this node home). -1: unknown here — a request
 * goes to the base node. A page no allocation covers crashes here. */
int home_lookup(size_t page);

/* Fetches the page from `home` (home_lookup's answer; -1: through the
 * base node) into its frame, and waits for the reply: HOME_DATA (then
 * *version is the home's, and *unseen, where given, what the home said
 * with home_send_page) or HOME_YOU_ARE_HOME; a page no allocation covers
 * crashes. `also`, when given, runs after the request is sent, in the
 * same batch (hlrc's read-ahead), where the home is known. Threads may
 * fetch at once, never two of them the same page (the protocol sees to
 * it); counted as STAT_FETCHES_IN_FLIGHT_MAX. */
enum home_status home_fetch(size_t page, int home, uint32_t need, uint32_t *version, bool *unseen,
                            void (*also)(size_t page, int home));

/* Performs the atomic `a` on the word at `offset` of the page at its
 * `home` (home_lookup's answer; -1: through the base node), needing
 * version `need` there, and waits for the answer (home_atomic.c). Returns
 * the page's new version when the word changed, 0 when it did not (a->old
 * set either way), -EAGAIN when the receiver was not the home (nothing
 * done; the home it named is recorded). One at a time (the fault lock). */
int64_t home_atomic(size_t page, int home, uint32_t need, size_t offset, struct coh_atomic *a,
                    uint32_t interval);
/* Registers COH_ATOMIC_REQ and COH_ATOMIC_REP (home_start does, where the
 * protocol's home_ops has `atomic`). */
void home_atomic_start(const struct home_ops *ops);

/* Catching up (coherence.h), a page request carries the requester's
 * vector time after its body (aux 1; a read-ahead run's too), which the
 * home takes as what the requester has seen (interval_heard) before it
 * serves: hlrc's unseen_by judges by what the requester has now, not at
 * its last flush (a pull asked while an acquire applies the notices that
 * caused it would otherwise always hold "unseen" writes). home_vt_out
 * fills vt and returns the aux to send and the bytes to append (0: none);
 * home_vt_in takes them at the home from the request's `rest` bytes at
 * `tail`, and returns false when they are malformed. */
size_t home_vt_out(uint32_t *vt, uint32_t *aux);
bool home_vt_in(int src, uint32_t aux, const void *tail, size_t rest);

/* Asks the page's known home for it without waiting; the reply goes to
 * the protocol's expects/landed. */
void home_request(size_t page, int home, uint32_t need);

/* A diff of the page (made from its twin) to its home, with the writer's
 * own reference `idx` and the id of the interval whose notices will
 * announce it (interval_next; the message's aux field); timed
 * (STAT_T_DIFF_SEND_NS). Between home_diffs_begin and home_diffs_end on
 * the calling thread, it is copied and kept instead: the diffs of one
 * home (of one interval) leave as one COH_DIFFS message, or a few of
 * about a datagram each, which the home applies in order and acknowledges
 * with one COH_DIFF_ACKS. The writer still counts an acknowledgement per
 * diff (diff_acked), so nothing else changes. */
void home_send_diff(size_t page, uint32_t idx, const void *diff, size_t len, uint32_t interval);
void home_diffs_begin(void);
void home_diffs_end(void);
/* Between home_diffs_begin and home_diffs_end: the next diff is one
 * whose version `parent`, its home and this node's parent in the
 * barrier's tree, fills into the arrival that follows it
 * (DIFFS_BEFORE_ARRIVAL). */
void home_diff_before_arrival(int parent);
/* At a barrier parent: fills the versions of `child`'s arrival (the
 * interval encoding `intervals`, checked here) from the diffs it sent
 * with DIFFS_BEFORE_ARRIVAL, and forgets them. Ends the job naming the
 * page when one is missing. */
void home_fill_arrival(int child, void *intervals, size_t len);
/* At the home: acknowledges `to`'s diff `idx` of the page, now at `version`
 * (while a COH_DIFFS from `to` is applied on this thread, gathered into
 * its one COH_DIFF_ACKS). */
void home_ack_diff(int to, uint32_t page, uint32_t idx, uint32_t version);

/* At the home: the page's `data` (its frame, or a copy) to `to`;
 * `unseen`: it may hold writes of intervals `to` has not seen (hlrc,
 * catching up; the message's aux field). */
void home_send_page(int to, size_t page, uint32_t version, size_t run, const void *data, bool unseen);

/* At the node a request for the page reached, from `src` for `requester`
 * (`from_base`: src is the page's base node and says this node is home):
 * the page's home, learnt or decided here; -1 when no allocation covers
 * it. `run`, when not NULL, names pages after this one the base says have
 * this node as home too (in), and those the reply may tell the requester
 * have the home returned (out). Ends the job on a request that should not
 * have come here. */
int home_route(size_t page, int src, int requester, bool from_base, size_t *run);

/* At a former home: passes a request for the page (from `requester`,
 * needing `need`) on to the home this node knows, or tells the requester
 * it is the home now. Counted (STAT_MIGRATE_FORWARDS). */
void home_forward(size_t page, int requester, uint32_t need);

/* A request or a diff (`what`) from `src` reached this node for a page it
 * is neither the home nor a former home nor the base node of: nothing
 * forwards it from here. Ends the job naming the invariant broken (with
 * DSM_CHECK=1 or not: it is never a bad message alone). */
__attribute__((noreturn)) void home_unreachable(int src, size_t page, const char *what);

/* Checks a page reply's head — unexpected (`expected` false), a page out
 * of range, a status beyond HOME_UNALLOCATED, a home out of range, or
 * `data` bytes that are not a page for HOME_DATA and none otherwise — and
 * returns the page's frame in the system view, ready to receive them.
 * `what` names the message for the error. */
void *home_place(int src, uint32_t page, uint32_t status, int32_t home, size_t data, bool expected,
                 const char *what);
#endif
