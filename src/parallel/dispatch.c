/*
 * dispatch.c — dynamic and guided chunks and ordered turns, served by
 * node 0 (parallel.h).
 *
 * A dynamic loop on a DSM must not keep its iteration counter in shared
 * memory: every fetch-and-add would move the counter's page between nodes
 * (an invalidation, a fetch and a diff each time). Node 0's service thread
 * keeps the counter instead and answers each request with a chunk: one
 * message there and one back (Omni/SCASH kept its chunk queue at one node
 * too; seed 003 §3.1 measures what it costs). Node 0's own requests are
 * served in place.
 *
 * The server learns of a loop from its first request (every request names
 * the loop fully), and forgets it once every thread has been told the loop
 * is over. Ordered turns live in a second table, forgotten when the last
 * iteration's turn is done.
 *
 * A node may run several threads of a team (src/omp/team_layout.c), each
 * with its own request outstanding: a request carries the thread's index
 * on its node in the message's aux field, the reply and the turn's go
 * carry it back, and each thread waits on its own slot.
 *
 * One counter starves a node that starts late: node 0 asks in place while
 * another node's every chunk costs a round trip, and its first chunks each
 * fault pages in besides, so node 0 took 4,902 of a lookup loop's 5,000
 * chunks on 2 nodes (issue 85). So a loop whose chunks need not come in
 * order (nonmonotonic: OpenMP's default for dynamic and guided, never an
 * ordered loop) is served from one pool of chunks per node of the team,
 * the iterations split in consecutive blocks by the node's threads: a
 * thread takes from its own node's pool, front first, and once that is
 * empty takes the last chunk of the pool with the most left (stealing from
 * the back, as in work stealing, so the owner's run stays consecutive),
 * among the pools whose node has begun the loop: a node that starts late
 * finds its pool whole. A dynamic loop's thread off node 0 takes a batch of its pool's chunks
 * at a time and hands them to itself one by one (loop.c): a round trip per
 * batch, not per chunk. A batch is at most as many chunks as the thread
 * has run of the loop so far (1, 2, 4, ...: a node slowed by its first
 * faults holds few chunks others could run) and at most a quarter of its
 * share of what is left in its pool, so the last chunks stay in the pool
 * for whoever is free. Monotonic loops (and `single`) keep the
 * one counter, which hands chunks out in order.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "parallel/parallel.h"

struct chunk_req {
    uint32_t team, loop;
    uint32_t kind;
    int32_t  nthreads;
    uint64_t trip, chunk;
    /* Nonmonotonic: the asking thread's node in the team (its pool), the
     * team's nodes and threads a node; pools 0: one counter, in order. */
    int32_t  pool, pools, per_pool;
    int32_t  batch; /* the most chunks it takes at once (a dynamic loop, off node 0) */
};
struct chunk_rep {
    uint32_t team, loop;
    uint64_t first, count;
    uint64_t stolen; /* taken from another node's pool (a word: no padding on the wire) */
};
struct turn_msg {
    uint32_t team, loop;
    uint64_t iter, trip;
};

/* A request's kind that is not a schedule: a `single`, a loop of one
 * iteration whose every reply (not only the empty ones) is a thread done
 * with it. */
#define DISPATCH_SINGLE 0

/* The most threads a node runs (DSM_THREADS's range, config.c). */
#define DISPATCH_SLOTS 256

/* The most chunks a batch takes of what is left of its thread's share
 * of its pool: a quarter (see the head of this file). */
#define BATCH_SHARE 4

/* At node 0: one node's pool of a nonmonotonic loop, iterations
 * [next, end), its bounds whole chunks from the loop's start (the last
 * pool's end excepted: the loop's last, short chunk). */
struct chunk_pool {
    uint64_t next, end;
    int      threads;
    bool     started;   /* a thread of its node has asked: others may steal */
};

/* At node 0: one dynamic or guided loop (or single) in progress. */
struct served_loop {
    struct served_loop *next;
    struct loop_id      id;
    uint64_t            next_iter, trip;
    int                 finished;   /* threads told the loop is over */
    int                 npools;     /* 0: one counter, next_iter */
    struct chunk_pool   pools[];
};

/* At node 0: the turn of one ordered loop, and who waits for it. */
struct turn_waiter {
    struct turn_waiter *next;
    int                 node, slot;
    uint64_t            iter;
};
struct ordered_loop {
    struct ordered_loop *next;
    struct loop_id       id;
    uint64_t             turn;      /* the iteration that may run its ordered part */
    struct turn_waiter  *waiters;
};

static DSM_STATE struct {
    pthread_mutex_t      lock;
    struct served_loop  *loops;     /* at node 0 */
    struct ordered_loop *ordered;   /* at node 0 */
    /* Each thread's outstanding request, by its index on the node. */
    struct dispatch_slot {
        bool     replied;
        uint64_t rep_first, rep_count;
        uint64_t rep_stolen;
        bool     turn_go;
    } slot[DISPATCH_SLOTS];
} disp = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool same(struct loop_id a, struct loop_id b) { return a.team == b.team && a.loop == b.loop; }

/* ---- at node 0 ------------------------------------------------------------ */

/* Splits a new loop's iterations into its pools: consecutive blocks of
 * whole chunks, each pool's by its threads' share of the team. */
static void make_pools(struct served_loop *l, const struct chunk_req *r)
{
    uint64_t chunks = l->trip / r->chunk + (l->trip % r->chunk != 0);
    int before = 0;
    for (int g = 0; g < l->npools; g++) {
        int threads = r->nthreads - before < r->per_pool ? r->nthreads - before : r->per_pool;
        uint64_t from = (uint64_t)((unsigned __int128)chunks * (unsigned)before /
                                   (unsigned)r->nthreads);
        uint64_t to = (uint64_t)((unsigned __int128)chunks * (unsigned)(before + threads) /
                                 (unsigned)r->nthreads);
        l->pools[g].next = from * r->chunk;
        l->pools[g].end = to < chunks ? to * r->chunk : l->trip; /* (to * chunk may not fit) */
        l->pools[g].threads = threads;
        before += threads;
    }
}

/* A nonmonotonic loop's next chunk (or batch) for a thread of pool
 * r->pool: from the front of its pool, else the back of the fullest. */
static uint64_t take_pooled(struct served_loop *l, const struct chunk_req *r, uint64_t *first,
                            uint64_t *stolen)
{
    struct chunk_pool *p = &l->pools[r->pool];
    uint64_t left = p->end - p->next;
    p->started = true;
    if (left) {
        uint64_t c;
        if (r->kind == SCHED_GUIDED) {
            c = sched_guided_chunk(left, p->threads, r->chunk);
        } else {
            uint64_t chunks = left / r->chunk + (left % r->chunk != 0);
            uint64_t batch = chunks / (BATCH_SHARE * (uint64_t)p->threads);
            if (batch > (uint64_t)r->batch)
                batch = (uint64_t)r->batch;
            c = (batch ? batch : 1) * r->chunk;
        }
        *first = p->next;
        c = c < left ? c : left;
        p->next += c;
        return c;
    }
    /* Only a pool whose node has started: one that has not will run its
     * own chunks when it comes (every thread meets the loop), as libomp's
     * static_steal leaves a late thread its share. */
    struct chunk_pool *v = NULL;
    for (int g = 0; g < l->npools; g++)
        if (l->pools[g].started && l->pools[g].end - l->pools[g].next > (v ? v->end - v->next : 0))
            v = &l->pools[g];
    if (!v)
        return 0;
    left = v->end - v->next;
    /* The back's last chunk, or for guided a chunk of the size the owner
     * would take next; its start a whole number of chunks from the loop's
     * start, so that only the loop's last chunk is short. */
    uint64_t size = r->kind == SCHED_GUIDED ? sched_guided_chunk(left, v->threads, r->chunk) : 1;
    uint64_t start = (v->end - (size < left ? size : left)) / r->chunk * r->chunk;
    if (start < v->next)
        start = v->next;
    *first = start;
    uint64_t c = v->end - start;
    v->end = start;
    *stolen = v != p;
    return c;
}

/* Serves one request. Caller holds disp.lock. */
static struct chunk_rep serve_chunk(int node, const struct chunk_req *r)
{
    struct loop_id id = {r->team, r->loop};
    struct served_loop **pp = &disp.loops, *l;
    while ((l = *pp) && !same(l->id, id))
        pp = &l->next;
    if (!l) {
        l = calloc(1, sizeof *l + (size_t)r->pools * sizeof l->pools[0]);
        if (!l)
            log_fatal("out of memory serving loop chunks");
        l->id = id;
        l->trip = r->trip;
        l->npools = r->pools;
        if (l->npools)
            make_pools(l, r);
        *pp = l;
    } else if (l->trip != r->trip || l->npools != r->pools)
        log_fatal("node %d shares loop %u of team %u with %llu iterations in %d pools, others "
                  "with %llu in %d: the threads of a team must meet the same loops",
                  node, r->loop, r->team, (unsigned long long)r->trip, r->pools,
                  (unsigned long long)l->trip, l->npools);
    struct chunk_rep rep = {.team = r->team, .loop = r->loop};
    uint64_t c;
    if (l->npools) {
        c = take_pooled(l, r, &rep.first, &rep.stolen);
    } else {
        uint64_t left = l->trip - l->next_iter;
        c = r->kind == SCHED_GUIDED ? sched_guided_chunk(left, r->nthreads, r->chunk)
                                    : (r->chunk < left ? r->chunk : left);
        rep.first = l->next_iter;
        l->next_iter += c;
    }
    rep.count = c;
    if ((c == 0 || r->kind == DISPATCH_SINGLE) && ++l->finished == r->nthreads) {
        *pp = l->next;
        free(l);
    }
    return rep;
}

/* Whether a request's pools describe its team: the thread's pool among
 * them, every pool some threads, the last the rest. */
static bool pools_fit(const struct chunk_req *r)
{
    if (r->pools == 0)
        return r->pool == 0 && r->batch == 0;
    return (r->batch == 0 || (r->batch > 0 && r->kind == SCHED_DYNAMIC)) &&
           r->kind != DISPATCH_SINGLE && r->pools <= job()->nodes && r->pool >= 0 &&
           r->pool < r->pools && r->per_pool >= 1 && r->per_pool <= DISPATCH_SLOTS &&
           (int64_t)r->per_pool * (r->pools - 1) < r->nthreads &&
           (int64_t)r->per_pool * r->pools >= r->nthreads;
}

static void on_chunk_req(int src, const void *msg, size_t len)
{
    struct chunk_req r;
    ipc_body(src, msg, len, &r, sizeof r, NULL, "loop chunk request");
    uint32_t slot = ipc_msg_aux(msg);
    if (job()->rank != 0 || r.nthreads < 1 || r.nthreads > job()->nodes * DISPATCH_SLOTS ||
        slot >= DISPATCH_SLOTS ||
        r.chunk < 1 || (r.kind != SCHED_DYNAMIC && r.kind != SCHED_GUIDED &&
                         (r.kind != DISPATCH_SINGLE || r.trip != 1 || r.chunk != 1)) ||
        !pools_fit(&r))
        log_fatal("node %d sent a malformed loop chunk request", src);
    pthread_mutex_lock(&disp.lock);
    struct chunk_rep rep = serve_chunk(src, &r);
    pthread_mutex_unlock(&disp.lock);
    ipc_send(src, PAR_CHUNK_REP, slot, &rep, sizeof rep);
}

static void send_go(int node, int slot)
{
    if (node == job()->rank) {
        disp.slot[slot].turn_go = true;
        ipc_notify();
    } else
        ipc_send(node, PAR_TURN_GO, (uint32_t)slot, NULL, 0);
}

static struct ordered_loop *ordered_of(struct loop_id id)
{
    struct ordered_loop *o;
    for (o = disp.ordered; o && !same(o->id, id); o = o->next)
        ;
    if (!o) {
        o = calloc(1, sizeof *o);
        if (!o)
            log_fatal("out of memory serving ordered loops");
        o->id = id;
        o->next = disp.ordered;
        disp.ordered = o;
    }
    return o;
}

/* Caller holds disp.lock. */
static void turn_wait(int node, int slot, struct loop_id id, uint64_t iter)
{
    struct ordered_loop *o = ordered_of(id);
    if (o->turn == iter) {
        send_go(node, slot);
        return;
    }
    struct turn_waiter *w = malloc(sizeof *w);
    if (!w)
        log_fatal("out of memory serving ordered loops");
    *w = (struct turn_waiter){.next = o->waiters, .node = node, .slot = slot, .iter = iter};
    o->waiters = w;
}

/* Caller holds disp.lock. */
static void turn_done(int node, struct loop_id id, uint64_t iter, uint64_t trip)
{
    struct ordered_loop *o = ordered_of(id);
    if (iter != o->turn)
        log_fatal("node %d finished ordered iteration %llu out of turn (turn %llu)", node,
                  (unsigned long long)iter, (unsigned long long)o->turn);
    o->turn = iter + 1;
    if (o->turn >= trip) {
        if (o->waiters)
            log_fatal("a thread waits for an iteration past the end of an ordered loop");
        struct ordered_loop **pp = &disp.ordered;
        while (*pp != o)
            pp = &(*pp)->next;
        *pp = o->next;
        free(o);
        return;
    }
    for (struct turn_waiter **pp = &o->waiters, *w; (w = *pp); pp = &w->next)
        if (w->iter == o->turn) {
            *pp = w->next;
            send_go(w->node, w->slot);
            free(w);
            return;
        }
}

/* `trip`: the message names the loop's length (a turn done), which bounds
 * its iteration; a wait leaves it 0. */
static void parse_turn(int src, const void *msg, size_t len, struct turn_msg *t, bool trip)
{
    ipc_body(src, msg, len, t, sizeof *t, NULL, "ordered turn message");
    if (job()->rank != 0 || (trip ? t->iter >= t->trip : t->trip != 0))
        log_fatal("node %d sent a malformed ordered turn message", src);
}

static void on_turn_req(int src, const void *msg, size_t len)
{
    struct turn_msg t;
    parse_turn(src, msg, len, &t, false);
    uint32_t slot = ipc_msg_aux(msg);
    if (slot >= DISPATCH_SLOTS)
        log_fatal("node %d sent a malformed ordered turn message", src);
    pthread_mutex_lock(&disp.lock);
    turn_wait(src, (int)slot, (struct loop_id){t.team, t.loop}, t.iter);
    pthread_mutex_unlock(&disp.lock);
}

static void on_turn_done(int src, const void *msg, size_t len)
{
    struct turn_msg t;
    parse_turn(src, msg, len, &t, true);
    pthread_mutex_lock(&disp.lock);
    turn_done(src, (struct loop_id){t.team, t.loop}, t.iter, t.trip);
    pthread_mutex_unlock(&disp.lock);
}

/* ---- at every node -------------------------------------------------------- */

static void on_chunk_rep(int src, const void *msg, size_t len)
{
    struct chunk_rep rep;
    ipc_body(src, msg, len, &rep, sizeof rep, NULL, "loop chunk reply");
    uint32_t slot = ipc_msg_aux(msg);
    pthread_mutex_lock(&disp.lock);
    if (src != 0 || slot >= DISPATCH_SLOTS || disp.slot[slot].replied)
        log_fatal("node %d sent a loop chunk nobody asked for", src);
    disp.slot[slot].rep_first = rep.first;
    disp.slot[slot].rep_count = rep.count;
    disp.slot[slot].rep_stolen = rep.stolen;
    disp.slot[slot].replied = true;
    pthread_mutex_unlock(&disp.lock);
    ipc_notify();
}

static void on_turn_go(int src, const void *msg, size_t len)
{
    char none;
    ipc_body(src, msg, len, &none, 0, NULL, "ordered turn");
    uint32_t slot = ipc_msg_aux(msg);
    pthread_mutex_lock(&disp.lock);
    if (src != 0 || slot >= DISPATCH_SLOTS || disp.slot[slot].turn_go)
        log_fatal("node %d sent an ordered turn nobody waited for", src);
    disp.slot[slot].turn_go = true;
    pthread_mutex_unlock(&disp.lock);
    ipc_notify();
}

static bool flag_set(void *arg)
{
    bool *flag = arg;
    pthread_mutex_lock(&disp.lock);
    bool set = *flag;
    pthread_mutex_unlock(&disp.lock);
    return set;
}

static uint64_t next_chunk_here(struct chunk_req *r, uint64_t *first)
{
    uint64_t t0 = clock_ns();
    struct chunk_rep rep;
    if (job()->rank == 0) {
        r->batch = 0; /* asked in place: a chunk at a time balances best */
        pthread_mutex_lock(&disp.lock);
        rep = serve_chunk(0, r);
        pthread_mutex_unlock(&disp.lock);
    } else {
        int me = smp_index();
        struct dispatch_slot *s = &disp.slot[me];
        pthread_mutex_lock(&disp.lock);
        s->replied = false;
        pthread_mutex_unlock(&disp.lock);
        ipc_send(0, PAR_CHUNK_REQ, (uint32_t)me, r, sizeof *r);
        ipc_wait(flag_set, &s->replied, 0);
        pthread_mutex_lock(&disp.lock);
        rep.first = s->rep_first;
        rep.count = s->rep_count;
        rep.stolen = s->rep_stolen;
        pthread_mutex_unlock(&disp.lock);
    }
    uint64_t chunks = r->kind == SCHED_DYNAMIC ? (rep.count + r->chunk - 1) / r->chunk
                                               : rep.count != 0;
    stats_add(STAT_PAR_CHUNKS, chunks);
    stats_add(STAT_PAR_CHUNKS_STOLEN, rep.stolen ? chunks : 0);
    stats_add(STAT_T_PAR_CHUNK_NS, clock_ns() - t0);
    *first = rep.first;
    return rep.count;
}

static void turn_wait_here(struct loop_id id, uint64_t iter)
{
    uint64_t t0 = clock_ns();
    int me = smp_index();
    pthread_mutex_lock(&disp.lock);
    disp.slot[me].turn_go = false;
    if (job()->rank == 0)
        turn_wait(0, me, id, iter);
    pthread_mutex_unlock(&disp.lock);
    if (job()->rank != 0) {
        struct turn_msg t = {.team = id.team, .loop = id.loop, .iter = iter};
        ipc_send(0, PAR_TURN_REQ, (uint32_t)me, &t, sizeof t);
    }
    ipc_wait(flag_set, &disp.slot[me].turn_go, 0);
    stats_add(STAT_T_PAR_ORDERED_NS, clock_ns() - t0);
}

static void turn_done_here(struct loop_id id, uint64_t iter, uint64_t trip)
{
    if (job()->rank == 0) {
        pthread_mutex_lock(&disp.lock);
        turn_done(0, id, iter, trip);
        pthread_mutex_unlock(&disp.lock);
        return;
    }
    struct turn_msg t = {.team = id.team, .loop = id.loop, .iter = iter, .trip = trip};
    ipc_send(0, PAR_TURN_DONE, 0, &t, sizeof t);
}

/* The entry points run off the master's shared stack (base/stack.h): they
 * wait on the network, and a fault on their own locals there could need
 * the network too. */
struct dispatch_call {
    struct chunk_req req;
    struct loop_id   id;
    uint64_t         trip, iter, first, count;
};

static void next_chunk_call(void *arg)
{
    struct dispatch_call c = *(struct dispatch_call *)arg;
    c.count = next_chunk_here(&c.req, &c.first);
    ((struct dispatch_call *)arg)->first = c.first;
    ((struct dispatch_call *)arg)->count = c.count;
}

static uint64_t ask_chunk(struct chunk_req r, uint64_t *first)
{
    struct dispatch_call c = {.req = r};
    c.req.chunk = r.chunk ? r.chunk : 1;
    stack_private(next_chunk_call, &c);
    *first = c.first;
    return c.count;
}

uint64_t parallel_next_chunk(struct loop_id id, enum sched_kind kind, uint64_t trip,
                             uint64_t chunk, int nthreads, uint64_t *first)
{
    return ask_chunk((struct chunk_req){.team = id.team, .loop = id.loop, .kind = kind,
                                        .nthreads = nthreads, .trip = trip, .chunk = chunk},
                     first);
}

uint64_t parallel_next_chunks(struct loop_id id, enum sched_kind kind, uint64_t trip,
                              uint64_t chunk, int nthreads, const struct chunk_pools *pools,
                              uint64_t *first)
{
    int32_t batch = kind != SCHED_DYNAMIC   ? 0
                  : pools->ran < INT32_MAX ? (int32_t)pools->ran
                                           : INT32_MAX;
    return ask_chunk((struct chunk_req){.team = id.team, .loop = id.loop, .kind = kind,
                                        .nthreads = nthreads, .trip = trip, .chunk = chunk,
                                        .pool = pools->pool, .pools = pools->pools,
                                        .per_pool = pools->per_pool, .batch = batch},
                     first);
}

bool parallel_single(struct loop_id id, int nthreads)
{
    uint64_t first;
    return ask_chunk((struct chunk_req){.team = id.team, .loop = id.loop,
                                        .kind = DISPATCH_SINGLE, .nthreads = nthreads,
                                        .trip = 1, .chunk = 1},
                     &first) == 1;
}

static void turn_wait_call(void *arg)
{
    struct dispatch_call c = *(struct dispatch_call *)arg;
    turn_wait_here(c.id, c.iter);
}

void parallel_turn_wait(struct loop_id id, uint64_t iter)
{
    struct dispatch_call c = {.id = id, .iter = iter};
    stack_private(turn_wait_call, &c);
}

static void turn_done_call(void *arg)
{
    struct dispatch_call c = *(struct dispatch_call *)arg;
    turn_done_here(c.id, c.iter, c.trip);
}

void parallel_turn_done(struct loop_id id, uint64_t iter, uint64_t trip)
{
    struct dispatch_call c = {.id = id, .iter = iter, .trip = trip};
    stack_private(turn_done_call, &c);
}

void parallel_dispatch_start(void)
{
    ipc_register(PAR_CHUNK_REQ, "CHUNK_REQ", on_chunk_req, NULL);
    ipc_register(PAR_CHUNK_REP, "CHUNK_REP", on_chunk_rep, NULL);
    ipc_register(PAR_TURN_REQ, "TURN_REQ", on_turn_req, NULL);
    ipc_register(PAR_TURN_GO, "TURN_GO", on_turn_go, NULL);
    ipc_register(PAR_TURN_DONE, "TURN_DONE", on_turn_done, NULL);
}

void parallel_dispatch_finish(void)
{
    while (disp.loops) {
        struct served_loop *l = disp.loops;
        disp.loops = l->next;
        free(l);
    }
    while (disp.ordered) {
        struct ordered_loop *o = disp.ordered;
        disp.ordered = o->next;
        while (o->waiters) {
            struct turn_waiter *w = o->waiters;
            o->waiters = w->next;
            free(w);
        }
        free(o);
    }
}
