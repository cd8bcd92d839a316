/*
 * spin.c — a short, bounded busy wait before sleeping (spin.h).
 */
#include "base/spin.h"

#include <sched.h>

#include "base/clock.h"
#include "base/smp.h"
#include "base/state.h"

/* The longest spin (a wake-up here costs 20-50 µs: docs/performance.md,
 * "SMP nodes"), and the shortest a site's allowance falls to, from which
 * waits that end quickly grow it back. */
#define SPIN_MIN_NS 1000u

static DSM_STATE uint32_t spin_max_ns = SPIN_DEFAULT_NS;

void spin_set_max(uint64_t ns)
{
    __atomic_store_n(&spin_max_ns, ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns, __ATOMIC_RELAXED);
}

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

/* Whether the node runs more threads than this process may use CPUs.
 * Read each time: a team's size changes between OpenMP regions. */
static bool oversubscribed(void)
{
    static DSM_STATE int cpus; /* the same value for every thread that computes it */
    if (!__atomic_load_n(&cpus, __ATOMIC_RELAXED)) {
        cpu_set_t set;
        int n = sched_getaffinity(0, sizeof set, &set) ? 1 : CPU_COUNT(&set);
        __atomic_store_n(&cpus, n > 0 ? n : 1, __ATOMIC_RELAXED);
    }
    return smp_threads() > __atomic_load_n(&cpus, __ATOMIC_RELAXED);
}

bool spin_until(struct spin *s, bool (*done)(void *), void *arg)
{
    if (done(arg))
        return true;
    uint32_t max = __atomic_load_n(&spin_max_ns, __ATOMIC_RELAXED);
    if (!max)
        return false; /* blocktime 0: sleep at once */
    if (oversubscribed()) {
        sched_yield();
        return done(arg);
    }
    if (!s->ns || s->ns > max)
        s->ns = max;
    uint64_t start = clock_ns();
    for (unsigned i = 1;; i++) {
        cpu_relax();
        if (done(arg)) {
            s->ns = s->ns < max / 2 ? s->ns * 2 : max;
            return true;
        }
        if (!(i % 32) && clock_ns() - start > s->ns)
            break;
    }
    s->ns = s->ns / 2 > SPIN_MIN_NS ? s->ns / 2 : SPIN_MIN_NS < max ? SPIN_MIN_NS : max;
    return false;
}

static bool mutex_taken(void *m) { return !pthread_mutex_trylock(m); }

void spin_mutex_lock(struct spin *s, pthread_mutex_t *m)
{
    if (!spin_until(s, mutex_taken, m))
        pthread_mutex_lock(m);
}
