/*
 * pthread_mutex.c — a dsmcc program's mutexes and spin locks in shared
 * memory are dsm locks (include/dsm/pthread.h; docs/unmodified-programs.md).
 *
 * A mutex in shared memory is a cohort lock (cohort.c) named by an id the
 * mutex itself holds: pthread_mutex_init gives it one from this node's
 * block, with no communication; a mutex made by PTHREAD_MUTEX_INITIALIZER
 * (all zero) is named at its first use, under one lock of the job, so two
 * nodes never name it twice. The id, the holder and the depth lie where
 * glibc keeps a robust mutex's list, which a normal mutex never uses, and
 * the type where glibc keeps it (so PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
 * means what it says): glibc's lock word stays 0, and the C library's
 * functions still work on the mutex after the job ends (exit handlers).
 *
 * The holder's number is written only by the holder, after it took the
 * lock and before it gives it back (then 0): a thread that reads its own
 * number there, without the lock, holds the mutex — no other write could
 * put it there. That makes recursive and error-checking mutexes cheap.
 * pthread_mutex_trylock cannot be answered without waiting for the other
 * nodes (a dsm lock has no "try"), and is refused in one line.
 */
#include <dsm.h>
#include <dsm/pthread.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/state.h"
#include "mem/mem.h"
#include "sync/sync.h"

DSM_STATE bool sync_pthreads_on;
static DSM_STATE atomic_uint next_id;
static DSM_STATE atomic_uint next_thread;
static __thread uint32_t my_number;

/* glibc's pthread_mutex_t (x86-64 and aarch64: 40 and 48 bytes): __kind
 * at byte 16, the robust list from byte 24, unused by other types. */
struct shared_mutex {
    uint32_t glibc_lock, glibc_count, glibc_owner, glibc_nusers;
    int32_t  kind;        /* glibc's __kind: PTHREAD_MUTEX_{NORMAL,RECURSIVE,ERRORCHECK} */
    uint32_t glibc_spins;
    uint32_t id;          /* the dsm lock's id; 0: not named yet */
    uint32_t owner;       /* sync_pthread_me() of the holder; 0: none */
    uint32_t depth;       /* a recursive mutex's locks by its holder */
};
_Static_assert(sizeof(struct shared_mutex) <= sizeof(pthread_mutex_t), "pthread_mutex_t too small");
/* glibc's __kind bit of a process-shared mutex (PTHREAD_MUTEX_PSHARED_BIT):
 * one another process initialised, in a file both map, which our
 * pthread_mutex_init (refusing PTHREAD_PROCESS_SHARED) never made. */
#define GLIBC_MUTEX_PSHARED 128
_Static_assert(offsetof(struct shared_mutex, id) >= 24, "the id must leave glibc's lock alone");

static __thread bool placed;

void sync_pthread_mark_placed(void) { placed = true; }
void sync_pthreads_finish(void) { sync_pthreads_on = false; }

/* With one program thread per node (T = 1) a node's lock is taken by one
 * thread at a time (lock.c): a thread dsm did not start — std::thread,
 * created inside libstdc++ where dsmcc's wrap does not reach, or a
 * library's own — would share node 0 with main. Said, rather than have
 * lock.c find the node holding the lock twice. */
bool sync_pthread_object(const volatile void *addr)
{
    if (!sync_pthreads_on || !mem_contains((const void *)addr))
        return false;
    if (!placed && !smp_multi() && gettid() != getpid())
        log_fatal("a pthread mutex, condition, barrier, lock or semaphore in shared memory (%p) "
                  "used by a thread dsm did not start (std::thread, or a library's own thread), "
                  "which runs beside another on its node: create threads with pthread_create, "
                  "or run with dsmrun --threads 2 or more", (const void *)addr);
    return true;
}

uint32_t sync_pthread_new_id(void)
{
    unsigned n = atomic_fetch_add(&next_id, 1);
    if (n >= SYNC_PTHREAD_ID_SPAN - SYNC_PTHREAD_FIXED_IDS)
        log_fatal("more than %d pthread mutexes, conditions, barriers, read-write locks and "
                  "semaphores initialised on this node", SYNC_PTHREAD_ID_SPAN - SYNC_PTHREAD_FIXED_IDS);
    return SYNC_PTHREAD_ID_BASE + (uint32_t)job()->rank * SYNC_PTHREAD_ID_SPAN +
           SYNC_PTHREAD_FIXED_IDS + n;
}

/* A name read without the lock is either 0 (not named, or not yet seen
 * here: naming under the lock then shows the name) or the name: it is
 * written once, from 0. */
uint32_t sync_pthread_id_of(uint32_t *slot)
{
    uint32_t id = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (id)
        return id;
    sync_pthread_lock(SYNC_PTHREAD_NAMING_ID);
    id = *slot;
    if (!id)
        *slot = id = sync_pthread_new_id();
    sync_pthread_unlock(SYNC_PTHREAD_NAMING_ID);
    return id;
}

uint32_t sync_pthread_me(void)
{
    if (!my_number)
        my_number = ((uint32_t)job()->rank << 23) + atomic_fetch_add(&next_thread, 1) + 1;
    return my_number;
}

void sync_pthread_lock(uint32_t id)
{
    if (smp_threaded())
        sync_cohort_lock((int)id);
    else
        sync_lock((int)id);
}

bool sync_pthread_trylock(uint32_t id)
{
    return smp_threaded() ? sync_cohort_trylock((int)id) : sync_lock_try((int)id);
}

void sync_pthread_unlock(uint32_t id)
{
    if (smp_threaded())
        sync_cohort_unlock((int)id);
    else
        sync_unlock((int)id);
}

void sync_pthread_refuse(const char *call, const char *why)
{
    log_fatal("%s: %s, which dsm cannot do across nodes (docs/unmodified-programs.md, pthreads)",
              call, why);
}

/* ---- mutexes ------------------------------------------------------------ */

int dsm_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
    if (!sync_pthread_object(m))
        return pthread_mutex_init(m, attr);
    int type = PTHREAD_MUTEX_DEFAULT, pshared = PTHREAD_PROCESS_PRIVATE, robust = 0;
    if (attr) {
        pthread_mutexattr_gettype(attr, &type);
        pthread_mutexattr_getpshared(attr, &pshared);
        pthread_mutexattr_getrobust(attr, &robust);
    }
    if (pshared == PTHREAD_PROCESS_SHARED)
        sync_pthread_refuse("pthread_mutex_init", "a process-shared mutex (PTHREAD_PROCESS_SHARED) "
                            "is for other processes");
    if (robust)
        sync_pthread_refuse("pthread_mutex_init", "a robust mutex outlives its holder");
    struct shared_mutex *s = (struct shared_mutex *)m;
    *s = (struct shared_mutex){.kind = type, .id = sync_pthread_new_id()};
    return 0;
}

int dsm_pthread_mutex_destroy(pthread_mutex_t *m)
{
    if (!sync_pthread_object(m))
        return pthread_mutex_destroy(m);
    struct shared_mutex *s = (struct shared_mutex *)m;
    if (s->owner)
        return EBUSY; /* held by this thread, or seen held by another */
    return 0;
}

static int type_of(const struct shared_mutex *s) { return s->kind & 3; }

/* A lock or (try) a trylock of a mutex in shared memory. */
static int mutex_take(pthread_mutex_t *m, bool try, const char *call)
{
    struct shared_mutex *s = (struct shared_mutex *)m;
    if (s->kind & GLIBC_MUTEX_PSHARED)
        sync_pthread_refuse(call, "a process-shared mutex (made by another process, in a file "
                            "both map) is for other processes");
    uint32_t me = sync_pthread_me(), id = sync_pthread_id_of(&s->id);
    if (s->owner == me) {
        if (type_of(s) == PTHREAD_MUTEX_RECURSIVE) {
            if (s->depth == UINT32_MAX)
                return EAGAIN;
            s->depth++;
            return 0;
        }
        if (try) /* POSIX: a normal or error-checking mutex held, by anyone */
            return EBUSY;
        if (type_of(s) == PTHREAD_MUTEX_ERRORCHECK)
            return EDEADLK;
        log_fatal("pthread_mutex_lock(%p): this thread already holds the mutex, and locking a "
                  "normal mutex twice deadlocks (POSIX); make it PTHREAD_MUTEX_RECURSIVE", (void *)m);
    }
    if (!try)
        sync_pthread_lock(id);
    else if (!sync_pthread_trylock(id))
        return EBUSY;
    s->owner = me;
    s->depth = 1;
    return 0;
}

int dsm_pthread_mutex_lock(pthread_mutex_t *m)
{
    PROFILE_SITE();
    if (!sync_pthread_object(m))
        return pthread_mutex_lock(m);
    return mutex_take(m, false, "pthread_mutex_lock");
}

int dsm_pthread_mutex_trylock(pthread_mutex_t *m)
{
    PROFILE_SITE();
    if (!sync_pthread_object(m))
        return pthread_mutex_trylock(m);
    return mutex_take(m, true, "pthread_mutex_trylock");
}

int dsm_pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    if (!sync_pthread_object(m))
        return pthread_mutex_timedlock(m, abstime);
    sync_pthread_refuse("pthread_mutex_timedlock", "a lock waited for with a time limit");
}

int dsm_pthread_mutex_unlock(pthread_mutex_t *m)
{
    if (!sync_pthread_object(m))
        return pthread_mutex_unlock(m);
    struct shared_mutex *s = (struct shared_mutex *)m;
    if (s->owner != sync_pthread_me()) {
        if (type_of(s) != PTHREAD_MUTEX_NORMAL)
            return EPERM;
        log_fatal("pthread_mutex_unlock(%p): this thread does not hold the mutex", (void *)m);
    }
    if (type_of(s) == PTHREAD_MUTEX_RECURSIVE && --s->depth > 0)
        return 0;
    s->owner = 0;
    s->depth = 0;
    sync_pthread_unlock(s->id);
    return 0;
}

/* The id of a mutex this thread holds (pthread_cond_wait): its depth must
 * be 1, since the wait gives the lock up once. */
uint32_t sync_pthread_mutex_held(pthread_mutex_t *m, const char *call)
{
    struct shared_mutex *s = (struct shared_mutex *)m;
    if (s->owner != sync_pthread_me())
        return 0;
    if (s->depth != 1)
        log_fatal("%s(%p): the recursive mutex is held %u times; a wait gives up one hold",
                  call, (void *)m, s->depth);
    return s->id;
}

/* Around a condition wait: the mutex's holder leaves, and comes back. */
void sync_pthread_mutex_leave(pthread_mutex_t *m)
{
    struct shared_mutex *s = (struct shared_mutex *)m;
    s->owner = 0;
    s->depth = 0;
}

void sync_pthread_mutex_return(pthread_mutex_t *m)
{
    struct shared_mutex *s = (struct shared_mutex *)m;
    s->owner = sync_pthread_me();
    s->depth = 1;
}

/* ---- spin locks: a dsm lock whose id is the lock ------------------------ */

int dsm_pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
    if (!sync_pthread_object(l))
        return pthread_spin_init(l, pshared);
    if (pshared == PTHREAD_PROCESS_SHARED)
        sync_pthread_refuse("pthread_spin_init", "a process-shared spin lock is for other processes");
    *(volatile uint32_t *)l = sync_pthread_new_id();
    return 0;
}

int dsm_pthread_spin_destroy(pthread_spinlock_t *l)
{
    return sync_pthread_object(l) ? 0 : pthread_spin_destroy(l);
}

static uint32_t spin_id(pthread_spinlock_t *l, const char *call)
{
    uint32_t id = *(volatile uint32_t *)l;
    if (id < SYNC_PTHREAD_ID_BASE || id >= SYNC_PTHREAD_ID_END)
        log_fatal("%s(%p): a spin lock pthread_spin_init did not initialise", call, (void *)l);
    return id;
}

int dsm_pthread_spin_lock(pthread_spinlock_t *l)
{
    PROFILE_SITE();
    if (!sync_pthread_object(l))
        return pthread_spin_lock(l);
    sync_pthread_lock(spin_id(l, "pthread_spin_lock"));
    return 0;
}

int dsm_pthread_spin_trylock(pthread_spinlock_t *l)
{
    if (!sync_pthread_object(l))
        return pthread_spin_trylock(l);
    return sync_pthread_trylock(spin_id(l, "pthread_spin_trylock")) ? 0 : EBUSY;
}

int dsm_pthread_spin_unlock(pthread_spinlock_t *l)
{
    if (!sync_pthread_object(l))
        return pthread_spin_unlock(l);
    sync_pthread_unlock(spin_id(l, "pthread_spin_unlock"));
    return 0;
}
