/*
 * coherence.c — the active protocol, and the trampoline every fault goes
 * through.
 *
 * The trampoline does what is the same under every protocol: it takes the
 * fault lock (one protocol action of the program at a time: a fault, a
 * release, an acquire's notices), counts the fault and times it
 * (STAT_T_READ_FAULT_NS / STAT_T_WRITE_FAULT_NS), and calls the protocol.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/home.h"
#include "coherence/msgcheck.h"

DSM_STATE const struct coherence_ops *coh;
static DSM_STATE const struct coherence_protocol *active;

static DSM_STATE pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

void coherence_lock(void) { pthread_mutex_lock(&fault_lock); }
void coherence_unlock(void) { pthread_mutex_unlock(&fault_lock); }

static const struct coherence_protocol protocols[] = {
#define PROTOCOL(name, ops, can, description) {name, description, &ops},
#include "coherence/protocols.def"
#undef PROTOCOL
};

const struct coherence_protocol *coherence_find(const char *name)
{
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
        if (!strcmp(protocols[i].name, name))
            return &protocols[i];
    return NULL;
}

const char *coherence_name(void) { return active ? active->name : "none"; }

/* Catching up (coherence.h): the catch-up, set once; whether this
 * thread's fault found a copy newer than the node's notices (the thread's
 * own: with several threads on a node, the one whose access is retried
 * must be the one that caught up); the catch-ups begun so far, and the
 * latest of them that has ended (pulls run one at a time). */
static DSM_STATE void (*_Atomic catch_up)(void);
static __thread bool fetched_ahead;
static DSM_STATE _Atomic uint64_t pulls_begun, pulls_ended;

void coherence_set_catch_up(void (*fn)(void)) { atomic_store(&catch_up, fn); }
bool coherence_catching_up(void) { return atomic_load(&catch_up) != NULL; }
void coherence_fetched_ahead(void) { fetched_ahead = true; }

uint64_t coherence_pull_begins(void) { return atomic_fetch_add(&pulls_begun, 1) + 1; }

void coherence_pull_ends(uint64_t pull)
{
    uint64_t e = atomic_load(&pulls_ended);
    while (e < pull && !atomic_compare_exchange_weak(&pulls_ended, &e, pull))
        ;
}

uint64_t coherence_pull_mark(void) { return atomic_load(&pulls_begun); }
bool coherence_pulled_since(uint64_t mark) { return atomic_load(&pulls_ended) > mark; }

/* After the fault lock is dropped: the catch-up takes it itself. */
static void catch_up_if_ahead(void)
{
    void (*fn)(void) = atomic_load(&catch_up);
    if (fn && fetched_ahead) {
        fetched_ahead = false;
        stats_add(STAT_CATCH_UPS, 1);
        fn();
    }
}

/* This thread's time in page faults: what running its code here cost in
 * coherence (omp/task.c weighs a task taken from another node by it). */
static __thread uint64_t thread_fault_ns;

uint64_t coherence_thread_fault_ns(void) { return thread_fault_ns; }

static void read_fault(size_t page)
{
    uint64_t t0 = clock_ns();
    pthread_mutex_lock(&fault_lock);
    /* Read without the protocol's lock: a page made valid meanwhile
     * needs nothing, and one invalidated right after faults again. */
    if (!cache_touch(page, false)) {
        if (mem.pages[page].state == PAGE_INVALID)
            coh->read_fault(page);
        else if (coh->reveal)
            coh->reveal(page);
    }
    cache_faulted(page);
    pthread_mutex_unlock(&fault_lock);
    catch_up_if_ahead();
    uint64_t ns = clock_ns() - t0;
    thread_fault_ns += ns;
    stats_add(STAT_READ_FAULTS, 1);
    stats_add(STAT_T_READ_FAULT_NS, ns);
}

static void write_fault(size_t page)
{
    uint64_t t0 = clock_ns();
    pthread_mutex_lock(&fault_lock);
    if (!cache_touch(page, true))
        coh->write_fault(page);
    cache_faulted(page);
    pthread_mutex_unlock(&fault_lock);
    catch_up_if_ahead();
    uint64_t ns = clock_ns() - t0;
    thread_fault_ns += ns;
    stats_add(STAT_WRITE_FAULTS, 1);
    stats_add(STAT_T_WRITE_FAULT_NS, ns);
}

static DSM_STATE struct coherence_params params;

const struct coherence_params *coherence_params(void) { return &params; }

void coherence_start(const struct coherence_protocol *p, const struct coherence_params *set)
{
    params = *set;
    active = p;
    coh = p->ops;
    coh->start();
    static const struct mem_fault_ops fo = {.read_fault = read_fault, .write_fault = write_fault};
    mem_set_fault_ops(&fo);
}

/* Releases kept on the node so far, and the last of them a release has
 * run: pending while they differ. A release runs every kept release that
 * came before it began (their writes came before them in the program), so
 * it raises `released` to what `kept` was at its start. */
static DSM_STATE _Atomic uint64_t kept, released;

static void released_up_to(uint64_t k)
{
    uint64_t r = atomic_load(&released);
    while (r < k && !atomic_compare_exchange_weak(&released, &r, k))
        ;
}

/* Releases running on this node, and what waits for them to end
 * (coherence_after_releases). A release applies its diffs at the homes
 * (and refreshes a home's snapshots) before its interval exists. */
struct after_release { void (*fn)(void *); void *arg; };
static DSM_STATE struct {
    pthread_mutex_t       lock;
    int                   running;
    struct after_release *q;
    size_t                n, cap;
} releasing = {.lock = PTHREAD_MUTEX_INITIALIZER};

void coherence_after_releases(void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&releasing.lock);
    if (!releasing.running) {
        pthread_mutex_unlock(&releasing.lock);
        fn(arg);
        return;
    }
    if (releasing.n == releasing.cap) {
        releasing.cap = releasing.cap ? releasing.cap * 2 : 8;
        releasing.q = realloc(releasing.q, releasing.cap * sizeof *releasing.q);
        if (!releasing.q)
            log_fatal("out of memory for a flush's answer");
    }
    releasing.q[releasing.n++] = (struct after_release){fn, arg};
    pthread_mutex_unlock(&releasing.lock);
}

bool coherence_release_unfinished(void)
{
    pthread_mutex_lock(&releasing.lock);
    bool running = releasing.running > 0;
    pthread_mutex_unlock(&releasing.lock);
    return running || coherence_release_pending(coherence_release_kept());
}

void coherence_release_begins(void)
{
    pthread_mutex_lock(&releasing.lock);
    releasing.running++;
    pthread_mutex_unlock(&releasing.lock);
}

void coherence_release_ends(void)
{
    pthread_mutex_lock(&releasing.lock);
    struct after_release *q = NULL;
    size_t n = 0;
    if (--releasing.running == 0) {
        q = releasing.q;
        n = releasing.n;
        releasing.q = NULL;
        releasing.n = releasing.cap = 0;
    }
    pthread_mutex_unlock(&releasing.lock);
    for (size_t i = 0; i < n; i++)
        q[i].fn(q[i].arg);
    free(q);
}

void coherence_release(void)
{
    uint64_t k = atomic_load(&kept);
    if (coh->release) {
        uint64_t t0 = PROFILE_ON ? clock_ns() : 0;
        coherence_release_begins();
        coh->release();
        coherence_release_ends();
        if (PROFILE_ON)
            profile_release(false, t0, clock_ns() - t0);
    }
    released_up_to(k);
}

uint64_t coherence_release_keep(void)
{
    if (!coh->release_aside)
        return 0;
    return atomic_fetch_add(&kept, 1) + 1;
}

bool coherence_release_pending(uint64_t ticket) { return atomic_load(&released) < ticket; }

uint64_t coherence_release_kept(void) { return atomic_load(&kept); }

void coherence_release_aside(void)
{
    uint64_t k = atomic_load(&kept);
    uint64_t t0 = PROFILE_ON ? clock_ns() : 0;
    coherence_release_begins();
    coh->release_aside();
    coherence_release_ends();
    if (PROFILE_ON)
        profile_release(true, t0, clock_ns() - t0);
    released_up_to(k);
}

/* A barrier's release left open by release_arriving: the kept releases it
 * ran, raised to at release_sent. */
static DSM_STATE struct {
    bool     open;
    uint64_t kept;
} arriving;

void coherence_release_unawaited(void) { coherence_release_arriving(COH_NO_PARENT); }

void coherence_release_arriving(int parent)
{
    if (!coh->release_arriving || (parent < 0 && parent != COH_NO_PARENT)) {
        coherence_release();
        return;
    }
    uint64_t k = atomic_load(&kept);
    uint64_t t0 = PROFILE_ON ? clock_ns() : 0;
    coherence_release_begins();
    if (coh->release_arriving(parent)) {
        arriving.open = true;
        arriving.kept = k;
        return;
    }
    coherence_release_ends();
    if (PROFILE_ON)
        profile_release(false, t0, clock_ns() - t0);
    released_up_to(k);
}

void coherence_release_sent(void)
{
    if (coh->release_sent)
        coh->release_sent();
    if (arriving.open) {
        arriving.open = false;
        coherence_release_ends();
        released_up_to(arriving.kept);
    }
}

void coherence_arrival_from(int child, void *intervals, size_t len)
{
    if (coh->release_arriving)
        home_fill_arrival(child, intervals, len);
}

void coherence_finish(void)
{
    if (!coh || !coh->finish)
        return;
    pthread_mutex_lock(&fault_lock);
    coh->finish();
    pthread_mutex_unlock(&fault_lock);
}

void coherence_place_head(int src, const void *head, size_t head_len, void *body, size_t size,
                          size_t *skip, const char *what)
{
    size_t rest;
    ipc_body(src, head, head_len, body, size, &rest, what);
    *skip = head_len - rest;
}

void coherence_limits(struct coh_limits *l)
{
    *l = (struct coh_limits){.nodes = job()->nodes, .rank = job()->rank, .npages = mem.npages,
                             .page_size = mem.page_size};
}

struct wait {
    pthread_mutex_t *lock;
    const int       *value;
    int              target;
    const bool      *flag;
};

static bool reached(void *arg)
{
    const struct wait *w = arg;
    pthread_mutex_lock(w->lock);
    bool d = w->flag ? *w->flag : *w->value == w->target;
    pthread_mutex_unlock(w->lock);
    return d;
}

void coherence_wait_for(pthread_mutex_t *lock, const int *value, int target)
{
    struct wait w = {.lock = lock, .value = value, .target = target};
    ipc_wait(reached, &w, 0);
}

void coherence_wait_flag(pthread_mutex_t *lock, const bool *flag)
{
    struct wait w = {.lock = lock, .flag = flag};
    ipc_wait(reached, &w, 0);
}
