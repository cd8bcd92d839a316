/*
 * smp.c — a node's application threads: how many, which one this is, and
 * the run slots they take turns on (smp.h).
 */
#include "base/smp.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/state.h"

DSM_STATE int smp_threads_per_node = 1;
DSM_STATE bool smp_slots_on; /* a pthreads program's node: its threads take turns */
static __thread int my_index;
static __thread bool application; /* smp_set_index ran on this thread */
static DSM_STATE atomic_bool parked;

/* OpenMP sets it at every region (its share of the team) and back to 1
 * after: smp_multi() and smp_threaded() follow it. */
void smp_set_threads(int threads) { smp_threads_per_node = threads > 1 ? threads : 1; }
int  smp_threads(void) { return smp_threads_per_node; }
int  smp_index(void) { return my_index; }
void smp_set_index(int index)
{
    my_index = index;
    application = true;
}

bool smp_is_application(void) { return application; }
bool smp_concurrent(void) { return smp_threads_per_node > 1 && !atomic_load(&parked); }
void smp_park(bool p) { atomic_store(&parked, p); }

/* ---- run slots ---------------------------------------------------------- */

/* Tickets keep the turns first come, first served: a thread takes the next
 * ticket and runs when every earlier one has run and a slot is free. */
static DSM_STATE struct {
    pthread_mutex_t lock;
    pthread_cond_t  cv;
    int             free;        /* slots no thread holds */
    uint64_t        head, tail;  /* the ticket served next; the next handed out */
    atomic_int      waiting;     /* tail - head, for the quick tests */
    uint64_t        free_ns;     /* the integral of free over time, to free_since */
    uint64_t        free_since;
} slots = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Under slots.lock, before free changes. */
static void count_free(void)
{
    uint64_t now = clock_ns();
    slots.free_ns += (uint64_t)slots.free * (now - slots.free_since);
    slots.free_since = now;
}

bool smp_slots_enabled(void) { return smp_slots_on; }

uint64_t smp_slots_free_ns(void)
{
    pthread_mutex_lock(&slots.lock);
    if (smp_slots_on)
        count_free();
    uint64_t ns = slots.free_ns;
    pthread_mutex_unlock(&slots.lock);
    return ns;
}

static __thread bool holder;     /* this thread takes turns on the slots */
static __thread int  wait_depth; /* > 0: it waits without its slot */

void smp_slots_enable(int n)
{
    slots.free_since = clock_ns();
    slots.free = n > 1 ? n : 1;
    smp_slots_on = true;
}

static void take(void)
{
    pthread_mutex_lock(&slots.lock);
    uint64_t ticket = slots.tail++;
    atomic_fetch_add(&slots.waiting, 1);
    while (slots.head != ticket || slots.free == 0)
        pthread_cond_wait(&slots.cv, &slots.lock);
    slots.head++;
    count_free();
    slots.free--;
    atomic_fetch_sub(&slots.waiting, 1);
    /* The next in line may find a slot free too (several were given). */
    bool more = slots.head != slots.tail && slots.free > 0;
    pthread_mutex_unlock(&slots.lock);
    if (more)
        pthread_cond_broadcast(&slots.cv);
}

static void give(void)
{
    pthread_mutex_lock(&slots.lock);
    count_free();
    slots.free++;
    bool waiters = slots.head != slots.tail;
    pthread_mutex_unlock(&slots.lock);
    if (waiters)
        pthread_cond_broadcast(&slots.cv);
}

void smp_slot_take(void)
{
    take();
    holder = true;
    wait_depth = 0;
}

void smp_slot_give(void)
{
    if (!holder)
        return;
    holder = false;
    if (wait_depth == 0)
        give();
    wait_depth = 0;
}

void smp_wait_begin(void)
{
    if (holder && wait_depth++ == 0)
        give();
}

void smp_wait_end(void)
{
    if (holder && --wait_depth == 0)
        take();
}

void smp_yield(void)
{
    if (!holder || wait_depth || atomic_load_explicit(&slots.waiting, memory_order_relaxed) == 0)
        return;
    give();
    take();
}

bool smp_off_slot(void) { return holder && wait_depth > 0; }

bool smp_may_spin(void)
{
    /* Read without the lock: a stale answer costs one spin too many or
     * too few, never a wrong result. */
    return !smp_off_slot() || __atomic_load_n(&slots.free, __ATOMIC_RELAXED) > 0;
}
int  smp_slot_waiters(void) { return atomic_load_explicit(&slots.waiting, memory_order_relaxed); }

void smp_internal_thread(void)
{
    sigset_t s;
    sigfillset(&s);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        sigdelset(&s, faults[i]);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
}
