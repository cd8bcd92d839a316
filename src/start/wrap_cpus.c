/*
 * wrap_cpus.c — libdsm-start.a: the program's questions about its CPUs
 * (dsmcc links with -Wl,--wrap= for each, tools/dsmcc.in) get the job's
 * answer (runtime/cpus.c): nodes x DSM_THREADS, or DSM_CPUS. std::thread's
 * hardware_concurrency, which the program calls in libstdc++ (there it is
 * get_nprocs, out of the wrap's reach), is wrapped by its own name.
 */
#include <dsm/pthread.h>
#include <sched.h>

long __wrap_sysconf(int name);
long __wrap_sysconf(int name) { return dsm_sysconf(name); }

int __wrap_get_nprocs(void);
int __wrap_get_nprocs(void) { return dsm_get_nprocs(); }

int __wrap_get_nprocs_conf(void);
int __wrap_get_nprocs_conf(void) { return dsm_get_nprocs_conf(); }

int __wrap_sched_getaffinity(pid_t pid, size_t size, cpu_set_t *mask);
int __wrap_sched_getaffinity(pid_t pid, size_t size, cpu_set_t *mask) { return dsm_sched_getaffinity(pid, size, mask); }

int __wrap_sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *mask);
int __wrap_sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *mask) { return dsm_sched_setaffinity(pid, size, mask); }

int __wrap_pthread_getaffinity_np(pthread_t thread, size_t size, cpu_set_t *mask);
int __wrap_pthread_getaffinity_np(pthread_t thread, size_t size, cpu_set_t *mask) { return dsm_pthread_getaffinity_np(thread, size, mask); }

int __wrap_pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t *mask);
int __wrap_pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t *mask) { return dsm_pthread_setaffinity_np(thread, size, mask); }

/* std::thread::hardware_concurrency() (libstdc++: get_nprocs, 0 if below). */
unsigned __wrap__ZNSt6thread20hardware_concurrencyEv(void);
unsigned __wrap__ZNSt6thread20hardware_concurrencyEv(void)
{
    int n = dsm_get_nprocs();
    return n < 0 ? 0 : (unsigned)n;
}
