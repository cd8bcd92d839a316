/*
 * syscall_cost.c — what a system call into shared memory costs (issue 89;
 * src/mem/kernel.c).
 *
 *   build/tools/dsmrun -n 1 build/bench/syscall_cost [--calls N] [--bytes B]
 *
 * pread(fd, buf, B, 0) of a B-byte file (4 KiB by default), N times a round
 * (default 20000), median over 9 rounds of ns per call, four ways:
 *   C library's, region    the C library's pread (what every call was
 *                          before dsm's wrapper: it works here because the
 *                          page is valid and writable on this node)
 *   dsm's, region          the same call through libdsm's pread: the kernel
 *                          writes private memory, copied into the page
 *   C library's, private   into a private buffer, the C library's
 *   dsm's, private         into it through libdsm's pread (one compare)
 * The rounds alternate the four, so drift hits them alike.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "dsm.h"

#define ROUNDS 9

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double per_call(pread_fn fn, int fd, void *buf, int bytes, int calls)
{
    double t0 = now_ns();
    for (int i = 0; i < calls; i++)
        if (fn(fd, buf, (size_t)bytes, 0) != bytes) {
            perror("pread");
            exit(1);
        }
    return (now_ns() - t0) / calls;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n 1 syscall_cost [--calls N] [--bytes B]\n"
               "  pread of B bytes (1..65536, default 4096) into shared and private memory,\n"
               "  the C library's and dsm's, N calls a round (default 20000)\n");
}

int main(int argc, char **argv)
{
    int calls = 20000, bytes = 4096;
    struct arg_option options[] = {
        {"--calls", ARG_INT, &calls, "a whole number 100..10000000", .lo = 100, .hi = 10000000},
        {"--bytes", ARG_INT, &bytes, "a whole number 1..65536", .lo = 1, .hi = 65536},
        {0}};
    dsm_startup(&argc, &argv);
    int a = args_read(argc, argv, options, usage, dsm_rank() == 0);
    if (a != ARGS_RUN)
        return a;
    char path[] = "/tmp/syscall_cost.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, bytes) != 0)
        return perror(path), 1;
    unlink(path);
    pread_fn libc = (pread_fn)dlsym(RTLD_NEXT, "pread");
    if (!libc)
        return fprintf(stderr, "the C library's pread is not found\n"), 1;
    char *region = dsm_malloc((size_t)bytes), *private = malloc((size_t)bytes);
    memset(region, 1, (size_t)bytes); /* valid and writable here */
    memset(private, 1, (size_t)bytes);
    struct { const char *name; pread_fn fn; char *buf; double ns[ROUNDS]; } ways[] = {
        {"C library's, region", libc, region, {0}},
        {"dsm's, region", pread, region, {0}},
        {"C library's, private", libc, private, {0}},
        {"dsm's, private", pread, private, {0}},
    };
    for (int r = 0; r < ROUNDS; r++)
        for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++)
            ways[w].ns[r] = per_call(ways[w].fn, fd, ways[w].buf, bytes, calls);
    printf("pread of %d bytes from a file, median of %d rounds of %d calls:\n", bytes, ROUNDS, calls);
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        qsort(ways[w].ns, ROUNDS, sizeof ways[w].ns[0], cmp);
        printf("  %-22s %8.0f ns per call\n", ways[w].name, ways[w].ns[ROUNDS / 2]);
    }
    close(fd);
    dsm_free(region);
    free(private);
    dsm_finish();
    return 0;
}
