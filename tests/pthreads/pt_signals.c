/*
 * pt_signals — signal dispositions are the job's (issue 55, point 6):
 * handlers main installs (sigaction, signal) run in threads on every node
 * that raise the signal, as in one process; a SIGSEGV handler of the
 * program takes its own faults (a probe of an unmapped address, left by
 * siglongjmp) while faults on shared memory stay dsm's.
 *
 *   pt_signals WORKERS
 *
 * main prints the counts; the output is compared with the same source
 * built plainly.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXW 16
#define N 20000

static _Thread_local volatile sig_atomic_t got_usr1, got_usr2;
static _Thread_local sigjmp_buf probe;
static long data[N];
static long caught[MAXW][3];
static int workers;

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (sig == SIGUSR1 && si->si_signo == SIGUSR1)
        got_usr1++;
}

static void on_usr2(int sig) { got_usr2 += sig == SIGUSR2; }

static void on_segv(int sig) { siglongjmp(probe, sig); }

/* Whether *p can be read: the program's own fault handler says. */
static int readable(const volatile long *p)
{
    if (sigsetjmp(probe, 1))
        return 0;
    (void)*p;
    return 1;
}

static void *worker(void *arg)
{
    long i = (long)arg;
    raise(SIGUSR1);
    raise(SIGUSR1);
    raise(SIGUSR2);
    long sum = 0; /* shared memory, read through dsm's faults */
    for (long k = N * i / workers; k < N * (i + 1) / workers; k++)
        sum += data[k];
    int probe_ok = !readable((const long *)16) && readable(&data[0]);
    caught[i][0] = got_usr1 + 10 * got_usr2;
    caught[i][1] = sum;
    caught[i][2] = probe_ok;
    return NULL;
}

int main(int argc, char **argv)
{
    workers = argc > 1 ? atoi(argv[1]) : 3;
    if (workers < 1 || workers > MAXW)
        return 2;
    long want = 0;
    for (long k = 0; k < N; k++)
        want += data[k] = k % 97;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    int rc1 = sigaction(SIGUSR1, &sa, NULL);
    int rc2 = signal(SIGUSR2, on_usr2) == SIG_ERR;
    struct sigaction segv;
    memset(&segv, 0, sizeof segv);
    segv.sa_handler = on_segv;
    sigemptyset(&segv.sa_mask);
    int rc3 = sigaction(SIGSEGV, &segv, NULL);
    pthread_t th[MAXW];
    for (long i = 0; i < workers; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < workers; i++)
        pthread_join(th[i], NULL);
    long total = 0, bad = rc1 || rc2 || rc3;
    for (int i = 0; i < workers; i++) {
        printf("thread %d: handled %ld, probe %s\n", i, caught[i][0], caught[i][2] ? "ok" : "WRONG");
        total += caught[i][1];
        bad += caught[i][0] != 12 || !caught[i][2];
    }
    raise(SIGUSR1);
    printf("main handled %d; sum %ld (want %ld)\npt_signals: %s\n", (int)got_usr1, total, want,
           !bad && total == want && got_usr1 == 1 ? "ok" : "FAILED");
    return bad || total != want;
}
