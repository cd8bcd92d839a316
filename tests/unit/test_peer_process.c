/*
 * test_peer_process.c — what a node, or dsmrun's agent, sees of a process
 * (supervise/peer_process.h): a running one, a stopped one, a zombie and one that
 * is gone; and the arbiter's lines, which travel between hosts: formatted,
 * parsed back, and refused unless exactly as formatted.
 */
#include "check.h"
#include "supervise/peer_process.h"
#include "base/launch.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Looks at pid until its state is `want` (the kernel takes a moment to
 * stop or reap a child), at most 5 s; returns the last look's state. */
static char state_becomes(int pid, char want, struct process_sight *s)
{
    for (int i = 0; i < 500; i++) {
        process_look(pid, 0, s);
        if (s->state == want)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
    }
    return s->state;
}

static void test_a_process_is_seen_running_stopped_and_gone(void)
{
    /* 50 ms of CPU first: its stat counts 10 ms ticks. */
    struct timespec t;
    do
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    while (t.tv_sec == 0 && t.tv_nsec < 50 * 1000000);
    struct process_sight s;
    process_look(getpid(), 0, &s);
    CHECK_EQ(s.state, 'R');          /* this thread runs as it looks */
    CHECK(s.cpu_ns > 0);
    CHECK(s.process_cpu_ns > 0);

    pid_t child = fork();
    if (child == 0) {
        for (;;)
            pause();
    }
    CHECK(child > 0);
    CHECK_EQ(state_becomes(child, 'S', &s), 'S');  /* asleep in pause() */
    kill(child, SIGSTOP);
    CHECK_EQ(state_becomes(child, 'T', &s), 'T');
    kill(child, SIGCONT);
    CHECK_EQ(state_becomes(child, 'S', &s), 'S');
    kill(child, SIGKILL);
    CHECK_EQ(state_becomes(child, 'X', &s), 'X');  /* a zombie, not reaped */
    waitpid(child, NULL, 0);
    process_look(child, 0, &s);
    CHECK_EQ(s.state, 'X');                        /* gone */

    /* Another process's start time: not the one asked about. */
    char path[64], state;
    int ppid;
    unsigned long long start;
    uint64_t cpu;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)getpid());
    CHECK(proc_parse_stat(path, &state, &ppid, &start, &cpu));
    CHECK_EQ(ppid, getppid());
    process_look(getpid(), start, &s);
    CHECK_EQ(s.state, 'R');
    process_look(getpid(), start + 1, &s);
    CHECK_EQ(s.state, 'X');
}

static void test_arbiter_lines_round_trip(void)
{
    char buf[BOOT_ARBITER_LINE_MAX + 1];
    CHECK_EQ(process_look_format(buf, sizeof buf, 255), 8);
    CHECK(!strcmp(buf, "look 255"));
    CHECK_EQ(process_look_parse(buf, 256), 255);

    struct process_sight s = {.state = 'T', .cpu_ns = UINT64_MAX, .process_cpu_ns = UINT64_MAX},
                         got = {0};
    int len = process_seen_format(buf, sizeof buf, 255, &s);
    CHECK(len > 0 && len <= BOOT_ARBITER_LINE_MAX);
    CHECK_EQ(process_seen_parse(buf, 256, &got), 255);
    CHECK_EQ(got.state, 'T');
    CHECK(got.cpu_ns == UINT64_MAX && got.process_cpu_ns == UINT64_MAX);
}

static void test_arbiter_lines_refused_unless_exact(void)
{
    static const char *const looks[] = {
        "look", "look ", "look -1", "look 4", "look 01", "look +1", "look  1", "look 1 ",
        "look 1x", "look 1\n", "Look 1", "look 99999999999",
    };
    for (size_t i = 0; i < sizeof looks / sizeof *looks; i++)
        CHECK_EQ(process_look_parse(looks[i], 4), -1);
    CHECK_EQ(process_look_parse("look 3", 4), 3);

    static const char *const seens[] = {
        "seen 1 Q 1 2",         /* no such state */
        "seen 1 r 1 2",
        "seen 1 R -5 2",        /* a sign */
        "seen 1 R +5 2",
        "seen 1 R 01 2",        /* a leading zero */
        "seen 1 R 1 2 3",       /* more */
        "seen 1 R  1 2",        /* a blank more */
        "seen 1 R 1 2\n",
        "seen 1 R 18446744073709551616 2", /* beyond 64 bits */
        "seen 4 R 1 2",         /* beyond the job */
        "seen -1 R 1 2",
        "seen 1 R 1",
        "seen 1 R\x1b[2J 1 2",  /* what a terminal would act on */
        "seen 1 RR 1 2",
    };
    struct process_sight s = {.state = 'Z'};
    for (size_t i = 0; i < sizeof seens / sizeof *seens; i++) {
        CHECK_EQ(process_seen_parse(seens[i], 4, &s), -1);
        CHECK_EQ(s.state, 'Z');            /* untouched */
    }
    CHECK_EQ(process_seen_parse("seen 3 S 0 0", 4, &s), 3);
    CHECK_EQ(s.state, 'S');
}

int main(void)
{
    test_a_process_is_seen_running_stopped_and_gone();
    test_arbiter_lines_round_trip();
    test_arbiter_lines_refused_unless_exact();
    return check_report("test_peer_process");
}
