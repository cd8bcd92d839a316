/*
 * A node starved of CPU for longer than DSM_PEER_TIMEOUT is slow, not
 * dead: the job must not end for it.
 *
 * The last node moves every thread of its process onto one CPU and
 * starts a hog there: a process of this program (argument "hog") at
 * real-time priority (SCHED_FIFO), spinning for `seconds`. Linux leaves
 * ordinary threads on that CPU 5 % of each second (sched_rt_runtime_us),
 * so the node runs 50 ms and then waits about 0.95 s, runnable, over and
 * over — longer than the timeout it is run with (0.5 s). Node 0 meanwhile
 * calls it, again and again, until the node answers that the hog has
 * ended: each call waits through the node's starved stretches with its
 * datagrams unacknowledged. Every node then checks the calls' answers
 * and the job ends normally: "starved peer: ok".
 *
 * Needs CAP_SYS_NICE (SCHED_FIFO) and 2 CPUs; without them it says
 * "starved peer: skipped" (ctest's skip).
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mp_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int hog(double seconds)
{
    double until = now_s() + seconds;
    while (now_s() < until)
        ;
    return 0;
}

/* Every thread of this process onto `cpu` (affinity is per thread). */
static void pin_process(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    DIR *d = opendir("/proc/self/task");
    MP_CHECK(d != NULL, "/proc/self/task: %s", strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            MP_CHECK(sched_setaffinity(atoi(e->d_name), sizeof set, &set) == 0, "sched_setaffinity: %s",
                     strerror(errno));
    closedir(d);
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "hog"))
        return hog(atof(argv[2]));
    double seconds = argc > 1 ? atof(argv[1]) : 3;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        printf("starved peer: skipped, one CPU\n");
        return 0;
    }
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int port = dsm_port_create("p", 8);
    dsm_port_ref starved;
    MP_CHECK(dsm_port_lookup(n - 1, "p", 30, &starved) == 0, "lookup");
    int answer_fifo = 1, calls = 0;
    dsm_barrier();
    if (me == n - 1) {
        int cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
        pin_process(cpu);
        posix_spawnattr_t at;
        posix_spawnattr_init(&at);
        struct sched_param sp = {.sched_priority = 1};
        posix_spawnattr_setschedpolicy(&at, SCHED_FIFO);
        posix_spawnattr_setschedparam(&at, &sp);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSCHEDULER);
        char secs[32];
        snprintf(secs, sizeof secs, "%g", seconds);
        char *hog_argv[] = {argv[0], "hog", secs, NULL}, *no_env[] = {NULL};
        pid_t pid;
        int rc = posix_spawn(&pid, "/proc/self/exe", NULL, &at, hog_argv, no_env);
        MP_CHECK(rc == 0 || rc == EPERM, "posix_spawn: %s", strerror(rc));
        /* Serve node 0's calls: each answer says whether the hog still runs. */
        for (;;) {
            struct dsm_msg m;
            MP_CHECK(dsm_msg_recv(port, &m, DSM_FOREVER) == 0, "recv");
            int status, running = rc == 0 && waitpid(pid, &status, WNOHANG) == 0;
            int answer[2] = {running, rc == 0};
            MP_CHECK(dsm_msg_reply(&m, answer, sizeof answer) == 0, "reply");
            dsm_msg_free(&m);
            if (!running)
                break;
        }
        if (rc == 0)
            waitpid(pid, NULL, 0);
    } else if (me == 0) {
        int answer[2] = {1, 1};
        while (answer[0]) {
            long got = dsm_msg_call(&starved, "ping", 4, answer, sizeof answer, DSM_FOREVER);
            MP_CHECK(got == (long)sizeof answer, "call returned %ld", got);
            calls++;
        }
        answer_fifo = answer[1];
        if (!answer[1]) {
            printf("starved peer: skipped, no SCHED_FIFO here (needs CAP_SYS_NICE)\n");
            fflush(stdout);
        }
        MP_CHECK(calls >= 1, "calls");
    }
    dsm_barrier();
    if (me == 0 && answer_fifo)
        printf("starved peer: ok, node %d starved for %g s, %d calls\n", n - 1, seconds, calls);
    dsm_finish();
    return 0;
}
