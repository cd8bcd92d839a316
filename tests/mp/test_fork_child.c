/*
 * fork in a node (docs/api.md, "fork"; runtime/forked.c): a child that
 * execs works, a child that touches shared memory or calls dsm ends in one
 * line naming fork and the node, and nothing it did reaches the job.
 *
 *   test_fork_child exec     fork then exec (exit status 7), system()
 *                            (status 3), popen() (a line read back), a
 *                            child that only calls exit(0): all as without
 *                            dsm, on every node; node 0 forks from a second
 *                            thread too
 *   test_fork_child write    the last node's child writes a shared word its
 *                            node holds writable
 *   test_fork_child read     the last node's child reads a shared page its
 *                            node does not hold
 *   test_fork_child call     the last node's child calls dsm_barrier
 *   test_fork_child thread   node 0's child, forked from a second thread,
 *                            writes a shared word
 *
 * In the misuse modes the node checks that the child exited with status 1
 * and that the shared word still holds what the node wrote; the job then
 * ends well ("MODE: ok"). The line itself is checked by fork_child.sh.
 */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mp_util.h"

static int *shared;     /* shared[0]: written by the misbehaving node; the
                           page of shared[2048] is node 0's alone */
static const char *mode;

static int child_status(pid_t pid)
{
    int st;
    MP_CHECK(pid > 0, "fork failed");
    MP_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    MP_CHECK(WIFEXITED(st), "the child died of signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return WEXITSTATUS(st);
}

static void run_execs(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
        _exit(127);
    }
    MP_CHECK(child_status(pid) == 7, "fork then exec: the child's status");
    int st = system("exit 3");
    MP_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3, "system: status %d", st);
    FILE *p = popen("echo popen-line", "r");
    char line[64] = "";
    MP_CHECK(p && fgets(line, sizeof line, p), "popen");
    MP_CHECK(!strcmp(line, "popen-line\n") && pclose(p) == 0, "popen read '%s'", line);
    pid = fork();
    if (pid == 0)
        exit(0); /* exit handlers run in the child: none of them is dsm's */
    MP_CHECK(child_status(pid) == 0, "a child calling exit(0)");
}

/* The child's misuse; it must not return. */
static void misuse(int *word)
{
    if (!strcmp(mode, "read"))
        printf("read %d\n", shared[2048]);
    else if (!strcmp(mode, "call"))
        dsm_barrier();
    else
        *word = 999;
    _exit(0);
}

static void *fork_from_thread(void *arg)
{
    (void)arg;
    if (!strcmp(mode, "exec"))
        run_execs();
    else {
        pid_t pid = fork();
        if (pid == 0)
            misuse(&shared[0]);
        MP_CHECK(child_status(pid) == 1, "the child's status");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    mode = argc > 1 ? argv[1] : "exec";
    int me = dsm_rank(), last = dsm_nodes() - 1;
    int misbehaving = !strcmp(mode, "thread") ? 0 : last;
    if (me == 0) {
        shared = dsm_malloc(4 * dsm_page_size());
        memset(shared, 0, 4 * dsm_page_size());
        shared[2048] = 5;
    }
    dsm_bcast(&shared, sizeof shared, 0);
    dsm_barrier();
    if (!strcmp(mode, "exec")) {
        run_execs();
        if (me == 0) {
            pthread_t t;
            MP_CHECK(pthread_create(&t, NULL, fork_from_thread, NULL) == 0, "pthread_create");
            pthread_join(t, NULL);
        }
    } else if (me == misbehaving) {
        shared[0] = 1; /* writable here now */
        if (!strcmp(mode, "thread")) {
            pthread_t t;
            MP_CHECK(pthread_create(&t, NULL, fork_from_thread, NULL) == 0, "pthread_create");
            pthread_join(t, NULL);
        } else {
            pid_t pid = fork();
            if (pid == 0)
                misuse(&shared[0]);
            MP_CHECK(child_status(pid) == 1, "the child's status");
        }
        MP_CHECK(shared[0] == 1, "the child's write reached the node: %d", shared[0]);
    }
    dsm_barrier();
    if (me == 0) {
        MP_CHECK(strcmp(mode, "exec") == 0 || shared[0] == 1, "node 0 reads %d", shared[0]);
        printf("%s: ok\n", mode);
    }
    dsm_finish();
    return 0;
}
