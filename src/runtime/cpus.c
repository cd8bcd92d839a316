/*
 * cpus.c — the CPUs a dsmcc program is told it has (include/dsm/pthread.h;
 * docs/unmodified-programs.md, "CPU counts").
 *
 * Programs size themselves from the machine: a worker per CPU that
 * sysconf(_SC_NPROCESSORS_ONLN), get_nprocs, sched_getaffinity or
 * std::thread::hardware_concurrency reports. On a dsm job each of them
 * would see one host, so a job of 8 nodes would run the workers of one
 * 2-CPU host. What a job reports instead is the threads it runs at once:
 * nodes x T (dsmrun -n N --threads T; run slots, base/smp.h), or
 * DSM_CPUS when set. A job of one node that is not an OpenMP program runs
 * the program's threads as one process does (the C library's): it reports
 * the host's. Every call agrees: the counts, the affinity mask (CPUs 0 to
 * n - 1), omp_get_num_procs.
 *
 * A thread may ask to run on any of those CPUs (sched_setaffinity,
 * pthread_setaffinity_np): placement is dsm's, so the call succeeds and
 * changes nothing; a mask naming none of them is EINVAL, as the kernel
 * says of CPUs it does not have.
 */
#include <dsm/pthread.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "runtime/runtime.h"

int dsm_job_cpus(void) { return job_cpus(); }

long dsm_sysconf(int name)
{
    int n;
    if ((name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF) && (n = dsm_job_cpus()) > 0)
        return n;
    return sysconf(name);
}

int dsm_get_nprocs(void)
{
    int n = dsm_job_cpus();
    return n > 0 ? n : get_nprocs();
}

int dsm_get_nprocs_conf(void)
{
    int n = dsm_job_cpus();
    return n > 0 ? n : get_nprocs_conf();
}

/* pid 0, the process or the calling thread: the job's mask. */
static bool is_self(pid_t pid) { return pid == 0 || pid == getpid() || pid == gettid(); }

static int job_mask(size_t size, void *mask, int n)
{
    if (!mask || (size_t)n > size * 8) {
        errno = EINVAL; /* as the kernel: a mask smaller than its CPUs */
        return -1;
    }
    memset(mask, 0, size);
    for (int i = 0; i < n; i++)
        ((unsigned char *)mask)[i / 8] |= (unsigned char)(1u << (i % 8));
    return 0;
}

/* Whether the mask names one of the job's n CPUs. */
static bool names_one(size_t size, const void *mask, int n)
{
    const unsigned char *m = mask;
    for (int i = 0; i < n && (size_t)i < size * 8; i++)
        if (m[i / 8] & (1u << (i % 8)))
            return true;
    return false;
}

int dsm_sched_getaffinity(pid_t pid, size_t size, void *mask)
{
    int n = dsm_job_cpus();
    if (n <= 0 || !is_self(pid))
        return sched_getaffinity(pid, size, mask);
    return job_mask(size, mask, n);
}

int dsm_sched_setaffinity(pid_t pid, size_t size, const void *mask)
{
    int n = dsm_job_cpus();
    if (n <= 0 || !is_self(pid))
        return sched_setaffinity(pid, size, mask);
    if (!mask || !names_one(size, mask, n)) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

/* The pthread_ forms return the error instead of setting errno. */
int dsm_pthread_getaffinity_np(pthread_t t, size_t size, void *mask)
{
    int n = dsm_job_cpus();
    if (n <= 0)
        return pthread_getaffinity_np(t, size, mask);
    return job_mask(size, mask, n) ? EINVAL : 0;
}

int dsm_pthread_setaffinity_np(pthread_t t, size_t size, const void *mask)
{
    int n = dsm_job_cpus();
    if (n <= 0)
        return pthread_setaffinity_np(t, size, mask);
    return mask && names_one(size, mask, n) ? 0 : EINVAL;
}
