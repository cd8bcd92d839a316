/*
 * test_liveness.c — a silent peer on this host, as a node judges it
 * (supervise/liveness.c): one its launcher has forked but not yet exec'd (a
 * node that comes up late on a loaded machine: at load 20-40 one came up
 * 0.6 s after its peers, which declared it dead) is not dead, however
 * long its silence; once it runs and stops (SIGSTOP), it is, and is said
 * to be stopped.
 *
 * This process plays the launcher, as dsmrun does: it forks node 0 (this
 * program again, exec'd with the job and its rank in its environment) and
 * node 1, which waits, forked and not exec'd, while node 0 judges it; then
 * node 1 execs, and stops itself, and node 0 judges it again. Node 0's
 * verdicts come back through a pipe.
 */
#include "check.h"
#include "base/clock.h"
#include "base/job.h"
#include "supervise/supervise.h"
#include "base/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_NS (500 * 1000000ull)
/* A thousand timeouts: a peer judged by its silence alone is dead at any
 * load below 16,000 runnable threads a CPU (silence_allowed_ns). */
#define LONG_SILENCE_NS (1000 * TIMEOUT_NS)

/* One silence of peer 1, as the transport's timers see it: heard, then a
 * quarter timeout and more (its process is looked for, and at), then
 * LONG_SILENCE_NS. Whether it was then dead, and why. */
static char judge_one_silence(uint64_t start, const char **why)
{
    supervise_peer_dead(1, true, 0, TIMEOUT_NS, start, why);
    supervise_peer_dead(1, true, TIMEOUT_NS / 2, TIMEOUT_NS, start + TIMEOUT_NS / 2, why);
    return supervise_peer_dead(1, true, LONG_SILENCE_NS, TIMEOUT_NS, start + LONG_SILENCE_NS, why) ? 'd' : 'a';
}

/* Node 0: a verdict on peer 1 for each byte from `go`, written to `out`. */
static int node0(int go, int out)
{
    job_init()->rank = 0;
    job_init()->nodes = 2;
    uint64_t start = clock_ns();
    char c;
    while (read(go, &c, 1) == 1) {
        const char *why = NULL;
        char verdict[2] = {judge_one_silence(start, &why), 0};
        if (write(out, verdict, 1) != 1 ||
            write(out, why ? why : "", strlen(why ? why : "") + 1) < 0)
            return 1;
        start += 2 * LONG_SILENCE_NS; /* the next silence is a new one */
    }
    return 0;
}

/* Reads a verdict and its reason (NUL-terminated) from fd. */
static char verdict(int fd, char *why, size_t len)
{
    char v = 0;
    size_t n = 0;
    if (read(fd, &v, 1) != 1)
        return 0;
    while (n + 1 < len && read(fd, &why[n], 1) == 1 && why[n])
        n++;
    why[n] = 0;
    return v;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "node0"))
        return node0(atoi(argv[2]), atoi(argv[3]));
    if (argc == 2 && !strcmp(argv[1], "node1")) {
        raise(SIGSTOP);
        return 0;
    }
    /* Each process keeps only its own ends: node 0 then sees the end of
     * `go` when this one closes it. */
    int go[2], out[2], hold[2];
    CHECK(pipe2(go, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 && pipe2(hold, O_CLOEXEC) == 0);
    setenv(BOOT_ENV_JOB, "0123456789abcdef", 1);

    pid_t n1 = fork();
    if (n1 == 0) { /* node 1: forked, held before its exec */
        char c;
        if (read(hold[0], &c, 1) != 1)
            _exit(1);
        setenv(BOOT_ENV_RANK, "1", 1);
        execl("/proc/self/exe", argv[0], "node1", (char *)NULL);
        _exit(127);
    }
    pid_t n0 = fork();
    if (n0 == 0) {
        char a[16], b[16];
        snprintf(a, sizeof a, "%d", go[0]);
        snprintf(b, sizeof b, "%d", out[1]);
        setenv(BOOT_ENV_RANK, "0", 1);
        fcntl(go[0], F_SETFD, 0);
        fcntl(out[1], F_SETFD, 0);
        execl("/proc/self/exe", argv[0], "node0", a, b, (char *)NULL);
        _exit(127);
    }
    close(go[0]);
    close(out[1]);
    CHECK(n0 > 0 && n1 > 0);

    /* Node 1 not yet exec'd: starting, not dead. */
    char why[256];
    CHECK(write(go[1], "1", 1) == 1);
    CHECK_EQ(verdict(out[0], why, sizeof why), 'a');

    /* Node 1 runs, and stops itself: dead, and said to be stopped. */
    CHECK(write(hold[1], "1", 1) == 1);
    int status;
    CHECK(waitpid(n1, &status, WUNTRACED) == n1 && WIFSTOPPED(status));
    CHECK(write(go[1], "1", 1) == 1);
    CHECK_EQ(verdict(out[0], why, sizeof why), 'd');
    CHECK(strstr(why, "stopped") != NULL);

    close(go[1]);
    CHECK(waitpid(n0, &status, 0) == n0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    kill(n1, SIGKILL);
    waitpid(n1, NULL, 0);
    return check_report("test_liveness");
}
