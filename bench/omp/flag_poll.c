/*
 * flag_poll.c — what OpenMP's flush costs: two threads pass a token back
 * and forth through plain shared flags, each polling with `flush` (the
 * pattern of the OpenMP examples and NPB LU's pipeline), and every thread
 * then runs flushes that find nothing new.
 *
 *   flag_poll [-r ROUNDS] [-f FLUSHES]
 *
 * Prints: the round trip (thread 0 -> 1 -> 0) in microseconds, the flushes
 * each round took (polls included), and the time of one flush with
 * nothing to see; then RESULT with the same figures.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ping, pong;

int main(int argc, char **argv)
{
    int rounds = 2000, flushes = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-f") && i + 1 < argc)
            flushes = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: flag_poll [-r ROUNDS] [-f FLUSHES]\n");
            return 2;
        }
    }
    if (rounds < 1 || flushes < 1) {
        fprintf(stderr, "flag_poll: -r and -f take positive counts\n");
        return 2;
    }
    double t_round = 0, t_idle = 0;
    long polls = 0;
    int threads = 0;
#pragma omp parallel reduction(+ : polls)
    {
        int me = omp_get_thread_num();
#pragma omp master
        threads = omp_get_num_threads();
#pragma omp barrier
        double t0 = omp_get_wtime();
        for (int k = 1; k <= rounds && omp_get_num_threads() > 1; k++) {
            if (me == 0) {
                ping = k;
#pragma omp flush
                for (;;) {
                    polls++;
#pragma omp flush
                    if (pong == k)
                        break;
                }
            } else if (me == 1) {
                for (;;) {
                    polls++;
#pragma omp flush
                    if (ping == k)
                        break;
                }
                pong = k;
#pragma omp flush
            }
        }
        if (me == 0)
            t_round = (omp_get_wtime() - t0) / rounds;
#pragma omp barrier
        t0 = omp_get_wtime();
        for (int k = 0; k < flushes; k++) {
#pragma omp flush
        }
        if (me == 0)
            t_idle = (omp_get_wtime() - t0) / flushes;
    }
    if (threads < 2) {
        fprintf(stderr, "flag_poll: needs 2 threads or more\n");
        return 2;
    }
    printf("threads %d: round trip %.1f us, %.1f flushes per round, idle flush %.2f us\n",
           threads, t_round * 1e6, (double)polls / rounds + 2, t_idle * 1e6);
    printf("RESULT app=flag_poll procs=%d round_us=%.2f flush_us=%.3f check=ok\n", threads,
           t_round * 1e6, t_idle * 1e6);
    return 0;
}
