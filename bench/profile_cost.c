/*
 * profile_cost.c — what each hook of the sharing profile costs
 * (DSM_PROFILE; src/base/profile.c, docs/profile.md).
 *
 *   build/bench/profile_cost [events]       (default 200000)
 *
 * The cost of profiling a run is its events times these: a fault, a fetch
 * or an invalidation, a diff (its bytes kept, or only counted), a lock
 * acquire kept on the node, a barrier, a release. Each is timed as the
 * runtime calls it, sampled stacks included (faults at 16 program
 * counters, sites as a program has a few). Prints the median over 7
 * rounds of ns per event, and the off path: the branch every hook takes
 * when the profile is off. Writes its profile to /tmp and deletes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/profile.h"
#include "mem/mem.h"

#define ROUNDS 7
#define PAGE 8192

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static unsigned char page[PAGE], twin[PAGE], diff64[PAGE + PAGE / 8 + 64],
    diffd[PAGE + PAGE / 8 + 64];
static long len64, lend;

enum hook { FAULT, PAGE_EVENT, DIFF_BLOCKS, DIFF_DOUBLES, DIFF_COUNTED, LOCK, BARRIER, RELEASE,
            OFF, NHOOKS };
static const char *const names[NHOOKS] = {
    "fault (record; stack 1 in 64 after 4 per pc)",
    "fetch, pull or invalidation (record)",
    "diff kept: 64 runs of 64 bytes",
    "diff kept: 1024 one-word runs (a bitmap)",
    "diff counted, bytes not kept",
    "lock acquire and release, kept on the node",
    "barrier (record; stack 1 in 8 after 16)",
    "release (record)",
    "any hook, profile off (branch)",
};

/* n events of one kind, ns each. */
static double run(enum hook h, long n)
{
    volatile uint64_t sink = 0;
    uint64_t t0 = clock_ns();
    for (long i = 0; i < n; i++) {
        switch (h) {
        case FAULT:
            profile_fault((size_t)(i & 1023), page + 64,
                          (const void *)(uintptr_t)(0x401000 + (i & 15) * 16), i & 1, t0, 0);
            break;
        case PAGE_EVENT:
            profile_page(PROF_INVAL, 0, (size_t)(i & 1023), 0);
            break;
        case DIFF_BLOCKS:
            mem_profile_diff(PROF_DIFF_SENT, (size_t)(i & 1023), 0, diff64, (size_t)len64);
            break;
        case DIFF_DOUBLES:
            mem_profile_diff(PROF_DIFF_SENT, (size_t)(i & 1023), 0, diffd, (size_t)lend);
            break;
        case DIFF_COUNTED:
            profile_diff_counted(PROF_DIFF_SENT, (size_t)(i & 1023), 1024);
            break;
        case LOCK:
            profile_lock((int)(i & 63), false, 0, 0, 0);
            profile_unlock((int)(i & 63));
            break;
        case BARRIER:
            profile_barrier(t0, 0);
            break;
        case RELEASE:
            profile_release(false, t0, 0);
            break;
        case OFF:
        case NHOOKS:
            if (PROFILE_ON)
                profile_page(PROF_INVAL, 0, (size_t)i, 0);
            sink += (uint64_t)i;
            break;
        }
    }
    (void)sink; /* a volatile read: clang counts the stores alone as unused */
    return (double)(clock_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    if (n < 1000 || n > 100000000) {
        fprintf(stderr, "usage: profile_cost [events, 1000 .. 100000000]\n");
        return 2;
    }
    /* mem_profile_diff reads the page size from the region's table */
    mem.page_size = PAGE;
    for (size_t b = 0; b < PAGE / 64; b += 2)
        memset(page + b * 64, 7, 64);
    len64 = mem_diff_create(page, twin, PAGE, diff64, sizeof diff64);
    /* doubles scaled a little: their low words change, most high words
     * not (a solver's update): every other word, 1024 runs */
    double *d = (double *)(void *)page, *dt = (double *)(void *)twin;
    for (size_t i = 0; i < PAGE / sizeof *d; i++) {
        dt[i] = 1.0 + (double)i;
        d[i] = dt[i] * 1.0000001;
    }
    lend = mem_diff_create(page, twin, PAGE, diffd, sizeof diffd);

    double t[NHOOKS][ROUNDS];
    char path[64];
    snprintf(path, sizeof path, "/tmp/profile_cost.%d", (int)getpid());
    for (int r = 0; r < ROUNDS; r++) {
        t[OFF][r] = run(OFF, n * 10);
        /* a fresh profile each round: its interval 0 keeps every diff's bytes */
        struct profile_info pi = {.rank = 0, .nodes = 1, .protocol = "none", .page_size = PAGE,
                                  .npages = 1024, .arena_pages = 1024};
        if (profile_start(path, &pi)) {
            perror(path);
            return 1;
        }
        for (int h = 0; h < OFF; h++)
            if (h != BARRIER) /* barriers advance the interval: last */
                t[h][r] = run((enum hook)h, n);
        t[BARRIER][r] = run(BARRIER, n / 10);
        profile_finish();
        char file[80];
        snprintf(file, sizeof file, "%s.0", path);
        unlink(file);
    }
    for (int h = 0; h < NHOOKS; h++) {
        qsort(t[h], ROUNDS, sizeof t[h][0], cmp);
        printf("%-46s %8.1f ns median, %8.1f min\n", names[h], t[h][ROUNDS / 2], t[h][0]);
    }
    return 0;
}
