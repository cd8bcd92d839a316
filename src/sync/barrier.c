/*
 * barrier.c — the barrier, and dsm_bcast.
 *
 * Barrier: every node releases (its writes made visible, an interval
 * recorded); the arrivals then gather up a tree of fan-out k
 * (DSM_BARRIER_FANOUT; node i's parent is (i - 1) / k, its children
 * k i + 1 ... k i + k), each carrying the intervals since the last barrier
 * of the node and of everyone below it; node 0, once its subtree has
 * arrived, sends the epoch's intervals down the same tree. Each node
 * applies those it has not seen — after which every node has seen every
 * interval, and the logs are dropped. The merge on the way up is a
 * concatenation: the encoding lists each node's intervals in increasing
 * order (interval.c), and a node's intervals come up only through its own
 * arrival, so order within a node survives. Frees of other nodes' blocks
 * (dsm_free) travel to their owners just before the arrival.
 *
 * The same messages carry the protocol's votes for one more round
 * (coherence_ops.barrier_vote: a migration round only when some home has a
 * page to give away): each arrival counts the votes of its subtree, and
 * the release tells every node the total, so that all decide alike
 * without a message of their own.
 *
 * Depth log_k N and one message per node each way: no node handles more
 * than k + 1 arrivals or sends more than k releases, where a star's root
 * handled N - 1 of each, one after the other. A subtree's arrival goes up,
 * and a release down, from whichever thread completes it — the delivery
 * thread on the last child's arrival, or the program on its own — so a
 * program that sleeps in the barrier is not woken just to pass a message
 * on.
 *
 * A node can run at most one epoch ahead of its parent (it cannot leave
 * epoch e before the parent passed e's release on, which it does only
 * once it arrived at e itself), so a node keeps its children's arrivals
 * for two epochs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stack.h"
#include "base/stats.h"
#include "base/trace.h"
#include "base/tree.h"
#include "sync/sync.h"

/* Every arrival and release begins with this; the intervals follow
 * (interval.c's encoding, whose first word is `count`). */
struct barrier_head {
    uint32_t votes;  /* nodes below and at the sender asking for one more round */
    uint32_t count;  /* intervals that follow */
};

struct arrival {
    unsigned char *data;  /* struct barrier_head, then the intervals */
    size_t         len;
};

/* One epoch's gathering at this node: its own arrival and its children's. */
struct gather {
    struct arrival  own;
    bool            own_in;
    struct arrival *child;    /* per child, in order */
    int             nchild_in;
};

struct bcast_msg {
    struct bcast_msg *next;
    uint64_t          seq;
    unsigned char    *data;   /* the header, data bytes, then the root's intervals */
    size_t            len, data_len;
    int               root;
};

DSM_STATE int sync_barrier_fanout = 8;

static DSM_STATE struct {
    pthread_mutex_t   lock;
    int               parent;          /* -1 at node 0 */
    int               first_child, nchildren;
    uint64_t          epoch;           /* barriers this node has entered */
    uint32_t         *vt_at_barrier;   /* our vector timestamp after the last barrier */
    struct gather     gather[2];       /* per epoch parity */
    unsigned char    *release;         /* the release (head, intervals), for the program */
    size_t            release_len;
    uint64_t          released;        /* the last epoch released here */
    uint64_t          bcast_seq;
    struct bcast_msg *bcasts;
} barrier = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t sync_barrier_epoch(void)
{
    pthread_mutex_lock(&barrier.lock);
    uint64_t e = barrier.epoch;
    pthread_mutex_unlock(&barrier.lock);
    return e;
}

/* Node i's parent and children in a tree of fan-out k (sync.h, base/tree.h). */
int sync_tree_parent(int i, int k) { return tree_parent(i, k); }

int sync_tree_children(int i, int k, int nodes, int *first)
{
    return tree_children(i, k, nodes, first);
}

/* Under barrier.lock: when epoch's subtree has arrived here (our own
 * arrival and every child's), moves the arrivals into parts (own first,
 * then the children in order: nchildren + 1 entries) for the caller to
 * pass on outside the lock, and returns true — once per epoch. */
static bool take_gathered(uint64_t epoch, struct arrival *parts)
{
    struct gather *g = &barrier.gather[epoch & 1];
    if (!g->own_in || g->nchild_in != barrier.nchildren)
        return false;
    parts[0] = g->own;
    for (int c = 0; c < barrier.nchildren; c++) {
        parts[c + 1] = g->child[c];
        g->child[c] = (struct arrival){0};
    }
    g->own = (struct arrival){0};
    g->own_in = false;
    g->nchild_in = 0;
    return true;
}

/* The head of an arrival or a release, checked: `who` sent it. */
static struct barrier_head part_head(const void *data, size_t len, int who)
{
    struct barrier_head h;
    if (len < sizeof h)
        log_fatal("node %d sent a malformed barrier message (%zu bytes)", who, len);
    memcpy(&h, data, sizeof h);
    if (h.votes > (uint32_t)job()->nodes)
        log_fatal("node %d sent a barrier message with %u votes (%d nodes)", who, h.votes,
                  job()->nodes);
    return h;
}

/* Sends epoch's release (the intervals of every node) to our children. */
static void send_release_down(uint64_t epoch, const unsigned char *data, size_t len)
{
    ipc_batch_begin();
    for (int c = 0; c < barrier.nchildren; c++)
        ipc_send(barrier.first_child + c, SYNC_BARRIER_RELEASE, (uint32_t)epoch, data, len);
    ipc_batch_end();
}

/* Passes a gathered subtree on, and frees its parts: up to the parent in
 * one message (the head with the subtree's votes and interval count, then
 * every part's intervals), or, at node 0, as the epoch's release, down the
 * tree and to our own program. */
static void pass_on(uint64_t epoch, struct arrival *parts)
{
    int n = barrier.nchildren + 1;
    struct barrier_head total = {0};
    for (int i = 0; i < n; i++) {
        /* Each part was checked when it came in (on_arrive; ours is ours). */
        struct barrier_head h = part_head(parts[i].data, parts[i].len,
                                          i == 0 ? job()->rank : barrier.first_child + i - 1);
        total.votes += h.votes;
        total.count += h.count;
    }
    if (barrier.parent >= 0) {
        struct iovec iov[IPC_SENDV_MAX];
        iov[0] = (struct iovec){&total, sizeof total};
        for (int i = 0; i < n; i++)
            iov[i + 1] = (struct iovec){parts[i].data + sizeof total, parts[i].len - sizeof total};
        ipc_sendv(barrier.parent, SYNC_BARRIER_ARRIVE, (uint32_t)epoch, iov, n + 1);
    } else {
        struct buf all = {0};
        buf_put(&all, &total, sizeof total);
        for (int i = 0; i < n; i++)
            buf_put(&all, parts[i].data + sizeof total, parts[i].len - sizeof total);
        send_release_down(epoch, all.p, all.len);
        pthread_mutex_lock(&barrier.lock);
        barrier.release = all.p;
        barrier.release_len = all.len;
        barrier.released = epoch;
        pthread_mutex_unlock(&barrier.lock);
        ipc_notify();
    }
    for (int i = 0; i < n; i++)
        free(parts[i].data);
}

/* The arrival of a child's subtree. */
static void on_arrive(int src, const void *msg, size_t len)
{
    uint32_t epoch32 = ipc_msg_aux(msg);
    struct arrival parts[IPC_SENDV_MAX];
    pthread_mutex_lock(&barrier.lock);
    /* Our own epoch, or the next one: the child may have left ours. */
    uint64_t epoch = epoch32 == (uint32_t)(barrier.epoch + 1) ? barrier.epoch + 1 : barrier.epoch;
    int c = src - barrier.first_child;
    struct gather *g = &barrier.gather[epoch & 1];
    if (c < 0 || c >= barrier.nchildren || epoch32 != (uint32_t)epoch || g->child[c].data)
        log_fatal("node %d arrived at barrier %u out of turn (node %d's child? this node is at %llu); "
                  "protocol error", src, epoch32, job()->rank, (unsigned long long)barrier.epoch);
    g->child[c].data = ipc_copy_payload(msg, len, 0, &g->child[c].len);
    part_head(g->child[c].data, g->child[c].len, src);
    /* The versions of the child's diffs applied here, which it did not
     * wait for (they came before this, in order). */
    coherence_arrival_from(src, g->child[c].data + sizeof(uint32_t), g->child[c].len - sizeof(uint32_t));
    g->nchild_in++;
    bool complete = take_gathered(epoch, parts);
    pthread_mutex_unlock(&barrier.lock);
    if (complete)
        pass_on(epoch, parts);
}

/* The epoch's release from our parent: on to our children at once, then
 * to our program. */
static void on_release(int src, const void *msg, size_t len)
{
    uint32_t epoch32 = ipc_msg_aux(msg);
    size_t rlen;
    unsigned char *r = ipc_copy_payload(msg, len, 0, &rlen);
    part_head(r, rlen, src);
    pthread_mutex_lock(&barrier.lock);
    uint64_t epoch = barrier.epoch;
    if (src != barrier.parent || epoch32 != (uint32_t)epoch || barrier.released == epoch)
        log_fatal("node %d released barrier %u out of turn (this node's parent is %d, it is at %llu); "
                  "protocol error", src, epoch32, barrier.parent, (unsigned long long)epoch);
    pthread_mutex_unlock(&barrier.lock);
    send_release_down(epoch, r, rlen);
    pthread_mutex_lock(&barrier.lock);
    barrier.release = r;
    barrier.release_len = rlen;
    barrier.released = epoch;
    pthread_mutex_unlock(&barrier.lock);
    ipc_notify();
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

/* One round: release, gather the epoch's intervals (and the protocol's
 * votes) up the tree, wait for them all to come down, apply them. Returns
 * the votes for one more round. */
static uint32_t barrier_round(void)
{
    uint64_t t0 = TRACE_ON ? clock_ns() : 0;
    log_flush_output();
    /* The diffs homed at the parent need no acknowledgement before the
     * arrival, which follows them there (coherence_release_arriving). */
    coherence_release_arriving(barrier.parent);
    uint64_t t_released = TRACE_ON ? clock_ns() : 0;
    send_remote_frees();

    struct barrier_head head = {.votes = coh->barrier_vote && coh->barrier_vote()};
    struct buf mine = {0};
    buf_put(&mine, &head.votes, sizeof head.votes);
    interval_encode_arrival(&mine, barrier.vt_at_barrier);
    struct arrival parts[IPC_SENDV_MAX];
    pthread_mutex_lock(&barrier.lock);
    uint64_t epoch = ++barrier.epoch;
    struct gather *g = &barrier.gather[epoch & 1];
    g->own = (struct arrival){mine.p, mine.len};
    g->own_in = true;
    bool complete = take_gathered(epoch, parts);
    pthread_mutex_unlock(&barrier.lock);
    if (complete)
        pass_on(epoch, parts);
    /* Our part is in (or waits only for the children): what the release
     * left is done now, while the others are on their way. */
    coherence_release_sent();
    ipc_wait(released, NULL, 0);
    pthread_mutex_lock(&barrier.lock);
    unsigned char *release = barrier.release;
    size_t len = barrier.release_len;
    barrier.release = NULL;
    pthread_mutex_unlock(&barrier.lock);

    /* The head was checked when the release came (or made here). */
    memcpy(&head, release, sizeof head);
    interval_apply(barrier.parent < 0 ? 0 : barrier.parent, release + sizeof head.votes,
                   len - sizeof head.votes);
    free(release);
    interval_gc();
    interval_vt(barrier.vt_at_barrier);
    stats_add(STAT_BARRIERS, 1);
    if (TRACE_ON)
        trace_put(TRACE_BARRIER, 0, 0, epoch, t0, t_released, clock_ns());
    return head.votes;
}

/* The protocol may ask for further rounds (lrc's collection: its keepers
 * bring their copies up to date in one, and the diffs are dropped after
 * the next; a migration round when some node voted for one); each counts
 * as a barrier. */
static void barrier_here(void)
{
    uint64_t t0 = clock_ns();
    uint32_t votes;
    do
        votes = barrier_round();
    while (coh->barrier_done && coh->barrier_done(votes));
    stats_add(STAT_T_BARRIER_NS, clock_ns() - t0);
}

/* ---- broadcast -------------------------------------------------------- */

/* dsm_bcast goes down the barrier's tree, renumbered so that the root is
 * its top: node i sits at (i - root) mod N. Each node passes the message on
 * to its children from the delivery thread as it arrives, as the barrier's
 * release does: depth log_k N, where the root of a star sent N - 1 copies
 * one after the other. The message is the root's, unchanged: its data and
 * the root's intervals. */
struct bcast_hdr { uint64_t seq, data_len, root; };

static int bcast_rel(int i, int root) { return (i - root + job()->nodes) % job()->nodes; }
static int bcast_abs(int rel, int root) { return (rel + root) % job()->nodes; }

/* Sends a broadcast from `root` (header, data, intervals in body) to this
 * node's children in root's tree. */
static void bcast_down(int root, const void *body, size_t len)
{
    int first, n = tree_children(bcast_rel(job()->rank, root), sync_barrier_fanout, job()->nodes, &first);
    ipc_batch_begin();
    for (int c = 0; c < n; c++)
        ipc_send(bcast_abs(first + c, root), SYNC_BCAST, 0, body, len);
    ipc_batch_end();
}

static void on_bcast(int src, const void *msg, size_t len)
{
    struct bcast_hdr h;
    size_t rest;
    ipc_body(src, msg, len, &h, sizeof h, &rest, "broadcast");
    if (h.data_len > rest || h.root >= (uint64_t)job()->nodes || h.root == (uint64_t)job()->rank ||
        bcast_abs(tree_parent(bcast_rel(job()->rank, (int)h.root), sync_barrier_fanout), (int)h.root) != src)
        log_fatal("node %d sent a malformed broadcast (root %llu, %llu data bytes of %zu)", src,
                  (unsigned long long)h.root, (unsigned long long)h.data_len, rest);
    struct bcast_msg *m = calloc(1, sizeof *m);
    if (!m)
        log_fatal("out of memory receiving a broadcast");
    size_t body_len;
    unsigned char *body = ipc_copy_payload(msg, len, 0, &body_len);
    bcast_down((int)h.root, body, body_len);
    m->data = body;
    m->len = body_len;
    m->seq = h.seq;
    m->data_len = h.data_len;
    m->root = (int)h.root;
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
        struct bcast_hdr h = {.seq = seq, .data_len = len, .root = (uint64_t)root};
        buf_put(&b, &h, sizeof h);
        buf_put(&b, buf, len);
        interval_encode(&b, NULL, -1, -1);
        bcast_down(root, b.p, b.len);
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
    const unsigned char *data = m->data + sizeof(struct bcast_hdr);
    memcpy(buf, data, len);
    interval_apply(m->root, data + len, m->len - sizeof(struct bcast_hdr) - len);
    free(m->data);
    free(m);
}

void sync_barrier_start(void)
{
    int nodes = job()->nodes, k = sync_barrier_fanout;
    /* An arrival is sent as one iovec per part, plus the count. */
    if (k < 2 || k + 2 > IPC_SENDV_MAX)
        log_fatal("internal error: a barrier fan-out of %d (2..%d)", k, IPC_SENDV_MAX - 2);
    barrier.parent = sync_tree_parent(job()->rank, k);
    barrier.nchildren = sync_tree_children(job()->rank, k, nodes, &barrier.first_child);
    barrier.vt_at_barrier = calloc((size_t)nodes, sizeof *barrier.vt_at_barrier);
    barrier.gather[0].child = calloc((size_t)k, sizeof *barrier.gather[0].child);
    barrier.gather[1].child = calloc((size_t)k, sizeof *barrier.gather[1].child);
    if (!barrier.vt_at_barrier || !barrier.gather[0].child || !barrier.gather[1].child)
        log_fatal("out of memory for the barrier");
    ipc_register(SYNC_BARRIER_ARRIVE, "BARRIER_ARRIVE", on_arrive, NULL);
    ipc_register(SYNC_BARRIER_RELEASE, "BARRIER_RELEASE", on_release, NULL);
    ipc_register(SYNC_BCAST, "BCAST", on_bcast, NULL);
    ipc_register(SYNC_FREE, "FREE", on_free, NULL);
}

static DSM_STATE bool (*others_can_meet)(void);

void sync_collectives_guard(bool (*can_meet)(void)) { others_can_meet = can_meet; }

/* A dsmcc program's main runs on node 0 alone; the other nodes wait for
 * work (dsm_create, an OpenMP region, PARMACS CREATE): a collective there
 * would wait for ever. */
static void refuse_unmeetable(const char *call)
{
    if (others_can_meet && !others_can_meet())
        log_fatal("%s on node 0 with no work started on the other nodes: only node 0 runs "
                  "main here (dsmcc or dsm_startup_fork) and the others wait for dsm_create, "
                  "an OpenMP region or PARMACS CREATE, so none can meet it (an SPMD program, "
                  "every node running main, is built with cc and libdsm: docs/api.md)", call);
}

/* The entry points run off the master's shared stack (base/stack.h). */
static void barrier_call(void *arg)
{
    (void)arg;
    if (smp_multi())
        sync_node_barrier(barrier_here);
    else
        barrier_here();
}

void dsm_barrier(void)
{
    PROFILE_SITE();
    refuse_unmeetable("dsm_barrier");
    bool profiled = PROFILE_ON;
    uint64_t t0 = profiled ? clock_ns() : 0;
    stack_private(barrier_call, NULL);
    if (profiled) /* here, on the program's stack: its call stack is sampled */
        profile_barrier(t0, clock_ns() - t0);
}

static void join_call(void *arg)
{
    (void)arg;
    barrier_here();
}

/* A region's join is a barrier in OpenMP; in fork style it is the
 * workers' end messages to the master, which carry no votes. Where the
 * protocol wants a barrier at this join (a migration window ends here) the
 * nodes meet in one, one thread each: the node's other threads of the
 * region have left it, as they would have met at the node's part of a
 * barrier. */
bool sync_join(void)
{
    if (!coh->join_wants_barrier || !coh->join_wants_barrier())
        return false;
    stack_private(join_call, NULL);
    return true;
}

struct bcast_args { void *buf; size_t len; int root; };

static void bcast_call(void *arg)
{
    struct bcast_args a = *(struct bcast_args *)arg;
    if (smp_multi())
        sync_node_bcast(a.buf, a.len, a.root, bcast_here);
    else
        bcast_here(a.buf, a.len, a.root);
}

void dsm_bcast(void *buf, size_t len, int root)
{
    refuse_unmeetable("dsm_bcast");
    struct bcast_args a = {buf, len, root};
    stack_private(bcast_call, &a);
}
