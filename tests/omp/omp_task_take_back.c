/*
 * omp_task_take_back.c — a node waiting for a task another node took
 * runs that task's descendants (src/omp/task.c, take_back): OpenMP lets
 * a waiting task start any of its descendants, wherever they were made.
 *
 * The master (node 0, one thread a node) makes, under `masked`, a task T
 * and then one gate task per other node, and waits (`taskwait`). The
 * master's own wait starts the newest task, a gate; the other nodes,
 * idle at the region's end, take the oldest: T first, then the other
 * gates. Each gate waits until T has started (so no node is idle before
 * T's children exist). T makes two children a node and waits for them;
 * each child waits until a child has started on node 0. Node 0's only
 * thread is then in the master's taskwait, its own tasks done: only by
 * taking one of T's children from T's node — a descendant of the task it
 * waits for, made on another node — can it start one. Every wait is
 * bounded, so a runtime that does not take it back fails a check rather
 * than hanging. Run with one thread a node (a second thread of node 0,
 * idle at the barrier, would take the child as any thief does).
 * Prints "T ran on node N, node 0 ran K of its children" and
 * "PASSED: 0 failed".
 */
#include <dsm.h>
#include <omp.h>
#include <stdio.h>

#include "omp_bounded_wait.h"

static int nodes, failed;
static int t_started, t_node = -1;
static int children_on[64]; /* children of T started, per node */

static void child(void)
{
    add_int(&children_on[dsm_rank()], 1);
    if (!wait_for(&children_on[0], 1))
        add_int(&failed, 1);
}

static void parent_task(void)
{
#pragma omp atomic write
    t_node = dsm_rank();
    add_int(&t_started, 1);
    for (int i = 0; i < 2 * nodes; i++) {
#pragma omp task
        child();
    }
#pragma omp taskwait
}

static void gate(void)
{
    if (!wait_for(&t_started, 1))
        add_int(&failed, 1);
}

int main(void)
{
    nodes = dsm_nodes();
    if (nodes > 64) {
        printf("at most 64 nodes\n");
        return 1;
    }
    /* A task made in a first region: the next begins with tasks seen. */
    int warm = 0;
#pragma omp parallel
#pragma omp masked
    {
#pragma omp task shared(warm)
        warm = 1;
    }
#pragma omp parallel
#pragma omp masked
    {
#pragma omp task
        parent_task();
        for (int i = 1; i < nodes; i++) {
#pragma omp task
            gate();
        }
#pragma omp taskwait
    }
    int on0 = read_int(&children_on[0]), all = 0;
    for (int n = 0; n < nodes; n++)
        all += read_int(&children_on[n]);
    printf("T ran on node %d, node 0 ran %d of its children\n", t_node, on0);
    int failures = 0;
    if (!warm) {
        printf("the first region's task did not run\n");
        failures++;
    }
    if (nodes > 1 && t_node == 0) {
        printf("T ran on node 0: nothing was taken back\n");
        failures++;
    }
    if (all != 2 * nodes) {
        printf("%d children of T ran, not %d\n", all, 2 * nodes);
        failures++;
    }
    if (on0 < 1) {
        printf("node 0 ran none of T's children while it waited for T\n");
        failures++;
    }
    if (read_int(&failed)) {
        printf("%d waits ran out\n", read_int(&failed));
        failures++;
    }
    printf("PASSED: %d failed\n", failures);
    return failures != 0;
}
