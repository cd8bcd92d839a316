/*
 * omp_quiet_flush.c — flushes that find nothing to do, then a token
 * passed around the threads with flag and flush (issue 63).
 *
 * First each thread flushes IDLE times with nothing written anywhere: on
 * dsm under hlrc, once every other node pushes its intervals here after
 * its releases (sync/flush.c), such a flush sends no message
 * (tests/report/check_report.py `quiet_flushes` counts them). Then a
 * token goes around the ring ROUNDS times, as NPB LU's wavefront hands
 * its rows on: the holder waits for `turn` polling with flush, checks the
 * payload its predecessor wrote, writes its own, flushes, and passes the
 * turn (a variable every thread writes), flushing again. The payload
 * spans pages so that a stale one shows. Prints "PASSED: 0 failed" when
 * every payload read was the one written before the turn came. An
 * argument sets the rounds (0: the idle flushes alone).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 16
#define IDLE 1000
#define ROUNDS 100
#define WORDS 4096 /* 32 KiB: several pages whatever DSM_PAGE_SIZE is */
#define POLL_LIMIT_S 60.0

static int turn;
static long payload[WORDS];
static int failed, stuck;

/* Waits until turn is me, polling with flush; a bound keeps a broken
 * runtime from hanging the test. */
static int wait_turn(int me)
{
    double t0 = omp_get_wtime();
    for (;;) {
#pragma omp flush
        if (turn == me)
            return 1;
        if (omp_get_wtime() - t0 > POLL_LIMIT_S)
            return 0;
    }
}

int main(int argc, char **argv)
{
    int n = 0, rounds = argc > 1 ? atoi(argv[1]) : ROUNDS;
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    printf("threads %d\n", n);
    if (n > MAX_THREADS) {
        printf("FAILED: more than %d threads\n", MAX_THREADS);
        return 1;
    }
#pragma omp parallel
    {
        int me = omp_get_thread_num(), bad = 0, ok = 1;
#pragma omp flush
#pragma omp barrier
        for (int i = 0; i < IDLE; i++) {
#pragma omp flush
        }
#pragma omp barrier
        for (int r = 0; r < rounds && ok; r++) {
            if (!(ok = wait_turn(me)))
                break;
            /* The holder before wrote r * n + me - 1 (the first, nothing). */
            long want = r * n + me - 1;
            for (int j = 0; j < WORDS; j++)
                if (want >= 0 && payload[j] != want + j && bad++ == 0)
                    printf("FAILED: thread %d, round %d: word %d holds %ld, not %ld\n", me, r, j,
                           payload[j], want + j);
            for (int j = 0; j < WORDS; j++)
                payload[j] = want + 1 + j;
#pragma omp flush
            turn = (me + 1) % n;
#pragma omp flush
        }
#pragma omp critical
        {
            failed += bad;
            stuck += !ok;
        }
    }
    if (stuck)
        printf("FAILED: the turn was never seen in %.0f s\n", POLL_LIMIT_S);
    printf("%s: %d failed\n", failed || stuck ? "FAILED" : "PASSED", failed + stuck);
    return failed || stuck;
}
