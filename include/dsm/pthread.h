/*
 * dsm/pthread.h — what a dsmcc program's POSIX threads calls become
 * (docs/unmodified-programs.md, "pthreads programs across the nodes").
 * A program does not include it: dsmcc links with -Wl,--wrap=pthread_create
 * (and the calls below), and libdsm-start.a's __wrap_ functions call these.
 *
 * In a job of two or more nodes (a dsmcc program that is not OpenMP):
 * - pthread_create places the thread on a node, round-robin over the
 *   nodes with fewer than T threads (T: dsmrun --threads, DSM_THREADS,
 *   default 1; main is one of node 0's), else on the node with fewest; its
 *   start routine runs there with its argument, and pthread_join returns
 *   its value. The pthread_t is dsm's, the same on every node.
 * - Mutexes, conditions, barriers, read-write locks, spin locks, once
 *   controls and unnamed semaphores that lie in shared memory (globals,
 *   the heap, main's stack) are dsm locks and conditions, named by lock
 *   and condition ids 0x20000000 to 0x3fffffff (a program calling
 *   dsm_lock itself keeps below). In private memory they stay the C
 *   library's.
 * - A node runs any number of them; at most T at once (run slots,
 *   base/smp.h), the others waiting for a turn while those wait on
 *   another thread.
 * - Thread-specific data keys, memory from mmap and signal dispositions
 *   are the job's; the CPU counts the program reads describe the job
 *   (nodes x T, or DSM_CPUS).
 * - The C library's process-wide state is the job's: one state of the
 *   random number generators (rand, random, the drand48 family), and the
 *   working directory, umask, environment and locale, changed on every
 *   node at once.
 * - What cannot work across nodes ends the job with one line: a
 *   process-shared object, fork and daemon, signals and cancellation
 *   between threads, another thread's C library record, a timed wait, a
 *   device's memory, MAP_FIXED outside the region.
 * On one node, and after the job ends (exit handlers), every call is the
 * C library's.
 */
#ifndef DSM_PTHREAD_H
#define DSM_PTHREAD_H
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <threads.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

int       dsm_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*start)(void *), void *arg);
int       dsm_pthread_join(pthread_t thread, void **value);
int       dsm_pthread_detach(pthread_t thread);
void      dsm_pthread_exit(void *value) __attribute__((noreturn));
pthread_t dsm_pthread_self(void);
int       dsm_pthread_equal(pthread_t a, pthread_t b);
int       dsm_pthread_kill(pthread_t thread, int sig);
int       dsm_pthread_cancel(pthread_t thread);
pid_t     dsm_fork(void);
int       dsm_daemon(int nochdir, int noclose);
int       dsm_atexit(void (*fn)(void));
int       dsm_pthread_tryjoin_np(pthread_t thread, void **value);
int       dsm_pthread_timedjoin_np(pthread_t thread, void **value, const struct timespec *abstime);
int       dsm_pthread_clockjoin_np(pthread_t thread, void **value, clockid_t clock,
                                   const struct timespec *abstime);
int       dsm_pthread_sigqueue(pthread_t thread, int sig, const union sigval value);
/* The C library's view of a thread: the caller's own, or refused. */
int       dsm_pthread_getattr_np(pthread_t thread, pthread_attr_t *attr);
int       dsm_pthread_setname_np(pthread_t thread, const char *name);
int       dsm_pthread_getname_np(pthread_t thread, char *name, size_t len);
int       dsm_pthread_getschedparam(pthread_t thread, int *policy, struct sched_param *param);
int       dsm_pthread_setschedparam(pthread_t thread, int policy, const struct sched_param *param);
int       dsm_pthread_setschedprio(pthread_t thread, int prio);
int       dsm_pthread_getcpuclockid(pthread_t thread, clockid_t *clock);

int dsm_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr);
int dsm_pthread_mutex_destroy(pthread_mutex_t *m);
int dsm_pthread_mutex_lock(pthread_mutex_t *m);
int dsm_pthread_mutex_trylock(pthread_mutex_t *m);
int dsm_pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime);
int dsm_pthread_mutex_unlock(pthread_mutex_t *m);

int dsm_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr);
int dsm_pthread_cond_destroy(pthread_cond_t *c);
int dsm_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int dsm_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                               const struct timespec *abstime);
int dsm_pthread_cond_signal(pthread_cond_t *c);
int dsm_pthread_cond_broadcast(pthread_cond_t *c);

int dsm_pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr,
                             unsigned count);
int dsm_pthread_barrier_destroy(pthread_barrier_t *b);
int dsm_pthread_barrier_wait(pthread_barrier_t *b);

int dsm_pthread_once(pthread_once_t *once, void (*init)(void));

int dsm_pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr);
int dsm_pthread_rwlock_destroy(pthread_rwlock_t *rw);
int dsm_pthread_rwlock_rdlock(pthread_rwlock_t *rw);
int dsm_pthread_rwlock_wrlock(pthread_rwlock_t *rw);
int dsm_pthread_rwlock_tryrdlock(pthread_rwlock_t *rw);
int dsm_pthread_rwlock_trywrlock(pthread_rwlock_t *rw);
int dsm_pthread_rwlock_timedrdlock(pthread_rwlock_t *rw, const struct timespec *abstime);
int dsm_pthread_rwlock_timedwrlock(pthread_rwlock_t *rw, const struct timespec *abstime);
int dsm_pthread_rwlock_unlock(pthread_rwlock_t *rw);

int dsm_pthread_spin_init(pthread_spinlock_t *s, int pshared);
int dsm_pthread_spin_destroy(pthread_spinlock_t *s);
int dsm_pthread_spin_lock(pthread_spinlock_t *s);
int dsm_pthread_spin_trylock(pthread_spinlock_t *s);
int dsm_pthread_spin_unlock(pthread_spinlock_t *s);

int dsm_sem_init(sem_t *s, int pshared, unsigned value);
int dsm_sem_destroy(sem_t *s);
int dsm_sem_wait(sem_t *s);
int dsm_sem_trywait(sem_t *s);
int dsm_sem_timedwait(sem_t *s, const struct timespec *abstime);
int dsm_sem_post(sem_t *s);
int dsm_sem_getvalue(sem_t *s, int *value);
sem_t *dsm_sem_open(const char *name, int oflag, ...);

/* Thread-specific data: keys are the job's, values each thread's own on
 * its node; destructors run at a thread's end (runtime/pthread_key.c). */
int   dsm_pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
int   dsm_pthread_key_delete(pthread_key_t key);
void *dsm_pthread_getspecific(pthread_key_t key);
int   dsm_pthread_setspecific(pthread_key_t key, const void *value);
int   dsm_tss_create(tss_t *key, tss_dtor_t destructor);
void  dsm_tss_delete(tss_t key);
void *dsm_tss_get(tss_t key);
int   dsm_tss_set(tss_t key, void *value);

/* The CPUs the program is told it has (runtime/cpus.c): nodes x
 * DSM_THREADS, or DSM_CPUS; 0 from dsm_job_cpus where the calls are the C
 * library's (one node, not OpenMP; before the job). The masks are
 * cpu_set_t of `size` bytes. */
int  dsm_job_cpus(void);
long dsm_sysconf(int name);
int  dsm_get_nprocs(void);
int  dsm_get_nprocs_conf(void);
int  dsm_sched_getaffinity(pid_t pid, size_t size, void *mask);
int  dsm_sched_setaffinity(pid_t pid, size_t size, const void *mask);
int  dsm_pthread_getaffinity_np(pthread_t thread, size_t size, void *mask);
int  dsm_pthread_setaffinity_np(pthread_t thread, size_t size, const void *mask);

/* The program's mappings (runtime/mmap.c): in a job of several nodes,
 * shared memory in the region, a file's contents read in at the call and
 * a writable MAP_SHARED file's written back at msync, munmap and the
 * job's end. */
void *dsm_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
int   dsm_munmap(void *addr, size_t len);
void *dsm_mremap(void *addr, size_t old_len, size_t new_len, int flags, void *new_addr);
int   dsm_madvise(void *addr, size_t len, int advice);
int   dsm_posix_madvise(void *addr, size_t len, int advice);
int   dsm_msync(void *addr, size_t len, int flags);
int   dsm_mprotect(void *addr, size_t len, int prot);

/* Signal dispositions are the job's: installed on every node
 * (runtime/signals.c); SIGSEGV's kept beside dsm's own. */
int  dsm_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void (*dsm_signal(int sig, void (*handler)(int)))(int);

/* The C library's random number generators, one state for the job under
 * a dsm lock (runtime/libc_rand.c): glibc's algorithms, so the job draws
 * the sequence one process draws. */
int             dsm_rand(void);
void            dsm_srand(unsigned seed);
long            dsm_random(void);
void            dsm_srandom(unsigned seed);
char           *dsm_initstate(unsigned seed, char *buf, size_t n);
char           *dsm_setstate(char *buf);
double          dsm_drand48(void);
double          dsm_erand48(unsigned short xsubi[3]);
long            dsm_lrand48(void);
long            dsm_nrand48(unsigned short xsubi[3]);
long            dsm_mrand48(void);
long            dsm_jrand48(unsigned short xsubi[3]);
void            dsm_srand48(long seed);
unsigned short *dsm_seed48(unsigned short seed[3]);
void            dsm_lcong48(unsigned short param[7]);

/* Process-wide settings (runtime/libc_settings.c): changed here and then
 * on every other node, before the call returns, one change at a time in
 * the job; a node that cannot make it ends the job in one line. */
int    dsm_chdir(const char *path);
int    dsm_fchdir(int fd);
mode_t dsm_umask(mode_t mask);
int    dsm_setenv(const char *name, const char *value, int overwrite);
int    dsm_unsetenv(const char *name);
int    dsm_putenv(char *string);
int    dsm_clearenv(void);
char  *dsm_setlocale(int category, const char *locale);

/* Around a call that blocks the calling thread (a sleep): the node's
 * run slot goes to another of its threads meanwhile (base/smp.h);
 * dsm_sched_yield lets those waiting for one run first. */
void dsm_block_begin(void);
void dsm_block_end(void);
int  dsm_sched_yield(void);

#ifdef __cplusplus
}
#endif
#endif
