/*
 * migrate.c — homes that move: page migration by remote faults (seed 003
 * §5) and home migration by modification volume (§6, Harada et al.), at
 * barriers (migrate.h says how and why).
 *
 * What a home counts, per page and per window (since the last migration
 * round), lives in one entry of a table mapped like the protocols' own
 * (untouched pages cost nothing); the pages counted in a window are listed,
 * so a round looks only at them. Each count keeps one candidate node with a
 * majority vote (Boyer and Moore; weighted by bytes for writes): its lead
 * over all the others together is a lower bound of how much it dominates,
 * in constant space per page whatever the number of nodes.
 *
 * A home that gives a page away remembers the node it gave it to (its
 * successor) and forwards there whatever still reaches it for the page:
 * each successor held the page after its giver did, so a chain of forwards
 * always ends at the current home.
 *
 * Each move gives the page's home a new *generation* (0: its first home),
 * carried by MIGRATE and HOME_MOVED: a node keeps the latest it has heard
 * of, so news older than what it knows changes nothing here (a base node
 * told of two moves out of order keeps naming the later home), and with
 * DSM_CHECK=1 the moves are checked against it (one home at a time,
 * generations that only grow; see check_hand_over and on_home_moved).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
#include "coherence/migrate.h"
#include "ipc/ipc.h"

/* Windows a page that moved stays where it went (hysteresis). */
#define FREEZE_WINDOWS 2

/* A page that comes back to a node it was taken from bounces between
 * writers whose phases alternate (NPB 3.0 C SP: x_solve divides each
 * i-plane between the nodes by j, y_solve and z_solve divide the planes
 * by i, so a page's main writer changes with every sweep, a few dozen
 * barriers apart; each move then costs a migration round and buys
 * nothing). Each return multiplies its stay by 4, up to
 * FREEZE_WINDOWS << 2 * MAX_RETURNS windows: a page that ping-pongs
 * settles within a few returns, where a page that moved once, or between
 * phases longer than its stay, is not held. */
#define MAX_RETURNS 12

/* Windows without a timed execution after which loops still profiled no
 * longer hold migration (see vote). */
#define DORMANT_WINDOWS 8

/* One page's counts (at its home) and its successor (at a former home). */
struct mig_page {
    struct migrate_counts c;
    uint32_t frozen_until; /* the first window it may move in again */
    uint32_t division1;    /* moved while loops were profiled: the loops'
                            * division then (re-partitions, plus one); it
                            * stays until that changes. 0: not so moved */
    uint32_t gen;          /* the latest home generation heard of here */
    int16_t  next1;        /* the node this one gave the page to, plus one */
    uint8_t  listed;       /* on the window's list */
    uint8_t  in_flight;    /* given, its MIGRATE not yet acknowledged */
    uint8_t  returns;      /* times it came back here after this node gave
                            * it away (at most MAX_RETURNS) */
};

/* A request to forward while the page's MIGRATE may still be on its way:
 * the page travels as a large message, which a small request sent after it
 * can overtake, and the new home must hold the page before it is asked. */
struct held_req { uint32_t page, need; int32_t requester; };

struct migrate_msg {   /* COH_MIGRATE; set[words], then the page */
    uint32_t page, version, words, gen; /* gen: the receiver's, as home */
};
struct moved_msg {     /* COH_HOME_MOVED (the sender is the page's home, at
                        * generation gen) and COH_MIGRATE_ACK (gen 0) */
    uint32_t page, gen;
};

static DSM_STATE struct {
    pthread_mutex_t        lock;        /* the counts, the list, acks_due */
    const struct home_ops *ops;
    bool                   pages_on, homes_on;
    uint64_t               period, max;
    struct mig_page       *pages;       /* per page; NULL while migration is off */
    uint32_t              *listed;      /* pages counted this window */
    size_t                 nlisted, cap_listed;
    int                    acks_due;    /* pages given, not yet acknowledged */
    struct held_req       *held;        /* requests for pages in flight */
    size_t                 nheld, cap_held;
    uint64_t               barriers;    /* barriers entered and regions' joins passed, as every node counts them */
    uint32_t               window;      /* windows ended (every DSM_MIGRATE_PERIOD-th barrier) */
    bool                   voted;       /* this node asked for the coming migration round */
    bool                   fence;       /* the migration round is running */
    uint64_t               repartitions; /* STAT_PAR_REPARTITIONS at the last window's end */
    uint64_t               timed;        /* STAT_PAR_PROFILED_RUNS at the last window's end */
    uint32_t               timed_window; /* the last window in which it changed */
    uint32_t               rounds;       /* migration rounds run (homes move only in one) */
} mig = {.lock = PTHREAD_MUTEX_INITIALIZER};

bool migrate_counts_writes(void) { return mig.pages != NULL; }

uint32_t migrate_rounds(void) { return __atomic_load_n(&mig.rounds, __ATOMIC_ACQUIRE); }

int migrate_successor(size_t page)
{
    /* Pairs with migrate_send's release: a caller that has just read the
     * page's home as another node (mem_home) reads the successor recorded
     * before that home was. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return mig.pages ? mig.pages[page].next1 - 1 : -1;
}

bool migrate_hold_request(size_t page, int requester, uint32_t need)
{
    if (!mig.pages)
        return false;
    pthread_mutex_lock(&mig.lock);
    bool hold = mig.pages[page].in_flight;
    if (hold) {
        if (mig.nheld == mig.cap_held)
            mig.held = libheap_grow(mig.held, &mig.cap_held, sizeof *mig.held, 16,
                                    "holding requests for migrating pages");
        mig.held[mig.nheld++] = (struct held_req){.page = (uint32_t)page, .need = need,
                                                  .requester = requester};
    }
    pthread_mutex_unlock(&mig.lock);
    return hold;
}

/* Caller holds mig.lock. */
static struct mig_page *counted(size_t page)
{
    struct mig_page *g = &mig.pages[page];
    if (!g->listed) {
        g->listed = 1;
        page_list_add(&mig.listed, &mig.nlisted, &mig.cap_listed, page);
    }
    return g;
}

void migrate_count_fault(struct migrate_counts *c, int node)
{
    c->faults++;
    if (c->fault_cand1 == node + 1)
        c->lead_faults++;
    else if (c->lead_faults)
        c->lead_faults--;
    else {
        c->fault_cand1 = node + 1;
        c->lead_faults = 1;
    }
}

void migrate_count_write(struct migrate_counts *c, int node, int home, size_t bytes)
{
    if (node == home) {
        c->home_bytes += bytes;
        return;
    }
    c->remote_bytes += bytes;
    if (c->write_cand1 == node + 1)
        c->lead_bytes += bytes;
    else if (c->lead_bytes >= bytes)
        c->lead_bytes -= bytes;
    else {
        c->write_cand1 = node + 1;
        c->lead_bytes = bytes - c->lead_bytes;
    }
}

int migrate_decide(const struct migrate_counts *c, int home, bool pages_on, bool homes_on,
                   bool over_a_stay, enum migrate_reason *why)
{
    *why = MIGRATE_STAY;
    /* The candidate wrote at least its lead (the unpaired votes are all
     * its own), the others at most the rest. */
    uint64_t all = c->remote_bytes + c->home_bytes;
    bool dominant = over_a_stay ? 2 * c->lead_bytes > all : 3 * c->lead_bytes >= 2 * all;
    if (homes_on && c->write_cand1 && c->write_cand1 - 1 != home && c->lead_bytes >= MIGRATE_MIN_BYTES &&
        dominant) {
        *why = MIGRATE_FOR_WRITES;
        return c->write_cand1 - 1;
    }
    if (pages_on && c->fault_cand1 && c->fault_cand1 - 1 != home && c->faults >= MIGRATE_MIN_FAULTS &&
        4 * (uint64_t)c->lead_faults >= 3 * (uint64_t)c->faults && c->home_bytes == 0) {
        *why = MIGRATE_FOR_FAULTS;
        return c->fault_cand1 - 1;
    }
    return -1;
}

void migrate_note_fault(size_t page, int node)
{
    if (!mig.pages || !mig.pages_on)
        return;
    pthread_mutex_lock(&mig.lock);
    migrate_count_fault(&counted(page)->c, node);
    pthread_mutex_unlock(&mig.lock);
}

void migrate_note_write(size_t page, int node, size_t bytes)
{
    if (!mig.pages || !bytes)
        return;
    pthread_mutex_lock(&mig.lock);
    migrate_count_write(&counted(page)->c, node, job()->rank, bytes);
    pthread_mutex_unlock(&mig.lock);
}

/* DSM_CHECK: only the page's home gives it away, to another node, once at
 * a time. Caller holds mig.lock. */
static void check_hand_over(size_t page, int to)
{
    int me = job()->rank, h = mem_home(page);
    if (h != me || to == me || to < 0 || to >= job()->nodes || mig.pages[page].in_flight)
        check_violated("home: only the home gives a page away, once at a time",
                       "page %zu: node %d gives it to node %d, believing its home is node %d%s", page, me,
                       to, h, mig.pages[page].in_flight ? ", while its last move is unacknowledged" : "");
}

void migrate_send(int to, size_t page, uint32_t version, const uint64_t *set, size_t words,
                  const void *data)
{
    struct migrate_msg m = {.page = (uint32_t)page, .version = version, .words = (uint32_t)words};
    struct iovec iov[3] = {{.iov_base = &m, .iov_len = sizeof m},
                           {.iov_base = (void *)set, .iov_len = words * sizeof *set},
                           {.iov_base = (void *)data, .iov_len = mem.page_size}};
    /* The successor first, then the home: the delivering thread reads a
     * page's home and then, if it is another node, the successor
     * (on_page_req, hlrc's run requests, home_diff) without the protocol's
     * lock, while this runs on the program's thread. Set the other way
     * round, a request for the page arriving in between found this node
     * neither home nor former home (docs/migration.md, "Giving a home
     * away"). */
    pthread_mutex_lock(&mig.lock);
    if (check_on())
        check_hand_over(page, to);
    m.gen = ++mig.pages[page].gen;
    mig.pages[page].next1 = (int16_t)(to + 1);
    mig.pages[page].in_flight = 1;
    mig.acks_due++;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    mem_set_home(page, to);
    pthread_mutex_unlock(&mig.lock);
    ipc_sendv(to, COH_MIGRATE, 0, iov, 3);
}

/* Whether the page, counted here, would move now, and where (-1: stays).
 * Caller holds mig.lock. */
static int destination(size_t page, enum migrate_reason *why)
{
    int me = job()->rank;
    struct mig_page *g = &mig.pages[page];
    *why = MIGRATE_STAY;
    if (mem_home(page) != me || mig.window < g->frozen_until ||
        (mem_base_node(page) == me && mem_home_pinned(page)))
        return -1;
    /* Moved for the loops' division in use: it went where that division
     * puts its work, and stays there until the division changes. */
    if (g->division1 && g->division1 - 1 == (uint32_t)mig.repartitions)
        return -1;
    return migrate_decide(&g->c, me, mig.pages_on, mig.homes_on, g->returns > 0, why);
}

/* A page that came back here bounces between writers whose phases
 * alternate: its counts run over its whole stay (they are kept from one
 * window to the next while it is frozen), and it is judged on them when
 * the stay ends — by who wrote most over the stay, not by whichever phase
 * the last window fell in. Caller holds mig.lock. */
static bool judged_over_stays(size_t page)
{
    return mig.pages[page].returns && mem_home(page) == job()->rank;
}

static uint32_t stay_windows(const struct mig_page *g)
{
    return (uint32_t)FREEZE_WINDOWS << 2 * g->returns;
}

/* Ends the window's counting here: forgets every count, but those of the
 * pages judged over their stays (judged_over_stays) when `keep`: a page
 * still in its stay keeps counting, and one whose stay has ended was
 * judged in this window — if it stays here, its counts start a new stay
 * of the same length (a page given away is judged afresh where it goes).
 * Caller holds mig.lock; frees what it returns (the pages that were
 * counted). */
static uint32_t *take_list(size_t *n, bool keep)
{
    uint32_t *list = mig.listed;
    *n = mig.nlisted;
    mig.listed = NULL;
    mig.nlisted = mig.cap_listed = 0;
    for (size_t i = 0; i < *n; i++) {
        struct mig_page *g = &mig.pages[list[i]];
        g->listed = 0;
        if (keep && judged_over_stays(list[i])) {
            if (mig.window < g->frozen_until)
                continue;
            g->frozen_until = mig.window + stay_windows(g);
        }
        g->c = (struct migrate_counts){0};
    }
    return list;
}

/* At the end of a window, before this node arrives at the barrier: does
 * any page counted here qualify to move? If so, the counts stay for the
 * migration round (they grow until then: diffs of this epoch from nodes
 * not yet arrived); if not, the window ends here, and what still comes
 * in is counted in the next one. */
static bool vote(void)
{
    uint64_t rep = stats_get(STAT_PAR_REPARTITIONS), timed = stats_get(STAT_PAR_PROFILED_RUNS);
    /* A profiled loop re-partitioned since the last window, or ran while
     * still being measured (it may re-partition at its next decision):
     * its division, and so who touches which page, is not settled. Counts
     * are dropped, nothing moves. Once every loop has stopped profiling
     * (Fig. 4's stop rule, loopsite.c), windows count again. */
    bool hold = rep != mig.repartitions || timed != mig.timed;
    /* A loop still profiled that has not run in this window (windows can
     * be shorter than the time between its executions) holds too, until
     * no profiled loop has run for DORMANT_WINDOWS: a loop run once, or
     * never again, does not hold migration for ever. */
    if (timed != mig.timed)
        mig.timed_window = mig.window;
    else if (stats_get(STAT_PAR_PROFILING) && mig.window - mig.timed_window < DORMANT_WINDOWS)
        hold = true;
    mig.repartitions = rep;
    mig.timed = timed;
    pthread_mutex_lock(&mig.lock);
    mig.window++;
    bool any = false;
    for (size_t i = 0; i < mig.nlisted && !hold && !any; i++) {
        enum migrate_reason why;
        any = destination(mig.listed[i], &why) >= 0;
    }
    size_t n = 0;
    if (!any)
        free(take_list(&n, !hold));
    pthread_mutex_unlock(&mig.lock);
    if (hold && n)
        stats_add(STAT_MIGRATE_HELD, 1);
    return any;
}

/* The migration round, at a node that voted for it: each page counted here
 * whose home it still is and that qualifies goes to its new home (at most
 * mig.max). Runs with every node inside the barrier. */
static void window(void)
{
    pthread_mutex_lock(&mig.lock);
    size_t n = mig.nlisted;
    int *to = malloc((n ? n : 1) * sizeof *to);
    enum migrate_reason *why = malloc((n ? n : 1) * sizeof *why);
    if (!to || !why)
        log_fatal("out of memory for a migration round");
    for (size_t i = 0; i < n; i++) /* decided on before take_list forgets the counts */
        to[i] = destination(mig.listed[i], &why[i]);
    uint32_t *list = take_list(&n, true);
    pthread_mutex_unlock(&mig.lock);
    uint64_t moved = 0;
    for (size_t i = 0; i < n && moved < mig.max; i++) {
        if (to[i] < 0 || !mig.ops->give(list[i], to[i]))
            continue;
        moved++;
        stats_add(why[i] == MIGRATE_FOR_WRITES ? STAT_MIGRATE_HOMES : STAT_MIGRATE_PAGES, 1);
        PROFILE_PAGE(PROF_MIGRATE, 0, list[i], (uint64_t)to[i]);
    }
    free(to);
    free(why);
    free(list);
}

bool migrate_barrier_vote(void)
{
    if (!mig.pages || mig.fence) /* the migration round itself ends no window */
        return false;
    if (++mig.barriers % mig.period)
        return false;
    mig.voted = vote();
    return mig.voted;
}

bool migrate_join_wants_barrier(void)
{
    if (!mig.pages)
        return false;
    if ((mig.barriers + 1) % mig.period == 0)
        return true;
    mig.barriers++;
    return false;
}

bool migrate_barrier_done(uint32_t votes)
{
    if (!mig.pages)
        return false;
    if (mig.fence) { /* the migration round is over: every move is complete */
        mig.fence = false;
        return false;
    }
    if (!votes) /* no node has a page to give: no round */
        return false;
    uint64_t t0 = clock_ns();
    coherence_lock();
    if (mig.voted) /* a node that voted no counts on into its next window */
        window();
    mig.voted = false;
    mem_protect_flush();
    /* Every page given away is in place at its new home before this node
     * arrives at the round that ends the window. */
    coherence_wait_for(&mig.lock, &mig.acks_due, 0);
    __atomic_add_fetch(&mig.rounds, 1, __ATOMIC_RELEASE);
    coherence_unlock();
    stats_add(STAT_T_MIGRATE_NS, clock_ns() - t0);
    stats_add(STAT_MIGRATE_ROUNDS, 1);
    mig.fence = true;
    return true;
}

/* ---- handlers ----------------------------------------------------------- */

static void on_migrate(int src, const void *msg, size_t len)
{
    struct migrate_msg m;
    size_t rest;
    const char *tail = ipc_body(src, msg, len, &m, sizeof m, &rest, "migrated page");
    uint64_t set[VT_MAX_NODES / 64] = {0};
    if (!mig.pages || m.page >= mem.npages || !m.gen || m.words > VT_MAX_NODES / 64 ||
        rest != m.words * sizeof *set + mem.page_size)
        log_fatal("node %d sent a migrated page nobody expected, or a malformed one", src);
    /* Its giver was home at generation m.gen - 1, and nobody else then:
     * this node cannot be home already, nor have heard of a later move. */
    if (mem_home(m.page) == job()->rank || (check_on() && m.gen <= mig.pages[m.page].gen))
        check_violated("home: one home at a time, generations only grow",
                       "page %u: node %d gives it to node %d as its home of generation %u; node %d %s "
                       "generation %u",
                       m.page, src, job()->rank, m.gen, job()->rank,
                       mem_home(m.page) == job()->rank ? "is its home already, of" : "has heard of",
                       mig.pages[m.page].gen);
    memcpy(set, tail, m.words * sizeof *set);
    mig.ops->take(src, m.page, m.version, set, m.words, tail + m.words * sizeof *set);
    pthread_mutex_lock(&mig.lock);
    struct mig_page *g = &mig.pages[m.page];
    g->gen = m.gen;
    g->c = (struct migrate_counts){0};
    if (g->next1 && g->returns < MAX_RETURNS) /* this node gave it away before */
        g->returns++;
    g->frozen_until = mig.window + 1 + stay_windows(g);
    /* The window's vote read the division's counters, alike on every node
     * (every node takes the same profiling decisions). */
    g->division1 = stats_get(STAT_PAR_PROFILED_RUNS) ? (uint32_t)mig.repartitions + 1 : 0;
    pthread_mutex_unlock(&mig.lock);
    stats_add(STAT_MIGRATE_IN, 1);
    PROFILE_PAGE(PROF_MIGRATE, 1, m.page, (uint64_t)src);
    /* The base node names this node from now on (it holds the page); so
     * does every node with a copy, before any invalidation or update from
     * here reaches it (per-peer order). */
    int me = job()->rank, base = mem_base_node(m.page);
    struct moved_msg mv = {.page = m.page, .gen = m.gen}, ack = {.page = m.page};
    ipc_batch_begin();
    for (int node = 0; node < job()->nodes; node++) {
        bool holder = (set[node / 64] >> (node % 64)) & 1;
        if (node != me && node != src && (node == base || holder))
            ipc_send(node, COH_HOME_MOVED, 0, &mv, sizeof mv);
    }
    ipc_send(src, COH_MIGRATE_ACK, 0, &ack, sizeof ack);
    ipc_batch_end();
}

static void on_migrate_ack(int src, const void *msg, size_t len)
{
    struct moved_msg mv;
    ipc_body(src, msg, len, &mv, sizeof mv, NULL, "migration acknowledgement");
    pthread_mutex_lock(&mig.lock);
    if (!mig.pages || mv.page >= mem.npages || mv.gen || mig.pages[mv.page].next1 != src + 1 ||
        mig.acks_due <= 0)
        log_fatal("node %d acknowledged a migrated page that was not sent to it", src);
    if (check_on() && mem_home(mv.page) == job()->rank)
        check_violated("home: one home at a time", "page %u: node %d took it from node %d, which still "
                       "believes it is its home", mv.page, src, job()->rank);
    mig.acks_due--;
    mig.pages[mv.page].in_flight = 0;
    /* The requests held for it go on now (the new home has the page). */
    struct held_req *due = NULL;
    size_t ndue = 0, kept = 0;
    for (size_t i = 0; i < mig.nheld; i++)
        ndue += mig.held[i].page == mv.page;
    if (ndue && !(due = malloc(ndue * sizeof *due)))
        log_fatal("out of memory forwarding requests for a migrated page");
    ndue = 0;
    for (size_t i = 0; i < mig.nheld; i++) {
        if (mig.held[i].page == mv.page)
            due[ndue++] = mig.held[i];
        else
            mig.held[kept++] = mig.held[i];
    }
    mig.nheld = kept;
    pthread_mutex_unlock(&mig.lock);
    for (size_t i = 0; i < ndue; i++)
        home_forward(due[i].page, due[i].requester, due[i].need);
    free(due);
    ipc_notify();
}

static void on_home_moved(int src, const void *msg, size_t len)
{
    struct moved_msg mv;
    ipc_body(src, msg, len, &mv, sizeof mv, NULL, "home change");
    if (!mig.pages || mv.page >= mem.npages || !mv.gen || src == job()->rank)
        log_fatal("node %d sent a malformed home change", src);
    /* A late one (the page has moved on since, even here) is older than
     * what this node knows: it changes nothing. A home keeps its own
     * knowledge; news of a home as recent as itself, or more, would mean
     * two homes at once. */
    pthread_mutex_lock(&mig.lock);
    struct mig_page *g = &mig.pages[mv.page];
    uint32_t known = g->gen;
    bool home = mem_home(mv.page) == job()->rank;
    if (!home && mv.gen > known) {
        g->gen = mv.gen;
        mem_set_home(mv.page, src);
    }
    pthread_mutex_unlock(&mig.lock);
    if (check_on() && home && mv.gen >= known)
        check_violated("home: one home at a time",
                       "page %u: node %d is its home of generation %u, node %d of generation %u",
                       mv.page, job()->rank, known, src, mv.gen);
}

void migrate_start(const struct home_ops *ops)
{
    const struct coherence_params *c = coherence_params();
    mig.ops = ops;
    ipc_register(COH_MIGRATE, "MIGRATE", on_migrate, NULL);
    ipc_register(COH_MIGRATE_ACK, "MIGRATE_ACK", on_migrate_ack, NULL);
    ipc_register(COH_HOME_MOVED, "HOME_MOVED", on_home_moved, NULL);
    if (!(c->migrate_pages || c->migrate_homes) || !ops->give || !ops->take)
        return;
    mig.pages_on = c->migrate_pages;
    mig.homes_on = c->migrate_homes;
    mig.period = c->migrate_period;
    /* No limit by default: a page qualifies only when one node dominates
     * its writes or faults, and moving it costs one page's transfer, what
     * a single diff of it written whole costs; left where it is, it costs
     * a twin and a diff at every release that wrote it. A limit of a few
     * hundred pages a round left NPB MG and FT class A (hundreds of MB
     * per array, a few dozen rounds) sending most of their arrays as
     * diffs for the whole run (docs/migration.md). */
    mig.max = c->migrate_max ? c->migrate_max : UINT64_MAX;
    if (job()->nodes > INT16_MAX - 1)
        log_fatal("migration: at most %d nodes", INT16_MAX - 1);
    void *p = mmap(NULL, mem.npages * sizeof *mig.pages, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        log_fatal("out of memory for the migration counts");
    mig.pages = p;
}

void migrate_finish(void)
{
    pthread_mutex_lock(&mig.lock);
    if (mig.pages)
        munmap(mig.pages, mem.npages * sizeof *mig.pages);
    mig.pages = NULL;
    free(mig.listed);
    mig.listed = NULL;
    mig.nlisted = mig.cap_listed = 0;
    free(mig.held);
    mig.held = NULL;
    mig.nheld = mig.cap_held = 0;
    mig.fence = false;
    mig.barriers = 0;
    pthread_mutex_unlock(&mig.lock);
}
