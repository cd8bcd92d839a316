/*
 * taskq.C — a lock-based task queue in the SPLASH-3 style (CREATE(fn, P)
 * runs P processes, the caller one of them), for the PARMACS macro files.
 *
 *   taskq [-pP] [-tT]    P processes, T tasks
 *
 * Process 0 produces T tasks into a bounded queue in shared memory, under
 * a lock, and waits on a condition variable while it is full; every other
 * process takes tasks under the same lock (waiting on another condition
 * variable while it is empty), computes the task, and adds its result to
 * one of several bucket sums under an array lock (ALOCK). The master then
 * checks every bucket and the number of tasks each process did against a
 * serial computation: nothing lost, nothing done twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

MAIN_ENV

#define QCAP     8
#define BUCKETS 16
#define MAXP    64

struct Queue {
    LOCKDEC(lock)
    CONDVARDEC(notempty)
    CONDVARDEC(notfull)
    long task[QCAP];
    long head, count;
    long produced, finished;
    ALOCKDEC(bucketlock, BUCKETS)
    long bucket[BUCKETS];
    long done_by[MAXP];
    BARDEC(bar)
};

struct Queue *Q;
long P = 2;
long T = 2000;
long total_done;           /* the master's count of the per-process tallies */

static long work(long t)
{
    long x = t;
    for (int i = 0; i < 200; i++)
        x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x % 1000;
}

void Process(void)
{
    long MyNum;
    GET_PID(MyNum);
    BARRIER(Q->bar, P)
    if (MyNum == 0) {
        for (long t = 0; t < T; t++) {
            LOCK(Q->lock)
            while (Q->count == QCAP)
                CONDVARWAIT(Q->notfull, Q->lock)
            Q->task[(Q->head + Q->count) % QCAP] = t;
            Q->count++;
            Q->produced++;
            CONDVARSIGNAL(Q->notempty)
            UNLOCK(Q->lock)
        }
        LOCK(Q->lock)
        Q->finished = 1;
        CONDVARBCAST(Q->notempty)
        UNLOCK(Q->lock)
    } else {
        for (;;) {
            long t;
            LOCK(Q->lock)
            while (Q->count == 0 && !Q->finished)
                CONDVARWAIT(Q->notempty, Q->lock)
            if (Q->count == 0) {
                UNLOCK(Q->lock)
                break;
            }
            t = Q->task[Q->head];
            Q->head = (Q->head + 1) % QCAP;
            Q->count--;
            CONDVARSIGNAL(Q->notfull)
            UNLOCK(Q->lock)

            long r = work(t);
            ALOCK(Q->bucketlock, t % BUCKETS)
            Q->bucket[t % BUCKETS] += r;
            AULOCK(Q->bucketlock, t % BUCKETS)
            Q->done_by[MyNum]++;
        }
    }
    BARRIER(Q->bar, P)
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "p:t:")) != -1) {
        switch (c) {
        case 'p': P = atol(optarg); break;
        case 't': T = atol(optarg); break;
        default: fprintf(stderr, "usage: taskq [-pP] [-tT]\n"); exit(2);
        }
    }
    if (P < 2 || P > MAXP) {
        fprintf(stderr, "taskq: P from 2 to %d\n", MAXP);
        exit(2);
    }
    MAIN_INITENV()
    Q = (struct Queue *)G_MALLOC(sizeof(struct Queue));
    LOCKINIT(Q->lock)
    CONDVARINIT(Q->notempty)
    CONDVARINIT(Q->notfull)
    ALOCKINIT(Q->bucketlock, BUCKETS)
    BARINIT(Q->bar)
    Q->head = Q->count = Q->produced = Q->finished = 0;
    for (int b = 0; b < BUCKETS; b++)
        Q->bucket[b] = 0;
    for (int p = 0; p < MAXP; p++)
        Q->done_by[p] = 0;

    CREATE(Process, P)
    WAIT_FOR_END(P)

    long expect[BUCKETS] = {0};
    for (long t = 0; t < T; t++)
        expect[t % BUCKETS] += work(t);
    int ok = Q->produced == T;
    for (int b = 0; b < BUCKETS; b++)
        ok = ok && Q->bucket[b] == expect[b];
    for (long p = 1; p < P; p++)
        total_done += Q->done_by[p];
    ok = ok && total_done == T;
    printf("task queue: %ld tasks by %ld processes:", T, P - 1);
    for (long p = 1; p < P; p++)
        printf(" %ld", Q->done_by[p]);
    printf(": %s\n", ok ? "ok" : "WRONG");
    if (!ok)
        exit(1);
    MAIN_END
}
