/*
 * pt_streams_omp — descriptors and streams are the process's under
 * OpenMP too (issue 89, point 2): main fopens a file and opens another,
 * a parallel loop's threads on every node fprintf and dprintf one line
 * per iteration; afterwards each file holds every line exactly once,
 * each whole.
 */
#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define N 4000

static unsigned char seen[2][N];

static int check(const char *path, int which)
{
    FILE *in = fopen(path, "r");
    char buf[128], want[128];
    int bad = 0, i, t;
    while (in && fgets(buf, sizeof buf, in)) {
        if (sscanf(buf, "line %d from thread %d", &i, &t) != 2 || i < 0 || i >= N) {
            bad++;
            continue;
        }
        snprintf(want, sizeof want, "line %05d from thread %d ....................\n", i, t);
        if (strcmp(buf, want))
            bad++;
        else
            seen[which][i]++;
    }
    if (in)
        fclose(in);
    return bad;
}

int main(void)
{
    char fpath[64], dpath[64];
    snprintf(fpath, sizeof fpath, "/tmp/pt_streams_omp.%d.file", (int)getpid());
    snprintf(dpath, sizeof dpath, "/tmp/pt_streams_omp.%d.fd", (int)getpid());
    FILE *f = fopen(fpath, "w");
    int fd = open(dpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    if (!f || fd < 0) {
        perror("pt_streams_omp");
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        fprintf(f, "line %05d from thread %d ....................\n", i, omp_get_thread_num());
        dprintf(fd, "line %05d from thread %d ....................\n", i, omp_get_thread_num());
    }
    fclose(f);
    close(fd);
    int bad = check(fpath, 0) + check(dpath, 1);
    unlink(fpath);
    unlink(dpath);
    int once = 0;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < N; i++)
            once += seen[k][i] == 1;
    printf("%d of %d lines once, %d not whole\n", once, 2 * N, bad);
    printf("pt_streams_omp: %s\n", once == 2 * N && !bad ? "ok" : "FAILED");
    return 0;
}
