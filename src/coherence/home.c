/*
 * home.c — finding a page's home and fetching the page from it (home.h).
 *
 * The base node decides a page's home at the
 * first request for it (mem_home_decide) and, for policies that decide
 * without a first touch (block, cyclic), tells in the same answer how many
 * of the following pages (at most HOME_RUN_MAX) have the same home: the
 * requester learns their homes with one reply, so that it can read them
 * ahead, and fetch them later, without asking the base. A request the base
 * forwards to the home carries HOME_FROM_BASE and that run in the bits
 * above HOME_RUN_SHIFT: the home learns them before it replies, since the
 * requester, told of the run, may ask it for any of those pages next.
 *
 * Each fetch a thread waits for is a record on its stack, on a list under
 * home.lock, matched by page: a node may have as many fetches in flight as
 * it has threads (a protocol that fetches without its node-wide lock held,
 * hlrc, lets no two of them be for one page). The delivering thread
 * records the home the reply names before it tells the record, so that a
 * request the base node forwards right behind a first-touch reply finds
 * this node already home.
 *
 * Homes that move (migrate.c) change a page's home only in a migration
 * window; a former home forwards requests and diffs that still reach it to
 * the node it gave the page to (home_forward, COH_DIFF_FWD), and the base
 * node, once told, names the new home.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/home.h"
#include "coherence/msgcheck.h"
#include "coherence/migrate.h"
#include "ipc/ipc.h"

enum { RUN_SHIFT = HOME_RUN_SHIFT };

/* A fetch a thread waits for (home_fetch), on its stack. */
struct fetch {
    struct fetch *next;
    uint32_t      page, version, status;
    bool          done, unseen;
};

static DSM_STATE struct {
    pthread_mutex_t        lock;     /* the fetches list */
    const struct home_ops *ops;
    struct fetch          *fetches;  /* in flight: at most one a page */
    int                    in_flight;
    struct home_diffs {           /* a release's diffs for one home, kept until sent */
        unsigned char *buf;
        size_t         len, cap;
        uint32_t       count, interval;
        bool           flagged;   /* an item is DIFFS_BEFORE_ARRIVAL */
    } *diffs;                     /* per node, while gathering (one gatherer: the fault lock) */
    int before_arrival;           /* the next gathered diff's DIFFS_BEFORE_ARRIVAL parent, or -1 */
    pthread_mutex_t filled_lock;
    struct filled {               /* at a barrier parent, per child: versions for its arrival */
        struct notice *v;
        size_t         n, cap;
    } *filled;
} home = {.lock = PTHREAD_MUTEX_INITIALIZER, .before_arrival = -1,
          .filled_lock = PTHREAD_MUTEX_INITIALIZER};

/* On the thread between home_diffs_begin and home_diffs_end. */
static __thread bool gathering;
/* On the thread applying a COH_DIFFS: its acknowledgements, for one message. */
static __thread struct {
    int              to;
    struct diff_ack *acks;
    size_t           n, cap;
} acks_gathered;

/* ---- the requester (program thread) ------------------------------------ */

int home_lookup(size_t page)
{
    int h = mem_home(page);
    if (h < 0 && mem_base_node(page) == job()->rank) {
        h = mem_home_decide(page, job()->rank);
        if (h < 0)
            mem_crash_unallocated(mem_app(page));
    }
    return h;
}

size_t home_vt_out(uint32_t *vt, uint32_t *aux)
{
    *aux = 0;
    if (!coherence_catching_up())
        return 0;
    interval_vt_applied(vt);
    *aux = 1;
    return (size_t)job()->nodes * sizeof *vt;
}

bool home_vt_in(int src, uint32_t aux, const void *tail, size_t rest)
{
    if (aux > 1 || rest != (aux ? (size_t)job()->nodes * sizeof(uint32_t) : 0))
        return false;
    if (aux) {
        uint32_t vt[VT_MAX_NODES];
        memcpy(vt, tail, rest);
        interval_heard(src, vt);
    }
    return true;
}

/* To the home, or to the base node where the home is not known. The base
 * node itself, knowing the home, tells it so (without the vector time: a
 * home then judges by what it knew, at worst a needless catch-up). */
static void send_request(size_t page, int h, uint32_t need)
{
    int base = mem_base_node(page);
    struct page_req r = {.page = (uint32_t)page, .need = need, .requester = job()->rank,
                         .flags = base == job()->rank ? HOME_FROM_BASE : 0};
    uint32_t vt[VT_MAX_NODES], aux;
    size_t vt_len = home_vt_out(vt, &aux);
    struct iovec iov[2] = {{.iov_base = &r, .iov_len = sizeof r}, {.iov_base = vt, .iov_len = vt_len}};
    ipc_sendv(h >= 0 ? h : base, COH_PAGE_REQ, aux, iov, 2);
}

void home_request(size_t page, int h, uint32_t need) { send_request(page, h, need); }

/* The fetch in flight for the page, or NULL. Caller holds home.lock. */
static struct fetch *fetch_of(uint32_t page)
{
    for (struct fetch *f = home.fetches; f; f = f->next)
        if (f->page == page)
            return f;
    return NULL;
}

enum home_status home_fetch(size_t page, int h, uint32_t need, uint32_t *version, bool *unseen,
                            void (*also)(size_t page, int home))
{
    struct fetch f = {.page = (uint32_t)page};
    pthread_mutex_lock(&home.lock);
    if (fetch_of(f.page))
        log_fatal("internal error: two fetches of page %zu at once", page);
    f.next = home.fetches;
    home.fetches = &f;
    int in_flight = ++home.in_flight;
    pthread_mutex_unlock(&home.lock);
    stats_max(STAT_FETCHES_IN_FLIGHT_MAX, (uint64_t)in_flight);
    if (also) {
        ipc_batch_begin(); /* the request and what goes with it: one wake-up at the home */
        send_request(page, h, need);
        if (h >= 0)
            also(page, h);
        ipc_batch_end();
    } else {
        send_request(page, h, need);
    }
    coherence_wait_flag(&home.lock, &f.done);
    pthread_mutex_lock(&home.lock);
    struct fetch **at = &home.fetches;
    while (*at != &f)
        at = &(*at)->next;
    *at = f.next;
    home.in_flight--;
    pthread_mutex_unlock(&home.lock);
    enum home_status status = f.status;
    *version = f.version;
    if (unseen)
        *unseen = f.unseen;
    if (status == HOME_UNALLOCATED)
        mem_crash_unallocated(mem_app(page));
    if (status == HOME_DATA) {
        stats_add(STAT_PAGES_FETCHED, 1);
        PROFILE_PAGE(PROF_FETCH, PROF_FETCH_FAULT, page, 0);
    }
    return status;
}

/* ---- the base node and the home (delivering thread) -------------------- */

void home_unreachable(int src, size_t page, const char *what)
{
    check_violated("home: a request reaches the page's home or a node that forwards it",
                   "node %d sent %s for page %zu to node %d, which is neither its home (node %d here), "
                   "a former home nor its base (node %d)",
                   src, what, page, job()->rank, mem_home(page), mem_base_node(page));
}

int home_route(size_t page, int src, int requester, bool from_base, size_t *run)
{
    int me = job()->rank, h = mem_home(page);
    if (from_base) {
        if (mem_base_node(page) != src)
            log_fatal("node %d named node %d home of page %zu without being its base", src, me, page);
        if (h < 0)
            mem_set_home(page, h = me);
        else if (h != me)
            log_fatal("node %d named node %d home of page %zu, whose home is node %d; protocol error",
                      src, me, page, h);
        for (size_t q = page + 1; run && q <= page + *run && q < mem.npages; q++)
            if (mem_home(q) < 0)
                mem_set_home(q, me);
    } else if (h < 0) {
        if (mem_base_node(page) != me)
            home_unreachable(src, page, "a request");
        h = mem_home_decide(page, requester);
    }
    if (run)
        *run = h >= 0 && mem_base_node(page) == me ? mem_home_run(page, h, HOME_RUN_MAX) : *run;
    return h;
}

static void reply(int to, size_t page, enum home_status status, uint32_t version, int h, size_t run,
                  const void *data, bool unseen)
{
    struct page_rep r = {.page = (uint32_t)page, .version = version, .home = h, .status = status,
                         .run = (uint32_t)run};
    struct iovec iov[2] = {{.iov_base = &r, .iov_len = sizeof r},
                           {.iov_base = (void *)data, .iov_len = status == HOME_DATA ? mem.page_size : 0}};
    ipc_sendv(to, COH_PAGE_REP, unseen, iov, 2);
}

void home_send_page(int to, size_t page, uint32_t version, size_t run, const void *data, bool unseen)
{
    reply(to, page, HOME_DATA, version, job()->rank, run, data, unseen);
}

void home_forward(size_t page, int requester, uint32_t need)
{
    int next = migrate_successor(page);
    if (next < 0)
        home_unreachable(requester, page, "a request");
    if (migrate_hold_request(page, requester, need))
        return;
    if (next == requester) {
        reply(requester, page, HOME_YOU_ARE_HOME, 0, next, 0, NULL, false);
    } else {
        struct page_req r = {.page = (uint32_t)page, .need = need, .requester = requester};
        ipc_send(next, COH_PAGE_REQ, 0, &r, sizeof r);
    }
    stats_add(STAT_MIGRATE_FORWARDS, 1);
}

static void on_page_req(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct page_req r;
    size_t rest;
    const void *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "page request");
    size_t run = r.flags >> RUN_SHIFT;
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_page_req_check(&r, &lim);
    if (!why && !home_vt_in(src, ipc_msg_aux(msg), tail, rest))
        why = "a vector time of the wrong size";
    if (why)
        log_fatal("node %d sent a malformed page request: %s", src, why);
    int me = job()->rank;
    if (mem_home(r.page) != me && migrate_successor(r.page) >= 0) {
        home_forward(r.page, r.requester, r.need); /* a former home */
        stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
        return;
    }
    int h = home_route(r.page, src, r.requester, r.flags & HOME_FROM_BASE, &run);
    if (h < 0)
        reply(r.requester, r.page, HOME_UNALLOCATED, 0, -1, 0, NULL, false);
    else if (h == r.requester)
        reply(r.requester, r.page, HOME_YOU_ARE_HOME, 0, h, run, NULL, false);
    else if (h != me) {
        if (mem_base_node(r.page) != me)
            home_unreachable(src, r.page, "a request");
        r.flags = HOME_FROM_BASE | (uint32_t)run << RUN_SHIFT; /* to the home, from the base */
        ipc_send(h, COH_PAGE_REQ, 0, &r, sizeof r);
    } else {
        migrate_note_fault(r.page, r.requester);
        home.ops->serve(r.requester, r.page, r.need, run);
    }
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

/* ---- the requester's delivering thread --------------------------------- */

void *home_place(int src, uint32_t page, uint32_t status, int32_t h, size_t data, bool expected,
                 const char *what)
{
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_page_head_check(page, status, h, data, &lim);
    if (why)
        log_fatal("node %d sent a malformed %s: %s", src, what, why);
    if (!expected)
        log_fatal("node %d sent a %s nobody asked for", src, what);
    /* Into the system view: the page is invalid here, or refreshed in
     * place where the program cannot write it (hlrc's pulls). */
    return mem_sys_fill(page, data ? 1 : 0);
}

static void *place_page_rep(int src, const void *head, size_t head_len, size_t msg_len, size_t *skip)
{
    struct page_rep r;
    coherence_place_head(src, head, head_len, &r, sizeof r, skip, "page reply");
    pthread_mutex_lock(&home.lock);
    struct fetch *f = fetch_of(r.page);
    bool expected = f && !f->done;
    pthread_mutex_unlock(&home.lock);
    /* A pull that a former home answers with "you are home" (the page
     * came here while it was on its way) is expected too. */
    if (!expected && home.ops->expects && r.page < mem.npages && r.status != HOME_UNALLOCATED)
        expected = home.ops->expects(r.page);
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_page_rep_check(&r, src, msg_len - *skip, &lim);
    if (why)
        log_fatal("node %d sent a malformed page reply: %s", src, why);
    return home_place(src, r.page, r.status, r.home, msg_len - *skip, expected, "page reply");
}

static void on_page_rep(int src, const void *msg, size_t len)
{
    struct page_rep r;
    size_t data;
    ipc_body(src, msg, len, &r, sizeof r, &data, "page reply");
    /* The home is recorded here, not by the waiting program: a request
     * the base node forwards to us right behind a first-touch reply must
     * find us already home. A home keeps its own knowledge (as for
     * HOME_MOVED): a pull its former home served while giving the page
     * here may arrive after the page itself, naming the former home. */
    if (r.status != HOME_UNALLOCATED && mem_home(r.page) != job()->rank)
        mem_set_home(r.page, r.home);
    for (size_t q = r.page + 1; q <= r.page + (size_t)r.run; q++)
        if (mem_home(q) < 0)
            mem_set_home(q, r.home);
    bool unseen = ipc_msg_aux(msg) != 0;
    if (!(home.ops->landed && home.ops->landed(r.page, r.status, r.version, unseen))) {
        pthread_mutex_lock(&home.lock);
        struct fetch *f = fetch_of(r.page);
        if (!f || f->done)
            log_fatal("node %d sent a page reply for page %u, which no fetch waits for", src, r.page);
        f->version = r.version;
        f->unseen = unseen;
        f->status = r.status;
        f->done = true;
        pthread_mutex_unlock(&home.lock);
    }
    ipc_notify();
}

/* ---- diffs, to the home ------------------------------------------------ */

/* The diffs kept for `to` leave: one alone as COH_DIFF (the same bytes as
 * before gathering), several as one COH_DIFFS. */
static void send_gathered(int to)
{
    struct home_diffs *g = &home.diffs[to];
    if (!g->count)
        return;
    uint64_t t0 = clock_ns();
    if (g->count == 1 && !g->flagged) {
        struct diffs_item it;
        memcpy(&it, g->buf, sizeof it);
        struct diff_hdr d = {.page = it.page, .idx = it.idx};
        struct iovec iov[2] = {{.iov_base = &d, .iov_len = sizeof d},
                               {.iov_base = g->buf + sizeof it, .iov_len = it.len}};
        ipc_sendv(to, COH_DIFF, g->interval, iov, 2);
    } else {
        ipc_send(to, COH_DIFFS, g->interval, g->buf, g->len);
    }
    g->len = 0;
    g->count = 0;
    g->flagged = false;
    stats_add(STAT_T_DIFF_SEND_NS, clock_ns() - t0);
}

/* Keeps a diff for its home's message; sends what is kept first when the
 * diff would take it past a datagram (or belongs to another interval). */
static void gather_diff(int to, size_t page, uint32_t idx, const void *diff, size_t len,
                        uint32_t interval)
{
    struct home_diffs *g = &home.diffs[to];
    struct diffs_item it = {.page = (uint32_t)page, .idx = idx, .len = (uint32_t)len,
                            .flags = to == home.before_arrival ? DIFFS_BEFORE_ARRIVAL : 0};
    home.before_arrival = -1;
    size_t room = ipc_message_room();
    if (g->count && (g->interval != interval || g->len + sizeof it + len > room))
        send_gathered(to);
    if (g->cap - g->len < sizeof it + len) {
        size_t cap = g->cap ? g->cap : 16384;
        while (cap - g->len < sizeof it + len)
            cap *= 2;
        unsigned char *b = realloc(g->buf, cap);
        if (!b)
            log_fatal("out of memory for a release's diffs (%zu bytes)", cap);
        g->buf = b;
        g->cap = cap;
    }
    memcpy(g->buf + g->len, &it, sizeof it);
    memcpy(g->buf + g->len + sizeof it, diff, len);
    g->len += sizeof it + len;
    g->count++;
    g->flagged |= it.flags != 0;
    g->interval = interval;
}

void home_diffs_begin(void)
{
    if (!home.diffs) {
        home.diffs = calloc((size_t)job()->nodes, sizeof *home.diffs);
        if (!home.diffs)
            log_fatal("out of memory for a release's diffs");
    }
    gathering = true;
}

void home_diff_before_arrival(int parent) { home.before_arrival = parent; }

/* At the parent: remembers the version `child`'s diff of the page got,
 * for its arrival. */
static void remember_for_arrival(int child, uint32_t page, uint32_t version)
{
    pthread_mutex_lock(&home.filled_lock);
    if (!home.filled && !(home.filled = calloc((size_t)job()->nodes, sizeof *home.filled)))
        log_fatal("out of memory for a barrier's versions");
    struct filled *f = &home.filled[child];
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 64;
        if (!(f->v = realloc(f->v, f->cap * sizeof *f->v)))
            log_fatal("out of memory for a barrier's versions");
    }
    f->v[f->n++] = (struct notice){page, version};
    pthread_mutex_unlock(&home.filled_lock);
}

/* The version of the page in f, the last one given (a page's diffs of
 * one release are one, but a kept release may come first). */
static bool filled_version(void *ctx, uint32_t page, uint32_t *version)
{
    const struct filled *f = ctx;
    for (size_t k = f->n; k-- > 0;)
        if (f->v[k].page == page) {
            *version = f->v[k].version;
            return true;
        }
    return false;
}

void home_fill_arrival(int child, void *intervals, size_t len)
{
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_notices_check(intervals, len, &lim, NULL);
    if (why)
        log_fatal("node %d arrived at a barrier with malformed write notices: %s", child, why);
    pthread_mutex_lock(&home.filled_lock);
    struct filled none = {0}, *f = home.filled ? &home.filled[child] : &none;
    long got = interval_fill_pending(intervals, len, child, filled_version, f);
    size_t had = f->n;
    f->n = 0;
    pthread_mutex_unlock(&home.filled_lock);
    if (got < 0)
        log_fatal("node %d arrived at a barrier naming its diff of page %ld, which this node (its "
                  "parent) did not apply as that page's home; protocol error",
                  child, -got - 1);
    if ((size_t)got > had)
        log_fatal("internal error: node %d's arrival names %ld pending versions, %zu remembered", child,
                  got, had);
}

void home_diffs_end(void)
{
    gathering = false;
    for (int to = 0; to < job()->nodes; to++)
        send_gathered(to);
}

void home_send_diff(size_t page, uint32_t idx, const void *diff, size_t len, uint32_t interval)
{
    if (gathering) {
        gather_diff(mem_home(page), page, idx, diff, len, interval);
        return;
    }
    uint64_t t0 = clock_ns();
    struct diff_hdr d = {.page = (uint32_t)page, .idx = idx};
    struct iovec iov[2] = {{.iov_base = &d, .iov_len = sizeof d},
                           {.iov_base = (void *)diff, .iov_len = len}};
    ipc_sendv(mem_home(page), COH_DIFF, interval, iov, 2);
    stats_add(STAT_T_DIFF_SEND_NS, clock_ns() - t0);
}

void home_ack_diff(int to, uint32_t page, uint32_t idx, uint32_t version)
{
    struct diff_ack a = {.page = page, .idx = idx, .version = version};
    if (acks_gathered.acks && to == acks_gathered.to && acks_gathered.n < acks_gathered.cap) {
        acks_gathered.acks[acks_gathered.n++] = a;
        return;
    }
    ipc_send(to, COH_DIFF_ACK, 0, &a, sizeof a);
}

/* A diff from `writer` of a page whose home this node is, or was (then
 * forwarded: the home acknowledges the writer itself). */
struct diff_fwd { uint32_t page, idx; int32_t writer; uint32_t zero; }; /* COH_DIFF_FWD */

static void home_diff(int writer, size_t page, uint32_t idx, const void *diff, size_t len,
                      uint32_t interval)
{
    uint64_t t0 = clock_ns();
    if (mem_home(page) != job()->rank) {
        int next = migrate_successor(page);
        if (next < 0)
            home_unreachable(writer, page, "a diff");
        struct diff_fwd f = {.page = (uint32_t)page, .idx = idx, .writer = writer};
        struct iovec iov[2] = {{.iov_base = &f, .iov_len = sizeof f},
                               {.iov_base = (void *)diff, .iov_len = len}};
        ipc_sendv(next, COH_DIFF_FWD, interval, iov, 2);
        stats_add(STAT_MIGRATE_FORWARDS, 1);
        return;
    }
    home.ops->diff(writer, page, idx, diff, len, interval);
    migrate_note_write(page, writer, len);
    stats_add(STAT_DIFFS_APPLIED, 1);
    stats_add(STAT_T_DIFF_APPLY_NS, clock_ns() - t0);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_diff(int src, const void *msg, size_t len)
{
    struct diff_hdr d;
    size_t dlen;
    const char *diff = ipc_body(src, msg, len, &d, sizeof d, &dlen, "diff");
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_diff_check(&d, diff, dlen, &lim);
    if (why)
        log_fatal("node %d sent a malformed diff: %s", src, why);
    home_diff(src, d.page, d.idx, diff, dlen, ipc_msg_aux(msg));
}

/* A release's diffs from one writer: all checked before any is applied,
 * applied in order, and acknowledged together — those the protocol
 * acknowledges while applying them (hlrc); erc's, acknowledged once its
 * copies have them, and those passed on to a page's next home, go on
 * their own. */
static void on_diffs(int src, const void *msg, size_t len)
{
    size_t blen;
    char none;
    const unsigned char *body = ipc_body(src, msg, len, &none, 0, &blen, "diffs");
    struct coh_limits lim;
    coherence_limits(&lim);
    uint32_t count;
    const char *why = coh_diffs_check(body, blen, &lim, &count);
    if (why)
        log_fatal("node %d sent malformed diffs: %s", src, why);
    struct diff_ack *acks = malloc(count * sizeof *acks);
    if (!acks)
        log_fatal("out of memory acknowledging %u diffs", count);
    acks_gathered.to = src;
    acks_gathered.acks = acks;
    acks_gathered.n = 0;
    acks_gathered.cap = count;
    uint32_t interval = ipc_msg_aux(msg);
    for (const unsigned char *q = body, *end = body + blen; q < end;) {
        struct diffs_item it;
        memcpy(&it, q, sizeof it);
        q += sizeof it;
        size_t before = acks_gathered.n;
        home_diff(src, it.page, it.idx, q, it.len, interval);
        q += it.len;
        /* Applied here and acknowledged at once (hlrc): its version goes
         * into the writer's arrival. Otherwise (passed on to a page's new
         * home) nothing is remembered, and the arrival ends the job. */
        if ((it.flags & DIFFS_BEFORE_ARRIVAL) && acks_gathered.n == before + 1 &&
            acks_gathered.acks[before].page == it.page)
            remember_for_arrival(src, it.page, acks_gathered.acks[before].version);
    }
    size_t n = acks_gathered.n;
    acks_gathered.acks = NULL;
    if (n == 1)
        ipc_send(src, COH_DIFF_ACK, 0, acks, sizeof *acks);
    else if (n)
        ipc_send(src, COH_DIFF_ACKS, 0, acks, n * sizeof *acks);
    free(acks);
}

static void on_diff_fwd(int src, const void *msg, size_t len)
{
    struct diff_fwd f;
    size_t dlen;
    const char *diff = ipc_body(src, msg, len, &f, sizeof f, &dlen, "forwarded diff");
    if (f.page >= mem.npages || f.zero || f.writer < 0 || f.writer >= job()->nodes ||
        f.writer == job()->rank)
        log_fatal("node %d forwarded a malformed diff", src);
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_diff_check(&(struct diff_hdr){.page = f.page, .idx = f.idx}, diff, dlen, &lim);
    if (why)
        log_fatal("node %d forwarded a malformed diff: %s", src, why);
    home_diff(f.writer, f.page, f.idx, diff, dlen, ipc_msg_aux(msg));
}

/* An acknowledgement, checked (the page in range, `zero` zero). */
static void take_ack(int src, const struct diff_ack *a)
{
    /* Homes that move: the page's home acknowledges, though a former home
     * may have been sent the diff; the next one goes straight there. */
    if (migrate_counts_writes() && mem_home(a->page) != src && mem_home(a->page) != job()->rank)
        mem_set_home(a->page, src);
    home.ops->diff_acked(src, a);
}

static void on_diff_ack(int src, const void *msg, size_t len)
{
    struct diff_ack a;
    ipc_body(src, msg, len, &a, sizeof a, NULL, "diff acknowledgement");
    if (a.page >= mem.npages || a.zero)
        log_fatal("node %d acknowledged a diff that was not sent", src);
    take_ack(src, &a);
    ipc_notify();
}

static void on_diff_acks(int src, const void *msg, size_t len)
{
    size_t blen;
    char none;
    const unsigned char *body = ipc_body(src, msg, len, &none, 0, &blen, "diff acknowledgements");
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_diff_acks_check(body, blen, &lim);
    if (why)
        log_fatal("node %d sent malformed diff acknowledgements: %s", src, why);
    for (size_t off = 0; off < blen; off += sizeof(struct diff_ack)) {
        struct diff_ack a;
        memcpy(&a, body + off, sizeof a);
        take_ack(src, &a);
    }
    ipc_notify();
}

void home_start(const struct home_ops *ops)
{
    home.ops = ops;
    ipc_register(COH_PAGE_REQ, "PAGE_REQ", on_page_req, NULL);
    ipc_register(COH_PAGE_REP, "PAGE_REP", on_page_rep, place_page_rep);
    ipc_register(COH_DIFF, "DIFF", on_diff, NULL);
    ipc_register(COH_DIFF_ACK, "DIFF_ACK", on_diff_ack, NULL);
    ipc_register(COH_DIFF_FWD, "DIFF_FWD", on_diff_fwd, NULL);
    ipc_register(COH_DIFFS, "DIFFS", on_diffs, NULL);
    ipc_register(COH_DIFF_ACKS, "DIFF_ACKS", on_diff_acks, NULL);
    if (ops->atomic)
        home_atomic_start(ops);
    migrate_start(ops);
}
