/*
 * spin.c — a short, bounded busy wait before sleeping (spin.h).
 */
#include "base/spin.h"

#include <sched.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/smp.h"

/* How long a waiter spins before it yields (a wake-up here costs 20-50 µs:
 * docs/performance.md, "SMP nodes"), and how many times it then yields
 * before it sleeps. Bounded both ways: with T threads on fewer cores, or
 * a machine shared with other work, a waiter gives the CPU back within
 * tens of µs and sleeps soon after. */
#define SPIN_NS     50000
#define SPIN_YIELDS 8

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* Whether a node runs more threads than this process may use CPUs: then
 * spinning only keeps the awaited thread off a CPU, and a waiter yields at
 * once. Read each time: a team's size changes between OpenMP regions. */
static bool oversubscribed(void)
{
    static int cpus; /* the same value for every thread that computes it */
    if (!cpus) {
        cpu_set_t set;
        int n = sched_getaffinity(0, sizeof set, &set) ? 1 : CPU_COUNT(&set);
        __atomic_store_n(&cpus, n > 0 ? n : 1, __ATOMIC_RELAXED);
    }
    return smp_threads() > __atomic_load_n(&cpus, __ATOMIC_RELAXED);
}

bool spin_until(bool (*done)(void *), void *arg)
{
    if (done(arg))
        return true;
    if (!oversubscribed()) {
        uint64_t start = clock_ns();
        for (unsigned i = 1;; i++) {
            cpu_relax();
            if (done(arg))
                return true;
            if (!(i % 64) && clock_ns() - start > SPIN_NS)
                break;
        }
    }
    for (int y = 0; y < SPIN_YIELDS; y++) {
        sched_yield();
        if (done(arg))
            return true;
    }
    return false;
}

static bool mutex_taken(void *m) { return !pthread_mutex_trylock(m); }

void spin_mutex_lock(pthread_mutex_t *m)
{
    if (!spin_until(mutex_taken, m))
        pthread_mutex_lock(m);
}
