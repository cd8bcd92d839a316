/*
 * The seed 000 interface (include/tsm.h), used as a TSM program would use
 * it — this file includes tsm.h and nothing of dsm's own:
 *   the master allocates a shared vector and a shared accumulator and keeps
 *   the pointers in globals; tsm_create_procs(work) starts work() on the
 *   other nodes (each with a copy of those globals) and the master runs
 *   work() itself. In work(), each process fills its share of the vector,
 *   adds its TSM_PID-dependent contribution to the accumulator under
 *   tsm_lock, and after tsm_barrier checks the totals, which need every
 *   process's writes. A second phase scales the vector in place, each
 *   process a different share than it wrote (so every value crosses nodes),
 *   with the sum collected under a lock. The master checks the results
 *   once more after work() returns. A second tsm_create_procs starts a
 *   second phase (it waits for the first to end), whose processes see the
 *   globals the master set in between; then tsm_finish waits for the
 *   others and ends the job.
 * Usage: test_tsm_api [length]
 */
#include <stdio.h>
#include <stdlib.h>

#include "tsm.h"

#define CHECK(cond, what)                                                                   \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "pid %d: %s:%d: check failed: %s (%s)\n", TSM_PID, __FILE__,    \
                    __LINE__, #cond, what);                                                 \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

struct accumulator {
    long total;        /* sum of (pid + 1) over all processes */
    long weighted;     /* sum of (pid + 1) * (pid + 1) */
    long scaled_sum;   /* phase 2: sum of the scaled vector */
    long arrived;      /* processes that added to `total` */
};

static long length = 1 << 16;
static long *vec;                 /* shared */
static struct accumulator *acc;   /* shared */
static long *per_pid;             /* shared: one slot per process */
static long phase2_key;           /* set by the master between the phases */

static void work(void)
{
    int pid = TSM_PID, n = TSM_NUMNODES;
    long lo = length * pid / n, hi = length * (pid + 1) / n;
    for (long i = lo; i < hi; i++)
        vec[i] = 3 * i + 1;
    tsm_lock(1);
    acc->total += pid + 1;
    acc->weighted += (long)(pid + 1) * (pid + 1);
    acc->arrived++;
    tsm_unlock(1);
    per_pid[pid] = 100 + pid;
    tsm_barrier();

    CHECK(acc->arrived == n, "every process added to the accumulator");
    CHECK(acc->total == (long)n * (n + 1) / 2, "total of the contributions");
    CHECK(acc->weighted == (long)n * (n + 1) * (2 * n + 1) / 6, "weighted total");
    for (int p = 0; p < n; p++)
        CHECK(per_pid[p] == 100 + p, "every process's slot");
    long sum = 0;
    for (long i = 0; i < length; i++)
        sum += vec[i];
    CHECK(sum == 3 * (length * (length - 1) / 2) + length, "sum of the vector");
    tsm_barrier(); /* all have read the vector before it changes */

    /* Phase 2: the next process's share, scaled by 2. */
    int other = (pid + 1) % n;
    lo = length * other / n;
    hi = length * (other + 1) / n;
    long part = 0;
    for (long i = lo; i < hi; i++) {
        vec[i] *= 2;
        part += vec[i];
    }
    tsm_lock(2);
    acc->scaled_sum += part;
    tsm_unlock(2);
    tsm_barrier();
    CHECK(acc->scaled_sum == 2 * sum, "sum of the scaled vector, collected under a lock");
    for (long i = 0; i < length; i += 97)
        CHECK(vec[i] == 2 * (3 * i + 1), "a scaled element");
}

/* The second phase: every process adds the key the master set before the
 * create (a global, so it reaches the others by the copy) and its pid. */
static void work2(void)
{
    tsm_lock(3);
    per_pid[TSM_PID] = phase2_key + TSM_PID;
    acc->arrived += phase2_key;
    tsm_unlock(3);
    tsm_barrier();
    int n = TSM_NUMNODES;
    CHECK(acc->arrived == n + (long)n * phase2_key, "phase 2: every process added the key");
    for (int p = 0; p < n; p++)
        CHECK(per_pid[p] == phase2_key + p, "phase 2: every process's slot");
}

int main(int argc, char **argv)
{
    tsm_startup(&argc, &argv); /* the master only returns */
    if (argc > 1)
        length = atol(argv[1]);
    CHECK(TSM_PID == 0, "tsm_startup returns on the master");
    CHECK(length >= TSM_NUMNODES, "at least one element per process");
    vec = tsm_alloc((size_t)length * sizeof *vec);
    acc = tsm_alloc(sizeof *acc);
    per_pid = tsm_alloc((size_t)TSM_NUMNODES * sizeof *per_pid);
    CHECK(vec && acc && per_pid, "tsm_alloc");

    tsm_create_procs(work); /* processes 1 .. N-1 */
    work();                 /* and the master */

    /* After the last barrier in work(): everyone's writes are visible. */
    int n = TSM_NUMNODES;
    long total = acc->total, scaled = acc->scaled_sum;
    CHECK(total == (long)n * (n + 1) / 2, "the master's total");
    CHECK(scaled == 2 * (3 * (length * (length - 1) / 2) + length), "the master's scaled sum");

    phase2_key = 1000;
    tsm_create_procs(work2); /* after the first phase's processes end */
    work2();
    tsm_finish(); /* waits for the other processes; no shared memory after this */
    printf("tsm_api: %d processes, total %ld, scaled sum %ld over %ld elements: ok\n", n, total,
           scaled, length);
    return 0;
}
