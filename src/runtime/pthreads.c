/*
 * pthreads.c — a dsmcc program's POSIX threads spread over the nodes
 * (include/dsm/pthread.h; docs/unmodified-programs.md, "pthreads").
 *
 * Placement. Every node has T slots (T = DSM_THREADS, dsmrun --threads;
 * main holds one of node 0's). A pthread_create takes the next node
 * round-robin, starting after node 0, that runs fewer than T of the
 * program's threads; when every node runs T, the node that runs fewest
 * (the next round-robin among those): a node then holds more threads than
 * slots, as one process may run more threads than it has CPUs. At most T
 * of a node's threads run at once, on its run slots (base/smp.h): a thread
 * gives its slot up while it waits on another (a lock, a condition, a
 * join, a sleep) and takes one again before it goes on. With T = 1 the
 * node is thus one thread to the protocol, so every protocol works; T > 1
 * is hlrc's SMP nodes (docs/design.md).
 *
 * The thread table. The placement (slots in use per node, the cursor) and
 * one record per thread lie in shared memory under one dsm lock of the
 * job, SYNC_PTHREAD_THREADS_ID, with a dsm condition of the same id for
 * joins. A pthread_t is the address of its thread's record: the same on
 * every node. The lock carries the consistency that POSIX gives thread
 * creation and joining (XBD 4.12): the creator writes the record and
 * unlocks (a release of everything it wrote before) before it asks the
 * chosen node to start the thread, and the new thread reads its routine
 * and argument under the lock (an acquire); an ending thread writes its
 * value and unlocks, and a joiner takes the lock to read it.
 *
 * Starting remotely. The creator sends the chosen node one message naming
 * the record. That node's delivery thread starts an OS thread for it (it
 * may not touch shared memory itself: a fault there would wait for a reply
 * only it can deliver); the thread then waits for a run slot before it
 * touches shared memory, and gives it up only once its end is wholly done.
 *
 * A thread's end (its routine returned, or pthread_exit) goes through the
 * C library's: cleanup handlers, then C++ thread_local destructors, then
 * thread-specific data's, among which ours (exit_key) runs the program's
 * keys' destructors (pthread_key.c) and then records the value, so a
 * joiner sees the thread wholly ended.
 */
#include <dsm.h>
#include <dsm/pthread.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "ipc/ipc.h"
#include "mem/mem.h"
#include "sync/sync.h"
#include "runtime/runtime.h"

#define PT_MAGIC   0x70746872u /* "pthr": a live record */
#define PT_TABLE_LOCK SYNC_PTHREAD_THREADS_ID

enum pt_state { PT_STARTING = 1, PT_RUNNING, PT_EXITED };

/* Shared, under PT_TABLE_LOCK. */
struct pt_table {
    uint32_t nodes, slots;
    uint32_t next;                        /* the node to try first */
    uint32_t live;                        /* placed threads not yet ended (main not counted) */
    uint32_t on_node[VT_MAX_NODES];       /* threads running on each node, main included */
    struct pthread_keys keys;             /* the program's keys (pthread_key.c) */
    struct libc_rand rand;                /* rand, random, drand48 (libc_rand.c) */
    struct pthread_atexit atexit;         /* its exit handlers (exit.c) */
};

/* Shared, under PT_TABLE_LOCK; a pthread_t points here. */
struct pt_thread {
    uint32_t          magic;
    uint32_t          node, index, state, detached;
    uint64_t          start, arg, value;  /* the routine, its argument, its result */
    struct pt_table  *table;
};

/* What the creator sends the chosen node: nothing it must read from shared
 * memory (the delivery thread starts the thread). */
struct pt_start_msg {
    uint64_t record, table, stacksize;
    uint32_t index;                       /* smp_index: its number on the node mod T */
    uint32_t pad;
    sigset_t mask;                        /* the creator's signal mask, the thread's first */
};

static DSM_STATE struct {
    pthread_mutex_t   lock;
    bool              on;
    struct pt_table  *table;              /* node 0: made at first use; others: from a start */
    struct pt_thread *main_record;        /* node 0 */
    pthread_key_t     exit_key;           /* the thread's end, after its destructors */
    int               live_here;          /* placed threads running on this node */
    uint64_t          busy_ns, busy_since;
} pt = {.lock = PTHREAD_MUTEX_INITIALIZER};

static __thread struct pt_thread *self_record;
static __thread void *exit_value;

/* ---- where threads run ------------------------------------------------- */

static bool is_main_thread(void) { return job()->rank == 0 && gettid() == getpid(); }

/* A pthread_t of ours: a live record in shared memory (a C library's
 * pthread_t points into private memory). */
static struct pt_thread *record_of(pthread_t t)
{
    struct pt_thread *r = (struct pt_thread *)t;
    if (!pt.on || !mem_contains(r))
        return NULL;
    return r;
}

/* Node 0, at its first thread: the table, with main in slot 0 of node 0. */
static void table_make(void)
{
    pthread_mutex_lock(&pt.lock);
    if (!pt.table) {
        struct pt_table *t = dsm_malloc(sizeof *t);
        struct pt_thread *m = dsm_malloc(sizeof *m);
        t->nodes = (uint32_t)job()->nodes;
        t->slots = (uint32_t)smp_threads();
        t->next = 1;
        t->on_node[0] = 1;
        *m = (struct pt_thread){.magic = PT_MAGIC, .state = PT_RUNNING, .table = t};
        pt.main_record = m;
        pt.table = t;
    }
    pthread_mutex_unlock(&pt.lock);
}

static void table_make_call(void *arg)
{
    (void)arg;
    table_make();
}

static struct pt_table *table(void)
{
    if (!pt.table && job()->rank == 0)
        stack_private(table_make_call, NULL);
    return pt.table;
}

struct pthread_keys *pthreads_keys(void)
{
    struct pt_table *t = table();
    return t ? &t->keys : NULL;
}

struct pthread_atexit *pthreads_atexit(bool make)
{
    struct pt_table *t = !pt.on ? NULL : make ? table() : pt.table;
    return t ? &t->atexit : NULL;
}

struct libc_rand *pthreads_libc_rand(void)
{
    return pthreads_keys() ? &pt.table->rand : NULL;
}

/* The node of a new thread: the next round-robin that runs fewer threads
 * than it has slots, else the one that runs fewest (the first round-robin
 * among them); and the thread's index there. Under the table's lock. */
static uint32_t place(struct pt_table *t, uint32_t *index)
{
    uint32_t best = 0;
    for (uint32_t i = 0; i < t->nodes; i++) {
        uint32_t n = (t->next + i) % t->nodes;
        if (t->on_node[n] < t->slots) {
            best = n;
            break;
        }
        if (i == 0 || t->on_node[n] < t->on_node[best])
            best = n;
    }
    *index = t->on_node[best] % t->slots;
    t->on_node[best]++;
    t->next = (best + 1) % t->nodes;
    t->live++;
    return best;
}

/* Whether p lies in the calling thread's own stack (private to its node). */
static bool on_my_private_stack(const void *p)
{
    if (stack_on_shared())
        return false; /* main's stack is shared memory */
    pthread_attr_t a;
    void *lo;
    size_t len;
    if (pthread_getattr_np(pthread_self(), &a))
        return false;
    int err = pthread_attr_getstack(&a, &lo, &len);
    pthread_attr_destroy(&a);
    return !err && (const char *)p >= (const char *)lo && (const char *)p < (const char *)lo + len;
}

/* ---- a placed thread's life on its node --------------------------------- */

static void busy_change(int delta)
{
    uint64_t now = clock_ns();
    pthread_mutex_lock(&pt.lock);
    if (pt.live_here)
        pt.busy_ns += now - pt.busy_since;
    pt.busy_since = now;
    pt.live_here += delta;
    pthread_mutex_unlock(&pt.lock);
}

uint64_t pthreads_busy_ns(void)
{
    pthread_mutex_lock(&pt.lock);
    uint64_t ns = pt.busy_ns + (pt.live_here ? clock_ns() - pt.busy_since : 0);
    pthread_mutex_unlock(&pt.lock);
    return ns;
}

/* The thread's end, once its destructors have run: its value, under the
 * table's lock, whose release carries every write it made; then its run
 * slot here is free. */
static void thread_end(struct pt_thread *r, void *value)
{
    sync_pthread_lock(PT_TABLE_LOCK);
    r->value = (uint64_t)(uintptr_t)value;
    r->state = PT_EXITED;
    struct pt_table *t = r->table;
    t->on_node[r->node]--;
    t->live--;
    bool detached = r->detached;
    if (detached)
        r->magic = 0;
    sync_cond_broadcast(PT_TABLE_LOCK);
    sync_pthread_unlock(PT_TABLE_LOCK);
    if (detached)
        dsm_free(r);
    self_record = NULL;
    busy_change(-1);
    /* The fault handler's stack (mem_fault_watch_thread) goes with us. */
    stack_t alt;
    if (sigaltstack(NULL, &alt) == 0 && !(alt.ss_flags & SS_DISABLE)) {
        stack_t off = {.ss_flags = SS_DISABLE};
        if (sigaltstack(&off, NULL) == 0)
            munmap(alt.ss_sp, alt.ss_size);
    }
    smp_slot_give();
}

/* A placed thread's end, among the C library's thread-specific
 * destructors: after its cleanup handlers and thread_local destructors,
 * the program's keys' destructors (pthread_key.c), then the end. */
static void exit_destructor(void *record)
{
    pthread_keys_exit();
    thread_end(record, exit_value);
}

struct pt_boot { struct pt_thread *record; uint32_t index; sigset_t mask; };

static void *thread_main(void *arg)
{
    struct pt_boot b = *(struct pt_boot *)arg;
    free(arg);
    /* The creator's mask, as POSIX has it, not that of the thread that
     * started this one here (the delivery thread blocks every signal). */
    pthread_sigmask(SIG_SETMASK, &b.mask, NULL);
    smp_slot_take(); /* before it touches shared memory */
    smp_set_index((int)b.index);
    mem_fault_watch_thread();
    busy_change(+1);
    stats_add(STAT_PTHREADS_RUN, 1);

    struct pt_thread *r = b.record;
    sync_pthread_lock(PT_TABLE_LOCK);
    if (r->magic != PT_MAGIC || r->state != PT_STARTING || r->node != (uint32_t)job()->rank)
        log_fatal("internal error: thread record %p is not one to start here", (void *)r);
    void *(*start)(void *) = (void *(*)(void *))(uintptr_t)r->start;
    void *start_arg = (void *)(uintptr_t)r->arg;
    r->state = PT_RUNNING;
    sync_pthread_unlock(PT_TABLE_LOCK);

    self_record = r;
    sync_pthread_mark_placed();
    pthread_setspecific(pt.exit_key, r);
    /* Returning is pthread_exit (POSIX): the same way to the end. */
    exit_value = start(start_arg);
    pthread_exit(exit_value);
}

static void start_here(struct pt_thread *r, uint32_t index, size_t stacksize,
                       const sigset_t *mask)
{
    struct pt_boot *b = malloc(sizeof *b);
    if (!b)
        log_fatal("out of memory starting a thread");
    *b = (struct pt_boot){r, index, *mask};
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED); /* joined through its record */
    if (stacksize)
        pthread_attr_setstacksize(&a, stacksize);
    pthread_t t;
    int err = pthread_create(&t, &a, thread_main, b);
    pthread_attr_destroy(&a);
    if (err)
        log_fatal("pthread_create: cannot start a thread on node %d: %s", job()->rank, strerror(err));
}

static void on_start(int src, const void *msg, size_t len)
{
    struct pt_start_msg m;
    ipc_body(src, msg, len, &m, sizeof m, NULL, "thread start");
    struct pt_thread *r = (struct pt_thread *)(uintptr_t)m.record;
    struct pt_table *t = (struct pt_table *)(uintptr_t)m.table;
    if (!pt.on || !mem_contains(r) || !mem_contains(t) || m.index >= (uint32_t)smp_threads())
        log_fatal("node %d sent a thread start that does not fit this job", src);
    pthread_mutex_lock(&pt.lock);
    pt.table = t;
    pthread_mutex_unlock(&pt.lock);
    start_here(r, m.index, (size_t)m.stacksize, &m.mask);
}

/* ---- the calls ------------------------------------------------------------ */

struct create_args {
    pthread_t *thread;
    const pthread_attr_t *attr;
    void *(*start)(void *);
    void *arg;
    bool arg_on_stack;
};

static void create_call(void *p)
{
    struct create_args a = *(struct create_args *)p;
    int detach = PTHREAD_CREATE_JOINABLE;
    size_t stacksize = 0;
    if (a.attr) {
        pthread_attr_getdetachstate(a.attr, &detach);
        pthread_attr_getstacksize(a.attr, &stacksize);
    }
    if (!pt.table) {
        if (job()->rank != 0)
            log_fatal("pthread_create on node %d by a thread dsm did not start: a program's "
                      "threads are created by main or by threads pthread_create started",
                      job()->rank);
        table_make();
    }
    struct pt_table *t = pt.table;
    struct pt_thread *r = dsm_malloc(sizeof *r);
    uint32_t index;
    sync_pthread_lock(PT_TABLE_LOCK);
    uint32_t node = place(t, &index);
    *r = (struct pt_thread){.magic = PT_MAGIC, .node = node, .index = index, .state = PT_STARTING,
                            .detached = detach == PTHREAD_CREATE_DETACHED,
                            .start = (uint64_t)(uintptr_t)a.start,
                            .arg = (uint64_t)(uintptr_t)a.arg, .table = t};
    sync_pthread_unlock(PT_TABLE_LOCK);
    if (node != (uint32_t)job()->rank && a.arg_on_stack)
        log_fatal("pthread_create: the argument %p points into the creating thread's stack, "
                  "which is node %d's own, and the thread runs on node %d: pass memory that is "
                  "shared (a global, malloc, main's locals; docs/unmodified-programs.md)",
                  a.arg, job()->rank, node);
    *a.thread = (pthread_t)r;
    sigset_t mask;
    pthread_sigmask(SIG_SETMASK, NULL, &mask);
    if (node == (uint32_t)job()->rank) {
        start_here(r, index, stacksize, &mask);
        return;
    }
    struct pt_start_msg m = {.record = (uint64_t)(uintptr_t)r, .table = (uint64_t)(uintptr_t)t,
                             .stacksize = stacksize, .index = index, .mask = mask};
    int rc = ipc_send((int)node, RUNTIME_PTHREAD_START, 0, &m, sizeof m);
    if (rc)
        log_fatal("pthread_create: cannot reach node %u: %s", node, strerror(-rc));
}

int dsm_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                       void *arg)
{
    if (!pt.on) {
        dsm_program_thread_created();
        return pthread_create(thread, attr, start, arg);
    }
    /* The stack test runs here, on the caller's own stack. */
    struct create_args a = {thread, attr, start, arg, on_my_private_stack(arg)};
    stack_private(create_call, &a);
    return 0;
}

/* A join: waits for the thread's end unless `try` (EBUSY while it runs). */
static int join(struct pt_thread *r, void **value, bool try)
{
    if (r == self_record || (r == pt.main_record && is_main_thread()))
        return EDEADLK;
    sync_pthread_lock(PT_TABLE_LOCK);
    int ret = 0;
    if (r->magic != PT_MAGIC)
        ret = ESRCH;
    else if (r->detached)
        ret = EINVAL;
    else if (try && r->state != PT_EXITED)
        ret = EBUSY;
    else {
        while (r->state != PT_EXITED)
            sync_cond_wait(PT_TABLE_LOCK, PT_TABLE_LOCK);
        if (value)
            *value = (void *)(uintptr_t)r->value;
        r->magic = 0;
    }
    sync_pthread_unlock(PT_TABLE_LOCK);
    if (!ret)
        dsm_free(r);
    return ret;
}

int dsm_pthread_join(pthread_t thread, void **value)
{
    struct pt_thread *r = record_of(thread);
    return r ? join(r, value, false) : pthread_join(thread, value);
}

int dsm_pthread_tryjoin_np(pthread_t thread, void **value)
{
    struct pt_thread *r = record_of(thread);
    return r ? join(r, value, true) : pthread_tryjoin_np(thread, value);
}

/* A join with a time limit: tries, and sleeps a millisecond between tries
 * (dsm's conditions have no timed wait), giving the node's run slot to
 * its other threads meanwhile. */
static int join_until(struct pt_thread *r, void **value, clockid_t clock,
                      const struct timespec *abstime)
{
    if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
        return EINVAL;
    for (;;) {
        int ret = join(r, value, true);
        if (ret != EBUSY)
            return ret;
        struct timespec now;
        clock_gettime(clock, &now);
        if (now.tv_sec > abstime->tv_sec ||
            (now.tv_sec == abstime->tv_sec && now.tv_nsec >= abstime->tv_nsec))
            return ETIMEDOUT;
        smp_wait_begin();
        nanosleep(&(struct timespec){0, 1000000}, NULL);
        smp_wait_end();
    }
}

int dsm_pthread_timedjoin_np(pthread_t thread, void **value, const struct timespec *abstime)
{
    struct pt_thread *r = record_of(thread);
    return r ? join_until(r, value, CLOCK_REALTIME, abstime)
             : pthread_timedjoin_np(thread, value, abstime);
}

int dsm_pthread_clockjoin_np(pthread_t thread, void **value, clockid_t clock,
                             const struct timespec *abstime)
{
    struct pt_thread *r = record_of(thread);
    return r ? join_until(r, value, clock, abstime)
             : pthread_clockjoin_np(thread, value, clock, abstime);
}

int dsm_pthread_detach(pthread_t thread)
{
    struct pt_thread *r = record_of(thread);
    if (!r)
        return pthread_detach(thread);
    sync_pthread_lock(PT_TABLE_LOCK);
    int ret = 0;
    bool gone = false;
    if (r->magic != PT_MAGIC)
        ret = ESRCH;
    else if (r->detached)
        ret = EINVAL;
    else {
        r->detached = 1;
        if ((gone = r->state == PT_EXITED))
            r->magic = 0;
    }
    sync_pthread_unlock(PT_TABLE_LOCK);
    if (gone)
        dsm_free(r);
    return ret;
}

static void count_live(void *alone)
{
    sync_pthread_lock(PT_TABLE_LOCK);
    *(bool *)alone = pt.table->live == 0;
    sync_pthread_unlock(PT_TABLE_LOCK);
}

bool pthreads_main_alone(void)
{
    if (!is_main_thread())
        return false;
    bool alone = true;
    if (pt.on && pt.table)
        stack_private(count_live, &alone);
    return alone;
}

/* main's pthread_exit: the process lives on until its other threads end
 * (POSIX), then exits with status 0. */
static void main_exit_call(void *arg)
{
    (void)arg;
    if (pt.table) {
        sync_pthread_lock(PT_TABLE_LOCK);
        while (pt.table->live)
            sync_cond_wait(PT_TABLE_LOCK, PT_TABLE_LOCK);
        sync_pthread_unlock(PT_TABLE_LOCK);
    }
}

void dsm_pthread_exit(void *value)
{
    if (self_record) {
        exit_value = value;
        pthread_exit(value);
    }
    if (pt.on && is_main_thread()) {
        pthread_keys_exit(); /* main's destructors run at its pthread_exit too */
        stack_private(main_exit_call, NULL);
        exit(0);
    }
    pthread_exit(value);
}

pthread_t dsm_pthread_self(void)
{
    if (self_record)
        return (pthread_t)self_record;
    if (pt.on && is_main_thread()) {
        if (!pt.main_record)
            stack_private(table_make_call, NULL);
        return (pthread_t)pt.main_record;
    }
    return pthread_self();
}

int dsm_pthread_equal(pthread_t a, pthread_t b) { return a == b; }

int dsm_pthread_kill(pthread_t thread, int sig)
{
    if (!record_of(thread))
        return pthread_kill(thread, sig);
    if (sig == 0)
        return 0;
    log_fatal("pthread_kill(thread, %d): signals between a program's threads, which run on "
              "different nodes, are not delivered by dsm (docs/unmodified-programs.md, pthreads)",
              sig);
}

int dsm_pthread_cancel(pthread_t thread)
{
    if (!record_of(thread))
        return pthread_cancel(thread);
    log_fatal("pthread_cancel: cancelling a thread, which may run on another node, is not "
              "supported by dsm (docs/unmodified-programs.md, pthreads)");
}

int dsm_pthread_sigqueue(pthread_t thread, int sig, const union sigval value)
{
    if (!record_of(thread))
        return pthread_sigqueue(thread, sig, value);
    if (sig == 0)
        return 0;
    log_fatal("pthread_sigqueue(thread, %d): signals between a program's threads, which run on "
              "different nodes, are not delivered by dsm (docs/unmodified-programs.md, pthreads)",
              sig);
}

/* The C library's own view of a thread (its attributes and stack, its
 * name, its scheduling, its CPU clock) is its node's: the calling
 * thread's own is answered there, another's cannot be. */
static pthread_t own_or_refuse(pthread_t thread, const char *call)
{
    struct pt_thread *r = record_of(thread);
    if (!r)
        return thread;
    if (r == self_record || (r == pt.main_record && is_main_thread()))
        return pthread_self(); /* the C library's id of this very thread */
    log_fatal("%s of another thread: the C library's record of a thread is its node's, and "
              "the thread may run on another node; call it in the thread itself "
              "(docs/unmodified-programs.md, pthreads)", call);
}

int dsm_pthread_getattr_np(pthread_t thread, pthread_attr_t *attr)
{
    return pthread_getattr_np(own_or_refuse(thread, "pthread_getattr_np"), attr);
}

int dsm_pthread_setname_np(pthread_t thread, const char *name)
{
    return pthread_setname_np(own_or_refuse(thread, "pthread_setname_np"), name);
}

int dsm_pthread_getname_np(pthread_t thread, char *name, size_t len)
{
    return pthread_getname_np(own_or_refuse(thread, "pthread_getname_np"), name, len);
}

int dsm_pthread_getschedparam(pthread_t thread, int *policy, struct sched_param *param)
{
    return pthread_getschedparam(own_or_refuse(thread, "pthread_getschedparam"), policy, param);
}

int dsm_pthread_setschedparam(pthread_t thread, int policy, const struct sched_param *param)
{
    return pthread_setschedparam(own_or_refuse(thread, "pthread_setschedparam"), policy, param);
}

int dsm_pthread_setschedprio(pthread_t thread, int prio)
{
    return pthread_setschedprio(own_or_refuse(thread, "pthread_setschedprio"), prio);
}

int dsm_pthread_getcpuclockid(pthread_t thread, clockid_t *clock)
{
    return pthread_getcpuclockid(own_or_refuse(thread, "pthread_getcpuclockid"), clock);
}

int dsm_daemon(int nochdir, int noclose)
{
    if (job()->started)
        log_fatal("daemon: it forks, and the child would share this node's view of the shared "
                  "memory without being a node of the job (docs/unmodified-programs.md, pthreads)");
    return daemon(nochdir, noclose);
}


/* A sleep, a yield: the node's other threads may run meanwhile. */
void dsm_block_begin(void) { smp_wait_begin(); }
void dsm_block_end(void) { smp_wait_end(); }

int dsm_sched_yield(void)
{
    smp_yield();
    return sched_yield();
}

/* ---- start and end ---------------------------------------------------------- */

void pthreads_start(bool on)
{
    ipc_register(RUNTIME_PTHREAD_START, "PTHREAD_START", on_start, NULL);
    pt.on = on;
    if (pt.on && pthread_key_create(&pt.exit_key, exit_destructor))
        log_fatal("cannot make the key of pthread_exit");
    if (pt.on) {
        /* A node's threads take turns on its T run slots; main holds one
         * of node 0's (this is main: dsm_startup runs on it). */
        smp_slots_enable(smp_threads());
        if (job()->rank == 0)
            smp_slot_take();
    }
}

/* After the job the calls are the C library's again (exit handlers). */
void pthreads_finish(void)
{
    pt.on = false;
    sync_pthreads_finish();
}
