/*
 * pt_streams — descriptors and streams are the process's (issue 89, point
 * 2): main fopens a file and opens another, and threads on every node
 * write LINES lines each through the FILE * (fprintf, fputs, fwrite,
 * vfprintf) and the descriptor (write, dprintf, writev);
 * afterwards each file holds every line exactly once, each whole. Each
 * worker also writes and reads back a file through a stream of its own.
 *
 *   pt_streams WORKERS
 *
 * main prints the counts; the output is compared with the same source
 * built plainly.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAXW  32
#define LINES 1000

static FILE *out;
static int fd;
static int workers;
static unsigned char seen[2][MAXW][LINES];
static int own_lines[MAXW];
static int run;

/* A stream of the worker's own, opened, written, closed and read back on
 * its node while the others write main's: its address may be another
 * node's stream's, which dsm tells apart. */
static int own_stream(int w)
{
    char path[80], buf[64];
    snprintf(path, sizeof path, "/tmp/pt_streams.%d.%d", run, w);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (int i = 0; i < 10; i++)
        fprintf(f, "own %d\n", i);
    fclose(f);
    f = fopen(path, "r");
    int n = 0;
    while (f && fgets(buf, sizeof buf, f))
        n++;
    if (f)
        fclose(f);
    unlink(path);
    return n;
}

/* A line: who, which, how, and padding to a fixed width (62 bytes and
 * the newline), so that a line cut or interleaved does not parse. */
static int line(char *buf, size_t room, int w, int i, const char *how)
{
    return snprintf(buf, room, "worker %02d line %04d by %-7s ..............................\n", w, i, how);
}

static void say(FILE *f, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    if (vfprintf(f, format, ap) < 0)
        perror("vfprintf");
    va_end(ap);
}

static void *worker(void *arg)
{
    int w = (int)(long)arg;
    char buf[128];
    for (int i = 0; i < LINES; i++) {
        switch (i % 4) {
        case 0:
            fprintf(out, "worker %02d line %04d by %-7s ..............................\n", w, i, "fprintf");
            break;
        case 1:
            line(buf, sizeof buf, w, i, "fputs");
            fputs(buf, out);
            break;
        case 2: {
            int n = line(buf, sizeof buf, w, i, "fwrite");
            if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
                perror("fwrite");
            break;
        }
        case 3:
            say(out, "worker %02d line %04d by %-7s ..............................\n", w, i, "vfprintf");
            break;
        }
        switch (i % 3) {
        case 0: {
            int n = line(buf, sizeof buf, w, i, "write");
            if (write(fd, buf, (size_t)n) != n)
                perror("write");
            break;
        }
        case 1:
            if (dprintf(fd, "worker %02d line %04d by %-7s ..............................\n", w, i, "dprintf") < 0)
                perror("dprintf");
            break;
        case 2: {
            int n = line(buf, sizeof buf, w, i, "writev");
            struct iovec v[2] = {{buf, 10}, {buf + 10, (size_t)n - 10}};
            if (writev(fd, v, 2) != n)
                perror("writev");
            break;
        }
        }
    }
    if (fflush(out))
        perror("fflush");
    own_lines[w] = own_stream(w);
    return NULL;
}

/* Every line of path parsed and counted into seen[which]: the lines that
 * do not parse as whole ones. */
static int check(const char *path, int which)
{
    FILE *in = fopen(path, "r");
    if (!in) {
        perror(path);
        exit(1);
    }
    char buf[256], how[16], want[128];
    int bad = 0, w, i;
    while (fgets(buf, sizeof buf, in)) {
        if (sscanf(buf, "worker %d line %d by %15s", &w, &i, how) != 3 || w < 0 || w >= workers || i < 0 ||
            i >= LINES) {
            bad++;
            continue;
        }
        line(want, sizeof want, w, i, how);
        if (strcmp(buf, want) != 0)
            bad++;
        else
            seen[which][w][i]++;
    }
    fclose(in);
    return bad;
}

int main(int argc, char **argv)
{
    workers = argc > 1 ? atoi(argv[1]) : 3;
    if (workers < 1 || workers > MAXW) {
        fprintf(stderr, "pt_streams: 1 to %d workers\n", MAXW);
        return 2;
    }
    char fpath[64], dpath[64];
    run = (int)getpid();
    snprintf(fpath, sizeof fpath, "/tmp/pt_streams.%d.file", run);
    snprintf(dpath, sizeof dpath, "/tmp/pt_streams.%d.fd", (int)getpid());
    out = fopen(fpath, "w");
    fd = open(dpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    if (!out || fd < 0) {
        perror("pt_streams: open");
        return 1;
    }
    pthread_t t[MAXW];
    for (int w = 0; w < workers; w++)
        pthread_create(&t[w], NULL, worker, (void *)(long)w);
    for (int w = 0; w < workers; w++)
        pthread_join(t[w], NULL);
    if (fclose(out) || close(fd))
        perror("pt_streams: close");

    int bad_file = check(fpath, 0), bad_fd = check(dpath, 1);
    unlink(fpath);
    unlink(dpath);
    long once[2] = {0, 0}, other[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        for (int w = 0; w < workers; w++)
            for (int i = 0; i < LINES; i++) {
                once[k] += seen[k][w][i] == 1;
                other[k] += seen[k][w][i] != 1;
            }
    printf("stream: %ld lines once, %ld missing or repeated, %d not whole\n", once[0], other[0], bad_file);
    printf("descriptor: %ld lines once, %ld missing or repeated, %d not whole\n", once[1], other[1], bad_fd);
    int own_ok = 0;
    for (int w = 0; w < workers; w++)
        own_ok += own_lines[w] == 10;
    printf("own streams: %d of %d read back whole\n", own_ok, workers);
    int ok = !other[0] && !other[1] && !bad_file && !bad_fd && own_ok == workers;
    printf("pt_streams: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
