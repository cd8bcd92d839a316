/*
 * omp_proxy_nodes.c — libomp's proxy tasks completed from another node
 * (src/omp/task.c, proxy_completed). A proxy task is what libomp makes of
 * `target nowait` on a device: the runtime runs its routine, and the
 * device's thread calls __kmpc_proxy_task_completed_ooo when the work is
 * done; LLVM's tests make them by hand, as this program does (flags 17:
 * tied and proxy). A team of two threads, one a node: one thread makes a
 * proxy task (its routine records where it ran) and a task that depends
 * on it, and hands the task's address to the other through a shared
 * variable; the other writes a value and completes the proxy. The maker's
 * taskwait returns once the proxy is complete, and the dependent task,
 * which runs only then, sees the value. Both ways: thread 0 (node 0)
 * makes, the last completes; then the last makes and thread 0 completes.
 * On the code before, the other node's call read the maker's address in
 * its own memory and ended the job ("__kmpc_proxy_task_completed of a
 * task that is no proxy task in flight on this node").
 *
 * With the argument "twice" the completer completes the first proxy
 * twice: the second names no proxy still to be completed, and the job
 * ends with that one line (checked by its test).
 *
 * Every wait is bounded: a failure is a check that fails, never a hang.
 * Prints "proxies completed on another node: 2" and "PASSED: 0 failed".
 */
#include <dsm.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* libomp's entry points, declared as LLVM's tests declare them. */
typedef struct ident ident_t;
typedef struct kmp_task {
    void *shareds;
    int32_t (*routine)(int32_t, struct kmp_task *);
    int32_t part_id;
} kmp_task_t;
typedef struct kmp_depend_info {
    intptr_t base_addr;
    size_t   len;
    struct {
        unsigned char in : 1, out : 1;
    } flags;
} kmp_depend_info_t;
int32_t __kmpc_global_thread_num(ident_t *);
kmp_task_t *__kmpc_omp_task_alloc(ident_t *, int32_t gtid, int32_t flags, size_t sizeof_task,
                                  size_t sizeof_shareds, int32_t (*entry)(int32_t, kmp_task_t *));
int32_t __kmpc_omp_task_with_deps(ident_t *, int32_t gtid, kmp_task_t *task, int32_t ndeps,
                                  kmp_depend_info_t *deps, int32_t ndeps_noalias,
                                  kmp_depend_info_t *noalias);
void __kmpc_proxy_task_completed_ooo(kmp_task_t *task);

#include "handoff.h"

static kmp_task_t *task_box[2]; /* round r's proxy task, written by its maker */
static int have_task[2];        /* set after a flush once task_box[r] is written */
static int payload[2];          /* written by the completer before it completes */
static int routine_node[2], maker_node[2], completed_on[2], dependent_saw[2];
static int completed[2], dependent_ran_early[2];
static int round_of_proxy;      /* the round whose proxy's routine runs next */

static int32_t proxy_routine(int32_t gtid, kmp_task_t *task)
{
    (void)gtid, (void)task;
    routine_node[round_of_proxy] = dsm_rank();
    return 0;
}

static void make_and_wait(int round)
{
    int dep = 0;
    int32_t gtid = __kmpc_global_thread_num(NULL);
    round_of_proxy = round;
    kmp_task_t *proxy = __kmpc_omp_task_alloc(NULL, gtid, 17, sizeof(kmp_task_t), 0, proxy_routine);
    kmp_depend_info_t out = {.base_addr = (intptr_t)&dep, .len = sizeof dep};
    out.flags.in = 1;
    out.flags.out = 1;
    __kmpc_omp_task_with_deps(NULL, gtid, proxy, 1, &out, 0, NULL);
#pragma omp task depend(in : dep) firstprivate(round)
    {
        dependent_saw[round] = payload[round];
        dependent_ran_early[round] = !read_int(&completed[round]);
    }
    task_box[round] = proxy;
#pragma omp flush
#pragma omp atomic write
    have_task[round] = 1;
    maker_node[round] = dsm_rank();
#pragma omp taskwait
    if (routine_node[round] != dsm_rank())
        fail("the proxy task's routine did not run on its maker's node", round);
    if (dependent_ran_early[round] || dependent_saw[round] != 3000 + round)
        fail("the dependent task ran before the completion, or did not see the completer's write",
             round);
}

static void complete(int round, int twice)
{
    if (!await_flag(&have_task[round], "the proxy task never came", round))
        return;
#pragma omp flush
    kmp_task_t *proxy = task_box[round];
    payload[round] = 3000 + round;
    completed_on[round] = dsm_rank();
#pragma omp atomic write
    completed[round] = 1;
    __kmpc_proxy_task_completed_ooo(proxy);
    if (twice)
        __kmpc_proxy_task_completed_ooo(proxy); /* ends the job: completed already */
}

int main(int argc, char **argv)
{
    int twice = argc > 1 && strcmp(argv[1], "twice") == 0;
    int team = 0;
#pragma omp parallel
    {
#pragma omp master
        team = omp_get_num_threads();
        handoff_rounds(make_and_wait, complete, twice);
    }
    int across = 0;
    for (int r = 0; r < 2; r++)
        across += completed_on[r] != maker_node[r];
    if (team < 2 || across != 2)
        fail("the proxies were not completed on another node than their maker's", across);
    printf("proxies completed on another node: %d\n", across);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
