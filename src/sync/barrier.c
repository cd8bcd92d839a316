/*
 * barrier.c — the barrier, and dsm_bcast.
 *
 * Barrier: every node releases (its writes made visible, an interval
 * recorded), then sends node 0 its arrival with its own intervals since the
 * last barrier; node 0, once all have arrived, sends everyone every interval
 * of the epoch. Each node applies those it has not seen — after which every
 * node has seen every interval, and the logs are dropped. Frees of other
 * nodes' blocks (dsm_free) travel to their owners just before the arrival.
 *
 * A node can run at most one epoch ahead of node 0 (it cannot leave epoch e
 * before node 0 released it), so node 0 keeps arrivals for two epochs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stack.h"
#include "base/stats.h"
#include "base/trace.h"
#include "sync/sync.h"

struct arrival {
    unsigned char *data;  /* the node's encoded intervals */
    size_t         len;
};

struct bcast_msg {
    struct bcast_msg *next;
    uint64_t          seq;
    unsigned char    *data;   /* data bytes, then the root's intervals */
    size_t            len, data_len;
    int               root;
};

static DSM_STATE struct {
    pthread_mutex_t   lock;
    uint64_t          epoch;           /* barriers this node has entered */
    uint32_t         *vt_at_barrier;   /* our vector timestamp after the last barrier */
    struct arrival   *arrived[2];      /* at node 0: per epoch parity, per node */
    int               narrived[2];
    unsigned char    *release;         /* at others: the release's intervals */
    size_t            release_len;
    uint64_t          released;        /* the last epoch released here */
    uint64_t          bcast_seq;
    struct bcast_msg *bcasts;
} barrier = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void on_arrive(int src, const void *msg, size_t len)
{
    uint64_t epoch = ipc_msg_aux(msg);
    pthread_mutex_lock(&barrier.lock);
    if (job()->rank != 0 || (epoch != barrier.epoch && epoch != barrier.epoch + 1) || barrier.arrived[epoch & 1][src].data)
        log_fatal("node %d arrived at barrier %llu out of turn; protocol error", src,
                  (unsigned long long)epoch);
    struct arrival *a = &barrier.arrived[epoch & 1][src];
    a->data = ipc_copy_payload(msg, len, 0, &a->len);
    barrier.narrived[epoch & 1]++;
    pthread_mutex_unlock(&barrier.lock);
    ipc_notify();
}

static void on_release(int src, const void *msg, size_t len)
{
    uint64_t epoch = ipc_msg_aux(msg);
    pthread_mutex_lock(&barrier.lock);
    if (src != 0 || epoch != barrier.epoch || barrier.release)
        log_fatal("node %d released barrier %llu out of turn; protocol error", src,
                  (unsigned long long)epoch);
    barrier.release = ipc_copy_payload(msg, len, 0, &barrier.release_len);
    barrier.released = epoch;
    pthread_mutex_unlock(&barrier.lock);
    ipc_notify();
}

static bool all_arrived(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&barrier.lock);
    bool ok = barrier.narrived[barrier.epoch & 1] == job()->nodes;
    pthread_mutex_unlock(&barrier.lock);
    return ok;
}

static bool released(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&barrier.lock);
    bool ok = barrier.released == barrier.epoch && barrier.release;
    pthread_mutex_unlock(&barrier.lock);
    return ok;
}

static void send_remote_frees(void)
{
    uint64_t offsets[512];
    for (int owner = 0; owner < job()->nodes; owner++) {
        if (owner == job()->rank)
            continue;
        size_t n;
        while ((n = mem_take_remote_frees(owner, offsets, 512)) > 0)
            ipc_send(owner, SYNC_FREE, 0, offsets, n * sizeof *offsets);
    }
}

static void on_free(int src, const void *msg, size_t len)
{
    size_t n = (len - sizeof(struct ipc_hdr)) / sizeof(uint64_t);
    if ((len - sizeof(struct ipc_hdr)) % sizeof(uint64_t))
        log_fatal("node %d sent a malformed free list", src);
    for (size_t i = 0; i < n; i++) {
        uint64_t off;
        memcpy(&off, (const char *)msg + sizeof(struct ipc_hdr) + i * sizeof off, sizeof off);
        mem_free_remote_block(off);
    }
}

/* Merges the nodes' encodings ([count][intervals...] each) into one. */
static void merge_arrivals(struct buf *out, struct arrival *a)
{
    uint32_t total = 0;
    for (int i = 0; i < job()->nodes; i++) {
        uint32_t c;
        if (a[i].len < sizeof c)
            log_fatal("node %d sent a malformed barrier arrival", i);
        memcpy(&c, a[i].data, sizeof c);
        total += c;
    }
    buf_put(out, &total, sizeof total);
    for (int i = 0; i < job()->nodes; i++)
        buf_put(out, a[i].data + sizeof(uint32_t), a[i].len - sizeof(uint32_t));
}

/* One round: release, exchange the epoch's intervals through node 0,
 * apply them. */
static void barrier_round(void)
{
    uint64_t t0 = TRACE_ON ? clock_ns() : 0;
    coherence_release();
    uint64_t t_released = TRACE_ON ? clock_ns() : 0;
    send_remote_frees();

    struct buf mine = {0};
    interval_encode(&mine, barrier.vt_at_barrier, job()->rank);
    pthread_mutex_lock(&barrier.lock);
    uint64_t epoch = ++barrier.epoch;
    pthread_mutex_unlock(&barrier.lock);

    unsigned char *intervals;
    size_t len;
    if (job()->rank == 0) {
        pthread_mutex_lock(&barrier.lock);
        barrier.arrived[epoch & 1][0] = (struct arrival){mine.p, mine.len};
        barrier.narrived[epoch & 1]++;
        pthread_mutex_unlock(&barrier.lock);
        mine = (struct buf){0};
        if (!all_arrived(NULL))
            coherence_release_sent(); /* while the others are on their way */
        ipc_wait(all_arrived, NULL, 0);
        struct buf all = {0};
        pthread_mutex_lock(&barrier.lock);
        merge_arrivals(&all, barrier.arrived[epoch & 1]);
        for (int i = 0; i < job()->nodes; i++) {
            free(barrier.arrived[epoch & 1][i].data);
            barrier.arrived[epoch & 1][i] = (struct arrival){0};
        }
        barrier.narrived[epoch & 1] = 0;
        pthread_mutex_unlock(&barrier.lock);
        ipc_batch_begin();
        for (int i = 1; i < job()->nodes; i++)
            ipc_send(i, SYNC_BARRIER_RELEASE, (uint32_t)epoch, all.p, all.len);
        ipc_batch_end();
        coherence_release_sent();
        intervals = all.p;
        len = all.len;
    } else {
        ipc_send(0, SYNC_BARRIER_ARRIVE, (uint32_t)epoch, mine.p, mine.len);
        buf_free(&mine);
        coherence_release_sent();
        ipc_wait(released, NULL, 0);
        pthread_mutex_lock(&barrier.lock);
        intervals = barrier.release;
        len = barrier.release_len;
        barrier.release = NULL;
        pthread_mutex_unlock(&barrier.lock);
    }
    interval_apply(0, intervals, len);
    free(intervals);
    interval_gc();
    interval_vt(barrier.vt_at_barrier);
    stats_add(STAT_BARRIERS, 1);
    if (TRACE_ON)
        trace_put(TRACE_BARRIER, 0, 0, epoch, t0, t_released, clock_ns());
}

/* The protocol may ask for further rounds (lrc's collection: its keepers
 * bring their copies up to date in one, and the diffs are dropped after
 * the next); each counts as a barrier. */
static void barrier_here(void)
{
    uint64_t t0 = clock_ns();
    do
        barrier_round();
    while (coh->barrier_done && coh->barrier_done());
    stats_add(STAT_T_BARRIER_NS, clock_ns() - t0);
}

/* ---- broadcast -------------------------------------------------------- */

struct bcast_hdr { uint64_t seq, data_len; };

static void on_bcast(int src, const void *msg, size_t len)
{
    struct bcast_hdr h;
    size_t rest;
    ipc_body(src, msg, len, &h, sizeof h, &rest, "broadcast");
    struct bcast_msg *m = calloc(1, sizeof *m);
    if (!m)
        log_fatal("out of memory receiving a broadcast");
    m->data = ipc_copy_payload(msg, len, sizeof h, &m->len);
    if (h.data_len > m->len)
        log_fatal("node %d sent a malformed broadcast", src);
    m->seq = h.seq;
    m->data_len = h.data_len;
    m->root = src;
    pthread_mutex_lock(&barrier.lock);
    struct bcast_msg **pp = &barrier.bcasts;
    while (*pp)
        pp = &(*pp)->next;
    *pp = m;
    pthread_mutex_unlock(&barrier.lock);
    ipc_notify();
}

struct bcast_wait { uint64_t seq; };

static bool bcast_arrived(void *arg)
{
    struct bcast_wait *w = arg;
    pthread_mutex_lock(&barrier.lock);
    bool ok = false;
    for (struct bcast_msg *m = barrier.bcasts; m; m = m->next)
        ok |= m->seq == w->seq;
    pthread_mutex_unlock(&barrier.lock);
    return ok;
}

static void bcast_here(void *buf, size_t len, int root)
{
    if (root < 0 || root >= job()->nodes || (len && !buf))
        log_fatal("dsm_bcast: bad arguments (root %d, %zu bytes)", root, len);
    uint64_t seq = ++barrier.bcast_seq;
    if (job()->rank == root) {
        coherence_release(); /* the root's writes so far are visible to the receivers */
        struct buf b = {0};
        struct bcast_hdr h = {.seq = seq, .data_len = len};
        buf_put(&b, &h, sizeof h);
        buf_put(&b, buf, len);
        interval_encode(&b, NULL, -1);
        for (int i = 0; i < job()->nodes; i++)
            if (i != root)
                ipc_send(i, SYNC_BCAST, 0, b.p, b.len);
        buf_free(&b);
        coherence_release_sent();
        return;
    }
    struct bcast_wait w = {.seq = seq};
    ipc_wait(bcast_arrived, &w, 0);
    pthread_mutex_lock(&barrier.lock);
    struct bcast_msg **pp = &barrier.bcasts, *m;
    while ((*pp)->seq != seq)
        pp = &(*pp)->next;
    m = *pp;
    *pp = m->next;
    pthread_mutex_unlock(&barrier.lock);
    if (m->root != root || m->data_len != len)
        log_fatal("dsm_bcast: node %d sent %zu bytes as root, this node expected %zu from node %d",
                  m->root, m->data_len, len, root);
    /* Copied outside every lock: buf may be shared memory, and touching it
     * may fault. */
    memcpy(buf, m->data, len);
    interval_apply(m->root, m->data + len, m->len - len);
    free(m->data);
    free(m);
}

void sync_barrier_start(void)
{
    int nodes = job()->nodes;
    barrier.vt_at_barrier = calloc((size_t)nodes, sizeof *barrier.vt_at_barrier);
    barrier.arrived[0] = calloc((size_t)nodes, sizeof *barrier.arrived[0]);
    barrier.arrived[1] = calloc((size_t)nodes, sizeof *barrier.arrived[1]);
    if (!barrier.vt_at_barrier || !barrier.arrived[0] || !barrier.arrived[1])
        log_fatal("out of memory for the barrier");
    ipc_register(SYNC_BARRIER_ARRIVE, "BARRIER_ARRIVE", on_arrive, NULL);
    ipc_register(SYNC_BARRIER_RELEASE, "BARRIER_RELEASE", on_release, NULL);
    ipc_register(SYNC_BCAST, "BCAST", on_bcast, NULL);
    ipc_register(SYNC_FREE, "FREE", on_free, NULL);
}

/* The entry points run off the master's shared stack (base/stack.h). */
static void barrier_call(void *arg)
{
    (void)arg;
    barrier_here();
}

void dsm_barrier(void) { stack_private(barrier_call, NULL); }

struct bcast_args { void *buf; size_t len; int root; };

static void bcast_call(void *arg)
{
    struct bcast_args a = *(struct bcast_args *)arg;
    bcast_here(a.buf, a.len, a.root);
}

void dsm_bcast(void *buf, size_t len, int root)
{
    struct bcast_args a = {buf, len, root};
    stack_private(bcast_call, &a);
}
