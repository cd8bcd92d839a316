/*
 * wrap_pthread.c — libdsm-start.a: the program's POSIX threads calls
 * (dsmcc links with -Wl,--wrap= for each, tools/dsmcc.in). Each goes to
 * libdsm's (include/dsm/pthread.h), which spreads the program's threads
 * over the nodes and makes its mutexes, conditions, barriers, read-write
 * locks, spin locks, once controls and semaphores in shared memory the
 * job's; on one node, and for objects in private memory, libdsm calls the
 * C library's own. Only the program's calls are wrapped: the C library's
 * and other libraries' own use of these stays theirs.
 */
#include <dsm/pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <threads.h>
#include <unistd.h>

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg);
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) { return dsm_pthread_create(thread, attr, start, arg); }

int __wrap_pthread_join(pthread_t thread, void **value);
int __wrap_pthread_join(pthread_t thread, void **value) { return dsm_pthread_join(thread, value); }

int __wrap_pthread_detach(pthread_t thread);
int __wrap_pthread_detach(pthread_t thread) { return dsm_pthread_detach(thread); }

pthread_t __wrap_pthread_self(void);
pthread_t __wrap_pthread_self(void) { return dsm_pthread_self(); }

int __wrap_pthread_equal(pthread_t a, pthread_t b);
int __wrap_pthread_equal(pthread_t a, pthread_t b) { return dsm_pthread_equal(a, b); }

int __wrap_pthread_kill(pthread_t thread, int sig);
int __wrap_pthread_kill(pthread_t thread, int sig) { return dsm_pthread_kill(thread, sig); }

int __wrap_pthread_cancel(pthread_t thread);
int __wrap_pthread_cancel(pthread_t thread) { return dsm_pthread_cancel(thread); }

pid_t __wrap_fork(void);
pid_t __wrap_fork(void) { return dsm_fork(); }

int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr);
int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr) { return dsm_pthread_mutex_init(m, attr); }

int __wrap_pthread_mutex_destroy(pthread_mutex_t *m);
int __wrap_pthread_mutex_destroy(pthread_mutex_t *m) { return dsm_pthread_mutex_destroy(m); }

int __wrap_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m) { return dsm_pthread_mutex_lock(m); }

int __wrap_pthread_mutex_trylock(pthread_mutex_t *m);
int __wrap_pthread_mutex_trylock(pthread_mutex_t *m) { return dsm_pthread_mutex_trylock(m); }

int __wrap_pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime);
int __wrap_pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) { return dsm_pthread_mutex_timedlock(m, abstime); }

int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m) { return dsm_pthread_mutex_unlock(m); }

int __wrap_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr);
int __wrap_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr) { return dsm_pthread_cond_init(c, attr); }

int __wrap_pthread_cond_destroy(pthread_cond_t *c);
int __wrap_pthread_cond_destroy(pthread_cond_t *c) { return dsm_pthread_cond_destroy(c); }

int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { return dsm_pthread_cond_wait(c, m); }

int __wrap_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime);
int __wrap_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime) { return dsm_pthread_cond_timedwait(c, m, abstime); }

int __wrap_pthread_cond_signal(pthread_cond_t *c);
int __wrap_pthread_cond_signal(pthread_cond_t *c) { return dsm_pthread_cond_signal(c); }

int __wrap_pthread_cond_broadcast(pthread_cond_t *c);
int __wrap_pthread_cond_broadcast(pthread_cond_t *c) { return dsm_pthread_cond_broadcast(c); }

int __wrap_pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr, unsigned count);
int __wrap_pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr, unsigned count) { return dsm_pthread_barrier_init(b, attr, count); }

int __wrap_pthread_barrier_destroy(pthread_barrier_t *b);
int __wrap_pthread_barrier_destroy(pthread_barrier_t *b) { return dsm_pthread_barrier_destroy(b); }

int __wrap_pthread_barrier_wait(pthread_barrier_t *b);
int __wrap_pthread_barrier_wait(pthread_barrier_t *b) { return dsm_pthread_barrier_wait(b); }

int __wrap_pthread_once(pthread_once_t *once, void (*init)(void));
int __wrap_pthread_once(pthread_once_t *once, void (*init)(void)) { return dsm_pthread_once(once, init); }

int __wrap_pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr);
int __wrap_pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr) { return dsm_pthread_rwlock_init(rw, attr); }

int __wrap_pthread_rwlock_destroy(pthread_rwlock_t *rw);
int __wrap_pthread_rwlock_destroy(pthread_rwlock_t *rw) { return dsm_pthread_rwlock_destroy(rw); }

int __wrap_pthread_rwlock_rdlock(pthread_rwlock_t *rw);
int __wrap_pthread_rwlock_rdlock(pthread_rwlock_t *rw) { return dsm_pthread_rwlock_rdlock(rw); }

int __wrap_pthread_rwlock_wrlock(pthread_rwlock_t *rw);
int __wrap_pthread_rwlock_wrlock(pthread_rwlock_t *rw) { return dsm_pthread_rwlock_wrlock(rw); }

int __wrap_pthread_rwlock_tryrdlock(pthread_rwlock_t *rw);
int __wrap_pthread_rwlock_tryrdlock(pthread_rwlock_t *rw) { return dsm_pthread_rwlock_tryrdlock(rw); }

int __wrap_pthread_rwlock_trywrlock(pthread_rwlock_t *rw);
int __wrap_pthread_rwlock_trywrlock(pthread_rwlock_t *rw) { return dsm_pthread_rwlock_trywrlock(rw); }

int __wrap_pthread_rwlock_timedrdlock(pthread_rwlock_t *rw, const struct timespec *abstime);
int __wrap_pthread_rwlock_timedrdlock(pthread_rwlock_t *rw, const struct timespec *abstime) { return dsm_pthread_rwlock_timedrdlock(rw, abstime); }

int __wrap_pthread_rwlock_timedwrlock(pthread_rwlock_t *rw, const struct timespec *abstime);
int __wrap_pthread_rwlock_timedwrlock(pthread_rwlock_t *rw, const struct timespec *abstime) { return dsm_pthread_rwlock_timedwrlock(rw, abstime); }

int __wrap_pthread_rwlock_unlock(pthread_rwlock_t *rw);
int __wrap_pthread_rwlock_unlock(pthread_rwlock_t *rw) { return dsm_pthread_rwlock_unlock(rw); }

int __wrap_pthread_spin_init(pthread_spinlock_t *s, int pshared);
int __wrap_pthread_spin_init(pthread_spinlock_t *s, int pshared) { return dsm_pthread_spin_init(s, pshared); }

int __wrap_pthread_spin_destroy(pthread_spinlock_t *s);
int __wrap_pthread_spin_destroy(pthread_spinlock_t *s) { return dsm_pthread_spin_destroy(s); }

int __wrap_pthread_spin_lock(pthread_spinlock_t *s);
int __wrap_pthread_spin_lock(pthread_spinlock_t *s) { return dsm_pthread_spin_lock(s); }

int __wrap_pthread_spin_trylock(pthread_spinlock_t *s);
int __wrap_pthread_spin_trylock(pthread_spinlock_t *s) { return dsm_pthread_spin_trylock(s); }

int __wrap_pthread_spin_unlock(pthread_spinlock_t *s);
int __wrap_pthread_spin_unlock(pthread_spinlock_t *s) { return dsm_pthread_spin_unlock(s); }

int __wrap_sem_init(sem_t *s, int pshared, unsigned value);
int __wrap_sem_init(sem_t *s, int pshared, unsigned value) { return dsm_sem_init(s, pshared, value); }

int __wrap_sem_destroy(sem_t *s);
int __wrap_sem_destroy(sem_t *s) { return dsm_sem_destroy(s); }

int __wrap_sem_wait(sem_t *s);
int __wrap_sem_wait(sem_t *s) { return dsm_sem_wait(s); }

int __wrap_sem_trywait(sem_t *s);
int __wrap_sem_trywait(sem_t *s) { return dsm_sem_trywait(s); }

int __wrap_sem_timedwait(sem_t *s, const struct timespec *abstime);
int __wrap_sem_timedwait(sem_t *s, const struct timespec *abstime) { return dsm_sem_timedwait(s, abstime); }

int __wrap_sem_post(sem_t *s);
int __wrap_sem_post(sem_t *s) { return dsm_sem_post(s); }

int __wrap_sem_getvalue(sem_t *s, int *value);
int __wrap_sem_getvalue(sem_t *s, int *value) { return dsm_sem_getvalue(s, value); }

void __wrap_pthread_exit(void *value) __attribute__((noreturn));
void __wrap_pthread_exit(void *value) { dsm_pthread_exit(value); }

sem_t *__wrap_sem_open(const char *name, int oflag, ...);
sem_t *__wrap_sem_open(const char *name, int oflag, ...)
{
    if (!(oflag & O_CREAT))
        return dsm_sem_open(name, oflag);
    va_list ap;
    va_start(ap, oflag);
    unsigned mode = va_arg(ap, unsigned);
    unsigned value = va_arg(ap, unsigned);
    va_end(ap);
    return dsm_sem_open(name, oflag, mode, value);
}

/* ---- thread-specific data (runtime/pthread_key.c) ------------------------ */

int __wrap_pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
int __wrap_pthread_key_create(pthread_key_t *key, void (*destructor)(void *)) { return dsm_pthread_key_create(key, destructor); }

int __wrap_pthread_key_delete(pthread_key_t key);
int __wrap_pthread_key_delete(pthread_key_t key) { return dsm_pthread_key_delete(key); }

void *__wrap_pthread_getspecific(pthread_key_t key);
void *__wrap_pthread_getspecific(pthread_key_t key) { return dsm_pthread_getspecific(key); }

int __wrap_pthread_setspecific(pthread_key_t key, const void *value);
int __wrap_pthread_setspecific(pthread_key_t key, const void *value) { return dsm_pthread_setspecific(key, value); }

int __wrap_tss_create(tss_t *key, tss_dtor_t destructor);
int __wrap_tss_create(tss_t *key, tss_dtor_t destructor) { return dsm_tss_create(key, destructor); }

void __wrap_tss_delete(tss_t key);
void __wrap_tss_delete(tss_t key) { dsm_tss_delete(key); }

void *__wrap_tss_get(tss_t key);
void *__wrap_tss_get(tss_t key) { return dsm_tss_get(key); }

int __wrap_tss_set(tss_t key, void *value);
int __wrap_tss_set(tss_t key, void *value) { return dsm_tss_set(key, value); }

/* ---- sleeping and yielding: another thread of the node runs meanwhile ---- */

int __wrap_sched_yield(void);
int __wrap_sched_yield(void) { return dsm_sched_yield(); }

int __wrap_pthread_yield(void);
int __wrap_pthread_yield(void) { return dsm_sched_yield(); }

unsigned __real_sleep(unsigned seconds);
unsigned __wrap_sleep(unsigned seconds);
unsigned __wrap_sleep(unsigned seconds)
{
    dsm_block_begin();
    unsigned left = __real_sleep(seconds);
    dsm_block_end();
    return left;
}

int __real_usleep(useconds_t us);
int __wrap_usleep(useconds_t us);
int __wrap_usleep(useconds_t us)
{
    dsm_block_begin();
    int rc = __real_usleep(us);
    dsm_block_end();
    return rc;
}

int __real_nanosleep(const struct timespec *req, struct timespec *rem);
int __wrap_nanosleep(const struct timespec *req, struct timespec *rem);
int __wrap_nanosleep(const struct timespec *req, struct timespec *rem)
{
    dsm_block_begin();
    int rc = __real_nanosleep(req, rem);
    dsm_block_end();
    return rc;
}

int __real_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem);
int __wrap_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem);
int __wrap_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    dsm_block_begin();
    int rc = __real_clock_nanosleep(clock, flags, req, rem);
    dsm_block_end();
    return rc;
}

/* ---- joins with a limit; what is a thread's own node's ------------------- */

int __wrap_pthread_tryjoin_np(pthread_t thread, void **value);
int __wrap_pthread_tryjoin_np(pthread_t thread, void **value) { return dsm_pthread_tryjoin_np(thread, value); }

int __wrap_pthread_timedjoin_np(pthread_t thread, void **value, const struct timespec *abstime);
int __wrap_pthread_timedjoin_np(pthread_t thread, void **value, const struct timespec *abstime) { return dsm_pthread_timedjoin_np(thread, value, abstime); }

int __wrap_pthread_clockjoin_np(pthread_t thread, void **value, clockid_t clock, const struct timespec *abstime);
int __wrap_pthread_clockjoin_np(pthread_t thread, void **value, clockid_t clock, const struct timespec *abstime) { return dsm_pthread_clockjoin_np(thread, value, clock, abstime); }

int __wrap_pthread_sigqueue(pthread_t thread, int sig, const union sigval value);
int __wrap_pthread_sigqueue(pthread_t thread, int sig, const union sigval value) { return dsm_pthread_sigqueue(thread, sig, value); }

int __wrap_pthread_getattr_np(pthread_t thread, pthread_attr_t *attr);
int __wrap_pthread_getattr_np(pthread_t thread, pthread_attr_t *attr) { return dsm_pthread_getattr_np(thread, attr); }

int __wrap_pthread_setname_np(pthread_t thread, const char *name);
int __wrap_pthread_setname_np(pthread_t thread, const char *name) { return dsm_pthread_setname_np(thread, name); }

int __wrap_pthread_getname_np(pthread_t thread, char *name, size_t len);
int __wrap_pthread_getname_np(pthread_t thread, char *name, size_t len) { return dsm_pthread_getname_np(thread, name, len); }

int __wrap_pthread_getschedparam(pthread_t thread, int *policy, struct sched_param *param);
int __wrap_pthread_getschedparam(pthread_t thread, int *policy, struct sched_param *param) { return dsm_pthread_getschedparam(thread, policy, param); }

int __wrap_pthread_setschedparam(pthread_t thread, int policy, const struct sched_param *param);
int __wrap_pthread_setschedparam(pthread_t thread, int policy, const struct sched_param *param) { return dsm_pthread_setschedparam(thread, policy, param); }

int __wrap_pthread_setschedprio(pthread_t thread, int prio);
int __wrap_pthread_setschedprio(pthread_t thread, int prio) { return dsm_pthread_setschedprio(thread, prio); }

int __wrap_pthread_getcpuclockid(pthread_t thread, clockid_t *clock);
int __wrap_pthread_getcpuclockid(pthread_t thread, clockid_t *clock) { return dsm_pthread_getcpuclockid(thread, clock); }

int __wrap_daemon(int nochdir, int noclose);
int __wrap_daemon(int nochdir, int noclose) { return dsm_daemon(nochdir, noclose); }

int __wrap_atexit(void (*fn)(void));
int __wrap_atexit(void (*fn)(void)) { return dsm_atexit(fn); }

/* ---- signal dispositions, the job's (runtime/signals.c) ------------------ */

int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old) { return dsm_sigaction(sig, act, old); }

void (*__wrap_signal(int sig, void (*handler)(int)))(int);
void (*__wrap_signal(int sig, void (*handler)(int)))(int) { return dsm_signal(sig, handler); }
