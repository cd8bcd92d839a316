/*
 * omp_task_depend_steal.c — tasks with dependences that leave their node
 * (src/omp/task.c): the master's `depend` tasks, made on its shared
 * stack, are offered once their predecessors are complete, taken by the
 * other nodes' idle threads, and their completion, wherever they ran,
 * releases their successors on node 0.
 *
 *   1. Diamonds, chained: a source writes an array; 2 "gate" tasks a node
 *      read it (`in`) and each write an output (`out`); a join reads
 *      every gate's output (`in`), checks it, and writes the next
 *      diamond's array (`out`). Each gate waits until a gate of its
 *      diamond has started on every node (bounded): the gates pass only
 *      if every node ran one, so the check needs no timing and no luck
 *      (on the code before, node 0 ran every dependent task itself: the
 *      first gate waited out its bound, and the program fails naming the
 *      nodes that ran none). A successor that ran before its
 *      predecessors, or did not see their writes, fails the join's check.
 *   2. A chain: each link reads its predecessor's output (`in`) and
 *      writes its own (`out`), wherever each runs.
 *   3. mutexinoutset: tasks that each add to one variable without an
 *      atomic (read, spin, write) must not overlap, and a task that
 *      reads it (`in`) afterwards sees every addition.
 *
 * The first region makes one task, so that the next begins with tasks
 * seen (every barrier of it waits for offered tasks; task.c); the master
 * makes the tasks under `master`, deterministically on node 0 (a
 * `single` goes to the first thread to arrive, which may be another
 * node's, whose tasks stay there). Every task is made before any gate
 * can end, so the runtime's cut-off by time (task.c) has no run of a
 * kind to go by, and every task may be offered.
 * Prints "nodes N every node ran dependent tasks" and "PASSED: 0 failed".
 */
#include <dsm.h>
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#define GATE_WAIT_MS 30000 /* a bound, not a timing: a node that never comes fails */
#define STAGES 3
#define MAXG   16   /* gates a diamond: 2 a node, at most 8 nodes */
#define WORDS  2048 /* each diamond's array: pages that travel with it */
#define LINKS  24
#define MUTEX  8

static int nodes, gates_per_stage, failed, gave_up;
static int gate_seen[STAGES]; /* bit n: a gate of the diamond started on node n */
static int gates_on[64];      /* gates started per node */
static long x[STAGES + 1][WORDS];
static long y[STAGES][MAXG];
static long link_value[LINKS + 1];
static int link_node[LINKS + 1];
static long mutex_sum, mutex_seen;
static int mutex_inside, mutex_overlap;

static void fail(const char *what, int stage)
{
#pragma omp atomic
    failed++;
    printf("FAILED: %s (%d)\n", what, stage);
}

static long sum_of(const long *a)
{
    long s = 0;
    for (int i = 0; i < WORDS; i++)
        s += a[i];
    return s;
}

/* A gate of diamond s: waits until a gate of s has started on every node,
 * then writes its output from the diamond's array. */
static void gate(int s, int j)
{
    int node = dsm_rank(), all = (1 << nodes) - 1, seen, given_up;
#pragma omp atomic
    gates_on[node]++;
#pragma omp atomic
    gate_seen[s] |= 1 << node;
    for (int ms = 0; ms < GATE_WAIT_MS; ms++) {
#pragma omp atomic read
        seen = gate_seen[s];
#pragma omp atomic read
        given_up = gave_up;
        if (seen == all || given_up)
            break;
        usleep(1000);
    }
    if (seen != all) {
#pragma omp atomic write
        gave_up = 1;
    }
    y[s][j] = (j + 1) * sum_of(x[s]);
}

/* The join of diamond s: every gate's output, then the next array. */
static void join(int s)
{
    long sum = sum_of(x[s]), total = 0;
    for (int j = 0; j < gates_per_stage; j++) {
        if (y[s][j] != (j + 1) * sum)
            fail("a join ran before a gate it depends on, or did not see its output", s);
        total += y[s][j];
    }
    for (int i = 0; i < WORDS; i++)
        x[s + 1][i] = x[s][i] + total % 7 + 1;
}

static void diamonds(void)
{
#pragma omp task depend(out : x[0][0])
    for (int i = 0; i < WORDS; i++)
        x[0][i] = i % 97 + 1;
    for (int s = 0; s < STAGES; s++) {
        for (int j = 0; j < gates_per_stage; j++) {
#pragma omp task depend(in : x[s][0]) depend(out : y[s][j]) firstprivate(s, j)
            gate(s, j);
        }
#pragma omp task firstprivate(s) depend(out : x[s + 1][0])                                       \
    depend(in : y[s][0], y[s][1], y[s][2], y[s][3], y[s][4], y[s][5], y[s][6], y[s][7], y[s][8],   \
                y[s][9], y[s][10], y[s][11], y[s][12], y[s][13], y[s][14], y[s][15])
        join(s);
    }
#pragma omp taskwait
}

static void chain(void)
{
    link_value[0] = 1;
    for (int k = 1; k <= LINKS; k++) {
#pragma omp task depend(in : link_value[k - 1]) depend(out : link_value[k]) firstprivate(k)
        {
            link_value[k] = link_value[k - 1] * 3 % 1000003 + k;
            link_node[k] = dsm_rank();
        }
    }
#pragma omp taskwait
}

static void mutexes(void)
{
    for (int k = 1; k <= MUTEX; k++) {
#pragma omp task depend(mutexinoutset : mutex_sum) firstprivate(k)
        {
            int inside;
#pragma omp atomic capture
            inside = ++mutex_inside;
            if (inside != 1) {
#pragma omp atomic write
                mutex_overlap = 1;
            }
            long v = mutex_sum;
            usleep(2000); /* widens the window another task's overlap would fall in */
            mutex_sum = v + k;
#pragma omp atomic
            mutex_inside--;
        }
    }
#pragma omp task depend(in : mutex_sum)
    mutex_seen = mutex_sum;
#pragma omp taskwait
}

int main(void)
{
    nodes = dsm_nodes();
    if (nodes > 8)
        return 2;
    gates_per_stage = 2 * nodes;
    int warm = 0;
#pragma omp parallel
#pragma omp master
    {
#pragma omp task shared(warm)
        warm = 1; /* node 0 has made a task: the next region waits for offered ones */
    }
#pragma omp parallel
#pragma omp master
    {
        diamonds();
        chain();
        mutexes();
    }

    long expect[WORDS];
    for (int i = 0; i < WORDS; i++)
        expect[i] = i % 97 + 1;
    for (int s = 0; s < STAGES; s++) {
        long sum = 0, total = 0;
        for (int i = 0; i < WORDS; i++)
            sum += expect[i];
        for (int j = 0; j < gates_per_stage; j++)
            total += (j + 1) * sum;
        for (int i = 0; i < WORDS; i++)
            expect[i] += total % 7 + 1;
    }
    for (int i = 0; i < WORDS; i++)
        if (x[STAGES][i] != expect[i]) {
            fail("the last diamond's array is wrong", i);
            break;
        }
    long v = 1;
    for (int k = 1; k <= LINKS; k++)
        v = v * 3 % 1000003 + k;
    if (link_value[LINKS] != v)
        fail("the chain's last link is wrong", (int)link_value[LINKS]);
    if (mutex_sum != MUTEX * (MUTEX + 1) / 2 || mutex_seen != mutex_sum || mutex_overlap)
        fail("mutexinoutset tasks overlapped, or the reader ran before them", (int)mutex_seen);
    for (int n = 0; n < nodes; n++)
        if (gates_on[n] == 0)
            printf("FAILED: node %d ran no gate (%d)\n", n, ++failed);
    printf("gates started per node:");
    for (int n = 0; n < nodes; n++)
        printf(" %d", gates_on[n]);
    printf("\nchain links per node:");
    for (int n = 0; n < nodes; n++) {
        int c = 0;
        for (int k = 1; k <= LINKS; k++)
            c += link_node[k] == n;
        printf(" %d", c);
    }
    printf("\n");
    if (!failed && warm)
        printf("nodes %d every node ran dependent tasks\n", nodes);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
