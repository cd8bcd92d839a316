/*
 * interval.c — intervals, vector timestamps and their encoding.
 *
 * Encoding: u32 count, then per interval { u16 node, u16 flags, u32 id,
 * u32 notices }, under DSM_CHECK its creator's vector time (flags
 * WIRE_INTERVAL_VT), and the notices (u32 page, u32 version). A node's
 * intervals appear in increasing id order; an interval whose predecessor
 * the receiver lacks is a protocol error. The nodes come in node order, not
 * causal order, so a message is causally closed only as a whole: the
 * receiver logs it under one hold of the lock that grants encode under
 * (interval_apply), and a grant never passes on part of it.
 *
 * Collection. A barrier leaves every node having seen every interval, and
 * the logs are dropped (interval_gc). A program that only uses locks never
 * gets there, and its logs would grow with every release, and every grant
 * would scan them. So each node also keeps, per node, the vector timestamp
 * it last heard that node report (`known`: a lower bound, timestamps only
 * grow); an interval of node x whose id is at most every node's known
 * entry for x has been seen everywhere: no grant, barrier or broadcast can
 * need it again, and it is dropped. Timestamps are exchanged when the logs
 * hold COLLECT_MIN intervals, or twice what the last collection left
 * (a node that lags, never acquiring, holds the others' logs back; the
 * doubling keeps the exchanges rare then): the node sends its own to every
 * other, asking for theirs (COH_VT), and collects as the answers come.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/check.h"
#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/msgcheck.h"
#include "mem/mem.h"

struct interval {
    uint32_t       id, count;
    struct notice *notices;
    uint32_t      *vt;         /* DSM_CHECK: its creator's vector time (nodes); else NULL */
    bool           unacked;    /* this node's, some versions NOTICE_PENDING (interval_create_unacked) */
};

struct ilog {                  /* one node's intervals since the last barrier */
    struct interval *v;
    size_t           n, cap;
};

/* Intervals the logs hold before this node first asks for timestamps. */
#define COLLECT_MIN 1024

static DSM_STATE struct {
    pthread_mutex_t lock;      /* the delivery thread encodes grants */
    uint32_t       *vt;
    uint32_t       *applied;   /* of vt, the intervals whose notices are applied too */
    struct ilog    *log;
    uint32_t       *known;     /* nodes x nodes: row j, what node j last said it has seen */
    uint32_t       *dropped;   /* per node: the last of its intervals the logs dropped */
    size_t          held;      /* intervals in the logs */
    size_t          collect_at;/* ask for timestamps when held reaches this */
    int             replies;   /* answers still due to our question; 0: none asked */
} iv = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* COH_VT: the sender's vector timestamp (nodes u32) follows. */
struct vt_msg { uint32_t answer, zero; }; /* answer: 1 asks for the receiver's */

/* Appends len bytes; with data NULL, only makes room for them. */
void buf_put(struct buf *b, const void *data, size_t len)
{
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            log_fatal("out of memory encoding a message");
        b->p = p;
        b->cap = cap;
    }
    if (data)
        memcpy(b->p + b->len, data, len);
    b->len += len;
}

void buf_free(struct buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void page_list_add(uint32_t **v, size_t *n, size_t *cap, size_t page)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        *v = realloc(*v, *cap * sizeof **v);
        if (!*v)
            log_fatal("out of memory for a list of pages");
    }
    (*v)[(*n)++] = (uint32_t)page;
}

static int by_page(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void page_list_sort(uint32_t *v, size_t n)
{
    if (n > 1) /* an empty list may be NULL, which qsort must not get */
        qsort(v, n, sizeof *v, by_page);
}

static void on_vt(int src, const void *msg, size_t len);

void interval_init(void)
{
    int nodes = job()->nodes;
    iv.vt = calloc((size_t)nodes, sizeof *iv.vt);
    iv.applied = calloc((size_t)nodes, sizeof *iv.applied);
    iv.log = calloc((size_t)nodes, sizeof *iv.log);
    iv.known = calloc((size_t)nodes * (size_t)nodes, sizeof *iv.known);
    iv.dropped = calloc((size_t)nodes, sizeof *iv.dropped);
    if (!iv.vt || !iv.applied || !iv.log || !iv.known || !iv.dropped)
        log_fatal("out of memory for vector timestamps");
    iv.collect_at = COLLECT_MIN;
    ipc_register(COH_VT, "VT", on_vt, NULL);
}

/* Drops every interval all nodes are known to have seen. Caller holds
 * iv.lock. */
static void collect(void)
{
    int nodes = job()->nodes, me = job()->rank;
    for (int x = 0; x < nodes; x++) {
        uint32_t seen = iv.vt[x];
        for (int j = 0; j < nodes; j++)
            if (j != me && iv.known[(size_t)j * (size_t)nodes + (size_t)x] < seen)
                seen = iv.known[(size_t)j * (size_t)nodes + (size_t)x];
        struct ilog *l = &iv.log[x];
        size_t k = 0;
        while (k < l->n && l->v[k].id <= seen) {
            free(l->v[k].notices);
            free(l->v[k++].vt);
        }
        if (!k)
            continue;
        iv.dropped[x] = l->v[k - 1].id;
        memmove(l->v, l->v + k, (l->n - k) * sizeof *l->v);
        l->n -= k;
        iv.held -= k;
        stats_add(STAT_INTERVALS_COLLECTED, k);
    }
    iv.collect_at = iv.held * 2 > COLLECT_MIN ? iv.held * 2 : COLLECT_MIN;
}

static void send_vt(int to, uint32_t answer, const uint32_t *vt)
{
    struct vt_msg h = {.answer = answer};
    struct iovec iov[2] = {{.iov_base = &h, .iov_len = sizeof h},
                           {.iov_base = (void *)vt, .iov_len = (size_t)job()->nodes * sizeof *vt}};
    ipc_sendv(to, COH_VT, 0, iov, 2);
}

/* After intervals were added: asks every other node for its timestamp
 * once the logs have grown past the threshold and no question is open. */
static void maybe_ask(void)
{
    uint32_t vt[VT_MAX_NODES];
    pthread_mutex_lock(&iv.lock);
    bool ask = job()->nodes > 1 && !iv.replies && iv.held >= iv.collect_at;
    if (ask) {
        iv.replies = job()->nodes - 1;
        memcpy(vt, iv.applied, (size_t)job()->nodes * sizeof *vt);
    }
    pthread_mutex_unlock(&iv.lock);
    if (!ask)
        return;
    stats_add(STAT_VT_EXCHANGES, 1);
    for (int j = 0; j < job()->nodes; j++)
        if (j != job()->rank)
            send_vt(j, 1, vt);
}

static void on_vt(int src, const void *msg, size_t len)
{
    struct vt_msg h;
    size_t rest;
    const void *tail = ipc_body(src, msg, len, &h, sizeof h, &rest, "vector timestamp");
    int nodes = job()->nodes;
    if (rest != (size_t)nodes * sizeof(uint32_t) || h.answer > 1 || h.zero)
        log_fatal("node %d sent a malformed vector timestamp", src);
    uint32_t vt[VT_MAX_NODES];
    memcpy(vt, tail, rest);
    pthread_mutex_lock(&iv.lock);
    uint32_t *row = iv.known + (size_t)src * (size_t)nodes;
    for (int x = 0; x < nodes; x++)
        if (vt[x] > row[x])
            row[x] = vt[x];
    if (!h.answer && iv.replies <= 0)
        log_fatal("node %d answered a question about timestamps that was not asked", src);
    if (!h.answer && --iv.replies == 0)
        collect();
    if (h.answer)
        memcpy(vt, iv.applied, (size_t)nodes * sizeof *vt);
    pthread_mutex_unlock(&iv.lock);
    if (h.answer)
        send_vt(src, 0, vt);
}

/* Logs node's interval id. vt: its creator's vector time, kept under
 * DSM_CHECK (NULL for this node's own: what it has now). Caller holds
 * iv.lock. */
static void store(int node, uint32_t id, const struct notice *n, uint32_t count,
                  const uint32_t *vt)
{
    struct ilog *l = &iv.log[node];
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v)
            log_fatal("out of memory for intervals");
    }
    struct interval *i = &l->v[l->n++];
    i->id = id;
    i->count = count;
    i->notices = malloc((count ? count : 1) * sizeof *n);
    if (!i->notices)
        log_fatal("out of memory for write notices");
    memcpy(i->notices, n, count * sizeof *n);
    i->unacked = false;
    iv.vt[node] = id;
    iv.held++;
    i->vt = NULL;
    if (check_on()) {
        size_t vt_len = (size_t)job()->nodes * sizeof *i->vt;
        if (!(i->vt = malloc(vt_len)))
            log_fatal("out of memory for vector timestamps");
        memcpy(i->vt, vt ? vt : iv.vt, vt_len);
    }
}

/* The first page an interval names, for a violation's message (-1: none). */
static long first_page(const struct notice *n, uint32_t count) { return count ? (long)n[0].page : -1; }

/* DSM_CHECK: a grant that carries an interval carries every interval its
 * creator had seen that the acquirer (who has seen their_vt, and every
 * interval the logs dropped) lacks: a message cut in two would leave the
 * acquirer's vector time claiming intervals it never got. The grant
 * carries each node's logged intervals after their_vt, which run without
 * a gap (store), so node x is covered up to iv.vt[x] if they start right
 * after what the acquirer has, else only up to that. Caller holds
 * iv.lock. */
static void check_closed(const uint32_t *their_vt, int to)
{
    int nodes = job()->nodes;
    uint32_t upto[VT_MAX_NODES];
    for (int x = 0; x < nodes; x++) {
        uint32_t has = their_vt[x] > iv.dropped[x] ? their_vt[x] : iv.dropped[x];
        const struct ilog *l = &iv.log[x];
        uint32_t first = 0;
        for (size_t k = 0; k < l->n && !first; k++)
            if (l->v[k].id > their_vt[x])
                first = l->v[k].id;
        upto[x] = first && first <= has + 1 ? iv.vt[x] : has;
    }
    for (int j = 0; j < nodes; j++)
        for (size_t k = 0; k < iv.log[j].n; k++) {
            const struct interval *i = &iv.log[j].v[k];
            if (i->id <= their_vt[j])
                continue;
            for (int x = 0; x < nodes; x++)
                if (i->vt[x] > upto[x])
                    check_violated("a grant carries a causally closed set of intervals",
                                   "page %ld: node %d's interval %u goes to node %d, which has seen "
                                   "node %d's intervals up to %u, without node %d's interval %u, "
                                   "which it had seen",
                                   first_page(i->notices, i->count), j, i->id, to, x, their_vt[x],
                                   x, upto[x] + 1);
        }
}

/* DSM_CHECK: an interval is taken in only with every interval its creator
 * had seen: its vector time is covered by ours, entry by entry (its own
 * entry, its id, is the next of its creator's, which interval_apply
 * checks as it stores). Caller holds iv.lock. */
static void check_causal(int from, int node, uint32_t id, const uint32_t *vt,
                         const struct notice *n, uint32_t count)
{
    for (int x = 0; x < job()->nodes; x++)
        if (vt[x] > iv.vt[x])
            check_violated("an interval is applied after every interval its creator had seen",
                           "page %ld: node %d's interval %u, from node %d, had seen node %d's "
                           "interval %u; this node has seen up to %u",
                           first_page(n, count), node, id, from, x, vt[x], iv.vt[x]);
}

/* Who hears of this node's intervals as they come out (sync/flush.c's
 * quiet flushes): set once. */
static DSM_STATE void (*_Atomic own_out)(void);

void interval_on_own(void (*fn)(void)) { atomic_store(&own_out, fn); }

static void own_interval_out(void)
{
    void (*fn)(void) = atomic_load(&own_out);
    if (fn)
        fn();
}

void interval_create(const struct notice *n, uint32_t count)
{
    pthread_mutex_lock(&iv.lock);
    store(job()->rank, iv.vt[job()->rank] + 1, n, count, NULL);
    iv.applied[job()->rank] = iv.vt[job()->rank];
    pthread_mutex_unlock(&iv.lock);
    stats_add(STAT_INTERVALS, 1);
    own_interval_out();
    maybe_ask();
}

void interval_create_unacked(const struct notice *n, uint32_t count)
{
    pthread_mutex_lock(&iv.lock);
    store(job()->rank, iv.vt[job()->rank] + 1, n, count, NULL);
    iv.applied[job()->rank] = iv.vt[job()->rank];
    struct ilog *l = &iv.log[job()->rank];
    l->v[l->n - 1].unacked = true;
    pthread_mutex_unlock(&iv.lock);
    stats_add(STAT_INTERVALS, 1);
}

void interval_acked(const struct notice *n, uint32_t count)
{
    pthread_mutex_lock(&iv.lock);
    struct ilog *l = &iv.log[job()->rank];
    struct interval *i = l->n ? &l->v[l->n - 1] : NULL;
    if (!i || !i->unacked || i->count != count)
        log_fatal("internal error: no interval awaits its versions (%u notices)", count);
    for (uint32_t k = 0; k < count; k++) {
        if (n[k].page != i->notices[k].page ||
            (i->notices[k].version != NOTICE_PENDING && n[k].version != i->notices[k].version) ||
            n[k].version == NOTICE_PENDING)
            log_fatal("internal error: page %u's notice changed while its version was awaited",
                      n[k].page);
        i->notices[k].version = n[k].version;
    }
    i->unacked = false;
    pthread_mutex_unlock(&iv.lock);
    own_interval_out();
    maybe_ask();
}

long interval_fill_pending(void *data, size_t len, int node,
                           bool (*version_of)(void *ctx, uint32_t page, uint32_t *version), void *ctx)
{
    unsigned char *p = data, *end = p + len;
    size_t vt_len = (size_t)job()->nodes * sizeof(uint32_t);
    uint32_t count;
    long filled = 0;
    memcpy(&count, p, sizeof count); /* well formed: the caller checked it (coh_notices_check) */
    p += sizeof count;
    for (uint32_t k = 0; k < count && p < end; k++) {
        struct wire_interval w;
        memcpy(&w, p, sizeof w);
        p += sizeof w;
        if (w.flags & WIRE_INTERVAL_VT)
            p += vt_len;
        for (uint32_t i = 0; i < w.count; i++, p += sizeof(struct notice)) {
            struct notice n;
            memcpy(&n, p, sizeof n);
            if (n.version != NOTICE_PENDING)
                continue;
            if (w.node != node || !version_of(ctx, n.page, &n.version))
                return -(long)n.page - 1;
            memcpy(p, &n, sizeof n);
            filled++;
        }
    }
    return filled;
}

uint32_t interval_next(void)
{
    pthread_mutex_lock(&iv.lock);
    uint32_t id = iv.vt[job()->rank] + 1;
    pthread_mutex_unlock(&iv.lock);
    return id;
}

void interval_heard(int node, const uint32_t *vt)
{
    int nodes = job()->nodes;
    pthread_mutex_lock(&iv.lock);
    uint32_t *row = iv.known + (size_t)node * (size_t)nodes;
    for (int x = 0; x < nodes; x++)
        if (vt[x] > row[x])
            row[x] = vt[x];
    pthread_mutex_unlock(&iv.lock);
}

bool interval_may_lack(int node, const uint32_t *ids)
{
    int nodes = job()->nodes;
    bool lacks = false;
    pthread_mutex_lock(&iv.lock);
    const uint32_t *row = iv.known + (size_t)node * (size_t)nodes;
    for (int x = 0; x < nodes && !lacks; x++)
        lacks = x != node && ids[x] > row[x] && ids[x] > iv.dropped[x];
    pthread_mutex_unlock(&iv.lock);
    return lacks;
}

/* The copies below are made under iv.lock, which a release aside takes
 * while it holds the fault lock (hlrc.c): a copy into shared memory (a
 * local of the master's shared stack, base/stack.h) that faults there
 * waits for that release, which waits for iv.lock — a deadlock seen once
 * in ~150 runs of an OpenMP taskwait on 2 nodes x 2 threads. */
static void check_private(const uint32_t *out, const char *fn)
{
    if (check_on() && mem_contains(out))
        check_violated("the intervals' lock is never held over shared memory",
                       "%s into %p, a shared address (call it off the shared stack: "
                       "stack_private)", fn, (const void *)out);
}

void interval_vt(uint32_t *out)
{
    check_private(out, "interval_vt");
    pthread_mutex_lock(&iv.lock);
    memcpy(out, iv.vt, (size_t)job()->nodes * sizeof *out);
    pthread_mutex_unlock(&iv.lock);
}

void interval_vt_applied(uint32_t *out)
{
    check_private(out, "interval_vt_applied");
    pthread_mutex_lock(&iv.lock);
    memcpy(out, iv.applied, (size_t)job()->nodes * sizeof *out);
    pthread_mutex_unlock(&iv.lock);
}

/* interval_encode, and this node's interval whose versions the homes'
 * acknowledgements have not yet brought where `unacked` (the barrier's
 * arrival). */
static void encode(struct buf *b, const uint32_t *their_vt, int only_node, int to, bool unacked)
{
    size_t vt_len = (size_t)job()->nodes * sizeof *iv.vt;
    pthread_mutex_lock(&iv.lock);
    if (check_on() && their_vt && only_node < 0)
        check_closed(their_vt, to);
    size_t count_at = b->len;
    uint32_t count = 0;
    buf_put(b, &count, sizeof count);
    for (int j = 0; j < job()->nodes; j++) {
        if (only_node >= 0 && j != only_node)
            continue;
        struct ilog *l = &iv.log[j];
        for (size_t k = 0; k < l->n; k++) {
            struct interval *i = &l->v[k];
            if (their_vt && i->id <= their_vt[j])
                continue;
            /* Not yet announced but by the barrier's arrival: a grant
             * meanwhile (a lock whose last release came before these
             * writes, or its manager's first grant) needs none of it, and
             * a flush's answer waits (coherence_after_releases). */
            if (i->unacked && !unacked)
                continue;
            struct wire_interval w = {.node = (uint16_t)j, .flags = i->vt ? WIRE_INTERVAL_VT : 0,
                                      .id = i->id, .count = i->count};
            buf_put(b, &w, sizeof w);
            if (i->vt)
                buf_put(b, i->vt, vt_len);
            buf_put(b, i->notices, i->count * sizeof *i->notices);
            count++;
        }
    }
    memcpy(b->p + count_at, &count, sizeof count);
    pthread_mutex_unlock(&iv.lock);
}

void interval_encode(struct buf *b, const uint32_t *their_vt, int only_node, int to)
{
    encode(b, their_vt, only_node, to, false);
}

void interval_encode_arrival(struct buf *b, const uint32_t *their_vt)
{
    encode(b, their_vt, job()->rank, -1, true);
}

/* One interval of a message being applied. */
struct taken {
    struct wire_interval w;
    const uint32_t      *vt;      /* its creator's (DSM_CHECK), else NULL */
    struct notice       *notices; /* copied out: they may sit unaligned in the message */
    bool                 fresh;   /* not seen here before: stored, to apply */
};

static void apply(int from, const void *data, size_t len);

/* With T > 1 a second thread's acquire may bring intervals a first one has
 * logged but not yet applied (its pages not yet invalidated): applying is
 * one step per node, so that the second cannot run on with a stale copy
 * (docs/design.md, SMP nodes). */
static DSM_STATE pthread_mutex_t apply_lock = PTHREAD_MUTEX_INITIALIZER;

void interval_apply(int from, const void *data, size_t len)
{
    if (!smp_multi()) {
        apply(from, data, len);
        return;
    }
    pthread_mutex_lock(&apply_lock);
    apply(from, data, len);
    pthread_mutex_unlock(&apply_lock);
}

static void apply(int from, const void *data, size_t len)
{
    const unsigned char *p = data;
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_notices_check(data, len, &lim, NULL);
    if (why)
        log_fatal("node %d sent malformed write notices: %s", from, why);
    /* Well formed from here on (msgcheck.c). */
    size_t vt_len = (size_t)job()->nodes * sizeof(uint32_t);
    uint32_t count;
    memcpy(&count, p, sizeof count);
    p += sizeof count;
    struct taken *t = malloc((count ? count : 1) * sizeof *t);
    uint32_t *vts = check_on() ? malloc((count ? count : 1) * vt_len) : NULL;
    if (!t || (check_on() && !vts))
        log_fatal("out of memory for write notices");
    for (uint32_t k = 0; k < count; k++) {
        struct taken *i = &t[k];
        memcpy(&i->w, p, sizeof i->w);
        p += sizeof i->w;
        i->vt = NULL;
        if (i->w.flags & WIRE_INTERVAL_VT) {
            if (vts) {
                memcpy(vts + (size_t)k * (vt_len / sizeof *vts), p, vt_len);
                i->vt = vts + (size_t)k * (vt_len / sizeof *vts);
            }
            p += vt_len;
        } else if (check_on())
            log_fatal("node %d passed an interval without its vector time: DSM_CHECK must be "
                      "the same on every node", from);
        i->notices = malloc((i->w.count ? i->w.count : 1) * sizeof *i->notices);
        if (!i->notices)
            log_fatal("out of memory for write notices");
        memcpy(i->notices, p, (size_t)i->w.count * sizeof *i->notices);
        p += (size_t)i->w.count * sizeof *i->notices;
        for (uint32_t n = 0; n < i->w.count; n++)
            if (i->notices[n].version == NOTICE_PENDING)
                log_fatal("node %d passed node %u's interval %u with page %u's version never filled in "
                          "(its home did not apply the diff before the barrier arrival); protocol error",
                          from, i->w.node, i->w.id, i->notices[n].page);
    }
    /* The whole message is logged under one hold of iv.lock: a message is
     * causally closed (every interval comes with those its creator had
     * seen, or we have them), but its intervals come in node order, not
     * causal order, and a grant the delivery thread (or the releaser)
     * encodes meanwhile must not see part of it: it would pass on an
     * interval without one it depends on, and the acquirer would take the
     * missing one, with its older diffs, only later. */
    pthread_mutex_lock(&iv.lock);
    for (uint32_t k = 0; k < count; k++) {
        struct taken *i = &t[k];
        uint32_t seen = iv.vt[i->w.node];
        i->fresh = i->w.id > seen;
        if (!i->fresh)
            continue;
        if (i->w.id != seen + 1)
            log_fatal("node %d passed interval %u of node %u, but interval %u is missing here; protocol error",
                      from, i->w.id, i->w.node, seen + 1);
        store(i->w.node, i->w.id, i->notices, i->w.count, i->vt);
    }
    for (uint32_t k = 0; vts && k < count; k++)
        if (t[k].fresh)
            check_causal(from, t[k].w.node, t[k].w.id, t[k].vt, t[k].notices, t[k].w.count);
    pthread_mutex_unlock(&iv.lock);
    for (uint32_t k = 0; k < count; k++) {
        struct taken *i = &t[k];
        int node = i->w.node;
        if (i->fresh) {
            stats_add(STAT_WRITE_NOTICES, i->w.count);
            if (node != job()->rank && !coh->apply_notices && i->w.count)
                log_fatal("node %d passed %u write notices; %s makes none (mixed protocols?)", node,
                          i->w.count, coherence_name());
            if (node != job()->rank && coh->apply_notices)
                coh->apply_notices(node, i->vt, i->notices, i->w.count);
        }
        free(i->notices);
    }
    pthread_mutex_lock(&iv.lock);
    for (uint32_t k = 0; k < count; k++)
        if (t[k].fresh && t[k].w.id > iv.applied[t[k].w.node])
            iv.applied[t[k].w.node] = t[k].w.id;
    pthread_mutex_unlock(&iv.lock);
    free(t);
    free(vts);
    if (coh->notices_applied)
        coh->notices_applied();
    maybe_ask();
}

void interval_gc(void)
{
    pthread_mutex_lock(&iv.lock);
    for (int j = 0; j < job()->nodes; j++) {
        struct ilog *l = &iv.log[j];
        for (size_t k = 0; k < l->n; k++) {
            free(l->v[k].notices);
            free(l->v[k].vt);
        }
        l->n = 0;
        iv.dropped[j] = iv.vt[j];
    }
    iv.held = 0;
    iv.collect_at = COLLECT_MIN;
    pthread_mutex_unlock(&iv.lock);
}
