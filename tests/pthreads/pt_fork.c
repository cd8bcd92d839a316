/*
 * pt_fork — fork in a dsmcc program (docs/api.md, "fork"), whose main runs
 * on a stack in the shared region and whose globals are shared: fork then
 * exec, system() and popen() work as without dsm; a child that writes a
 * global ends in one line naming fork and node 0, and the global keeps the
 * node's value. Prints "fork: ok" at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int global_word = 1;

static int child_status(pid_t pid)
{
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
        printf("fork: the child did not exit\n");
        exit(1);
    }
    return WEXITSTATUS(st);
}

int main(void)
{
    char cmd[32];
    snprintf(cmd, sizeof cmd, "exit %d", 7); /* on main's stack, read by the child */
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int exec_status = child_status(pid);
    int st = system("exit 3");
    FILE *p = popen("echo popen-line", "r");
    char line[64] = "";
    int popen_ok = p && fgets(line, sizeof line, p) && !strcmp(line, "popen-line\n") && pclose(p) == 0;
    pid = fork();
    if (pid == 0) {
        global_word = 999;
        _exit(0);
    }
    int write_status = child_status(pid);
    printf("exec %d system %d popen %d write %d global %d\n", exec_status,
           WIFEXITED(st) ? WEXITSTATUS(st) : -1, popen_ok, write_status, global_word);
    if (exec_status == 7 && WIFEXITED(st) && WEXITSTATUS(st) == 3 && popen_ok && write_status == 1 &&
        global_word == 1)
        printf("fork: ok\n");
    return 0;
}
