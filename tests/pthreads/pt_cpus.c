/*
 * pt_cpus — the CPU counts a program reads describe the job (issue 55,
 * point 2): sysconf(_SC_NPROCESSORS_ONLN) and _CONF, get_nprocs,
 * get_nprocs_conf, sched_getaffinity and pthread_getaffinity_np (CPU_COUNT,
 * CPU_COUNT_S of a CPU_ALLOC set) all agree; a thread may ask to run on
 * the last of those CPUs (sched_setaffinity, pthread_setaffinity_np); and
 * a worker per CPU, sized from the count, sums its slice right.
 *
 *   pt_cpus
 *
 * Prints "cpus N" and "pt_cpus: ok"; the tests say what N must be.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#define N 100000
static long data[N], partial[256];
static int ncpu;

static void *worker(void *arg)
{
    long i = (long)arg, sum = 0;
    for (long k = N * i / ncpu; k < N * (i + 1) / ncpu; k++)
        sum += data[k];
    partial[i] = sum;
    return NULL;
}

int main(void)
{
    long onln = sysconf(_SC_NPROCESSORS_ONLN), conf = sysconf(_SC_NPROCESSORS_CONF);
    int np = get_nprocs(), npc = get_nprocs_conf();
    cpu_set_t set;
    int aff = sched_getaffinity(0, sizeof set, &set) ? -1 : CPU_COUNT(&set);
    int paff = pthread_getaffinity_np(pthread_self(), sizeof set, &set) ? -1 : CPU_COUNT(&set);
    cpu_set_t *big = CPU_ALLOC(1024);
    size_t bigsize = CPU_ALLOC_SIZE(1024);
    int aff_s = sched_getaffinity(0, bigsize, big) ? -1 : CPU_COUNT_S(bigsize, big);
    printf("cpus %ld: conf %ld, get_nprocs %d, get_nprocs_conf %d, sched_getaffinity %d, "
           "pthread_getaffinity_np %d, of 1024 %d\n", onln, conf, np, npc, aff, paff, aff_s);
    int bad = conf != onln || np != onln || npc != onln || aff != onln || paff != onln ||
              aff_s != onln || onln < 1 || onln > 256;
    /* The last CPU is one to run on. */
    CPU_ZERO(&set);
    CPU_SET((int)onln - 1, &set);
    if (sched_setaffinity(0, sizeof set, &set) || pthread_setaffinity_np(pthread_self(), sizeof set, &set))
        bad = 1;
    CPU_FREE(big);
    if (bad) {
        printf("pt_cpus: FAILED (the counts disagree)\n");
        return 1;
    }
    ncpu = (int)onln;
    long want = 0;
    for (long k = 0; k < N; k++)
        want += data[k] = k % 977;
    pthread_t th[256];
    for (long i = 0; i < ncpu; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    long got = 0;
    for (long i = 0; i < ncpu; i++) {
        pthread_join(th[i], NULL);
        got += partial[i];
    }
    printf("%d workers: sum %ld (want %ld)\npt_cpus: %s\n", ncpu, got, want, got == want ? "ok" : "FAILED");
    return got != want;
}
