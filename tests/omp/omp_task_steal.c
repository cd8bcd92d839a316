/*
 * omp_task_steal.c — tasks that leave their node (src/omp/task.c): the
 * master's tasks, made on its shared stack, are taken by the other
 * nodes' idle threads. Three task-parallel kernels, each checked against
 * its known answer: Fibonacci (recursive tasks, shared results on the
 * creators' stacks, taskwait), N-Queens (firstprivate boards, a result
 * array on the creator's stack) and a sum over a shared array (nested
 * taskgroups). Each kernel runs in a taskgroup with a few "gate" tasks
 * made first, each of which waits until a gate task has started on
 * every node: the kernel's answer comes out only if every node ran a
 * task of it, so the check needs no timing and no luck (today's code ran
 * every task on node 0: the gates waited out their bound and the program
 * fails naming the nodes that ran none).
 *
 * The first region makes one task, so that the next begins with tasks
 * seen (every barrier of it waits for offered tasks; task.c): the master
 * makes the kernels' tasks under `masked`, deterministically on node 0 —
 * or, given an argument T, thread T does (with --threads 2, thread 1 is
 * node 0's second thread, whose region runs on a shared stack of its own
 * so that its tasks may leave the node too).
 * Prints "nodes N every node ran tasks" and "PASSED: 0 failed".
 */
#include <dsm.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define GATE_WAIT_MS 30000 /* a bound, not a timing: a node that never comes fails */

static int nodes;
static int gate_seen[3];     /* per kernel: bit i, a task of it started on node i */
static int tasks_on[3][64];  /* per kernel: tasks started on each node (recorded ones) */
static int failed;
static int gave_up; /* a gate waited out its bound: the others do not wait */

static void record(int kernel)
{
    int node = dsm_rank();
#pragma omp atomic
    tasks_on[kernel][node]++;
#pragma omp atomic
    gate_seen[kernel] |= 1 << node;
}

/* A gate of kernel k: waits until a task of k has started on every node. */
static void gate(int k)
{
    int all = (1 << nodes) - 1, seen, given_up;
    record(k);
    for (int ms = 0; ms < GATE_WAIT_MS; ms++) {
#pragma omp atomic read
        seen = gate_seen[k];
#pragma omp atomic read
        given_up = gave_up;
        if (seen == all || given_up)
            return;
        usleep(1000);
    }
#pragma omp atomic write
    gave_up = 1;
}

/* A construct of its own for each kernel's gates: the runtime times tasks
 * by construct (task.c's cut-off by time), and one construct for all three
 * would have, by the third kernel, runs of gates that found every node
 * already seen (a few microseconds each): its gates would then stay with
 * the master, the first run at once there, waiting out its bound before
 * the kernel's tasks exist to be taken (1 run in 10 under erc-inv). */
static void gates(int k)
{
    for (int i = 0; i < 2 * nodes; i++) {
        switch (k) {
        case 0:
#pragma omp task
            gate(0);
            break;
        case 1:
#pragma omp task
            gate(1);
            break;
        default:
#pragma omp task
            gate(2);
            break;
        }
    }
}

static long fib(int n, int depth)
{
    if (n < 2)
        return n;
    long x, y;
    if (depth < 6)
        record(0);
#pragma omp task shared(x) firstprivate(n, depth)
    x = fib(n - 1, depth + 1);
#pragma omp task shared(y) firstprivate(n, depth)
    y = fib(n - 2, depth + 1);
#pragma omp taskwait
    return x + y;
}

#define QUEENS 9
struct board {
    signed char col[QUEENS];
};

static int safe(const struct board *b, int row, int c)
{
    for (int r = 0; r < row; r++)
        if (b->col[r] == c || abs(b->col[r] - c) == row - r)
            return 0;
    return 1;
}

static long queens(struct board b, int row)
{
    if (row == QUEENS)
        return 1;
    long count[QUEENS] = {0};
    if (row < 3)
        record(1);
    for (int c = 0; c < QUEENS; c++) {
        if (!safe(&b, row, c))
            continue;
        b.col[row] = (signed char)c;
#pragma omp task firstprivate(b, row, c) shared(count)
        count[c] = queens(b, row + 1);
    }
#pragma omp taskwait
    long sum = 0;
    for (int c = 0; c < QUEENS; c++)
        sum += count[c];
    return sum;
}

#define ELEMS 40000
#define CHUNK 1000

static void sums(const int *a, long *part)
{
#pragma omp taskgroup
    for (int c = 0; c < ELEMS / CHUNK; c++) {
#pragma omp task firstprivate(c) shared(a, part)
        {
            record(2);
            long s = 0;
#pragma omp taskgroup
            {
#pragma omp task shared(s) firstprivate(c)
                for (int i = c * CHUNK; i < (c + 1) * CHUNK; i++)
                    s += a[i];
            }
            part[c] = s;
        }
    }
}

int main(int argc, char **argv)
{
    int maker = argc > 1 ? atoi(argv[1]) : 0;
    nodes = dsm_nodes();
    int *a = malloc(ELEMS * sizeof *a);
    long part[ELEMS / CHUNK];
    if (!a || nodes > 30)
        return 2;
    for (int i = 0; i < ELEMS; i++)
        a[i] = i % 97;
#pragma omp parallel
#pragma omp master
    {
#pragma omp task
        record(2); /* node 0 has made a task: the next region waits for offered ones */
    }
    tasks_on[2][0] = 0;
    gate_seen[2] = 0;

    long f = 0, q = 0;
#pragma omp parallel
#pragma omp masked filter(maker)
    {
#pragma omp taskgroup
        {
            gates(0);
            f = fib(24, 0);
        }
#pragma omp taskgroup
        {
            gates(1);
            struct board b = {{0}};
            q = queens(b, 0);
        }
#pragma omp taskgroup
        {
            gates(2);
            sums(a, part);
        }
    }
    long total = 0, expect = 0;
    for (int c = 0; c < ELEMS / CHUNK; c++)
        total += part[c];
    for (int i = 0; i < ELEMS; i++)
        expect += i % 97;
    if (f != 46368) {
        printf("fib(24) = %ld, not 46368\n", f);
        failed++;
    }
    if (q != 352) {
        printf("%d queens: %ld solutions, not 352\n", QUEENS, q);
        failed++;
    }
    if (total != expect) {
        printf("sum %ld, not %ld\n", total, expect);
        failed++;
    }
    const char *kernel[3] = {"fib", "queens", "sums"};
    for (int k = 0; k < 3; k++)
        for (int n = 0; n < nodes; n++)
            if (tasks_on[k][n] == 0) {
                printf("%s: node %d ran no task\n", kernel[k], n);
                failed++;
            }
    for (int k = 0; k < 3; k++) {
        printf("%s: tasks started per node:", kernel[k]);
        for (int n = 0; n < nodes; n++)
            printf(" %d", tasks_on[k][n]);
        printf("\n");
    }
    if (!failed)
        printf("nodes %d every node ran tasks\n", nodes);
    printf("PASSED: %d failed\n", failed);
    free(a);
    return failed != 0;
}
