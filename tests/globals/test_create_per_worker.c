/*
 * test_create_per_worker — dsm_create runs its function on every other
 * node, so calling it once per worker, as a pthread_create or PARMACS
 * CREATE user would, cannot mean what the caller means: it is refused, in
 * one line, before any work is doubled. A histogram of DATA values over
 * the workers shows what the refusal protects.
 *
 *   test_create_per_worker per-worker   dsm_create once per worker, then one wait
 *   test_create_per_worker once         dsm_create once, the wait, and again once:
 *                                       every value counted exactly once each time
 */
#include <stdio.h>
#include <string.h>

#include <dsm.h>

#define DATA 6000
#define BINS 10

int data[DATA];
long hist[BINS];
int next_slice;

static void count(void *arg)
{
    (void)arg;
    dsm_lock(1);
    int slice = next_slice++;
    dsm_unlock(1);
    int workers = dsm_nodes() - 1;
    long mine[BINS] = {0};
    for (int i = slice; i < DATA; i += workers)
        mine[data[i] % BINS]++;
    dsm_lock(2);
    for (int b = 0; b < BINS; b++)
        hist[b] += mine[b];
    dsm_unlock(2);
}

static int check(const char *what)
{
    long total = 0;
    for (int b = 0; b < BINS; b++)
        total += hist[b];
    printf("%s: %ld values counted of %d on %d nodes: %s\n", what, total, DATA, dsm_nodes(),
           total == DATA ? "ok" : "WRONG");
    return total != DATA;
}

int main(int argc, char **argv)
{
    for (int i = 0; i < DATA; i++)
        data[i] = i * 7;
    if (argc > 1 && strcmp(argv[1], "per-worker") == 0) {
        for (int w = 1; w < dsm_nodes(); w++)
            dsm_create(count, NULL); /* the second call ends the job */
        dsm_wait_for_end();
        return check("per-worker creates");
    }
    dsm_create(count, NULL);
    dsm_wait_for_end();
    int bad = check("first create");
    memset(hist, 0, sizeof hist);
    next_slice = 0;
    dsm_create(count, NULL);
    dsm_wait_for_end();
    return bad | check("second create after the wait");
}
