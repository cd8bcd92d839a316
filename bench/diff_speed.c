/*
 * diff_speed.c — time twin/diff create and apply per page.
 *
 * For pages of 4, 8, 16 and 64 KiB with none, one word, 10 %, 50 % and 100 %
 * of the words changed (at random places), either in one byte ("b": a char,
 * a bool, a flag; the diff carries a byte mask) or in all four ("w": an int,
 * a float, a pointer written whole), prints nanoseconds per page:
 *   create/hot   the same page and twin again and again (in cache)
 *   create/cold  a different page each time, cycling through 64 MiB of pages
 *                and twins (mostly out of cache: the case right after the
 *                application wrote many pages)
 *   apply/hot    applying the diff onto a copy of the twin
 * Best of 5 rounds. A benchmark, not a test: it asserts nothing but prints
 * "MISMATCH" if an applied diff does not reproduce the page.
 */
#include "mem/diff.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COLD_BYTES ((size_t)64 << 20)
#define ROUNDS     5

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Makes `page` a copy of `twin` with `changed` distinct random words altered
 * (all of them when changed == words), in their first byte or, when
 * `whole`, in all four. */
static void mutate(unsigned char *page, const unsigned char *twin, size_t size, size_t changed,
                   int whole)
{
    size_t words = size / 4, bytes = whole ? 4 : 1;
    memcpy(page, twin, size);
    for (size_t c = 0; c < changed && c < words;) {
        size_t w = changed < words ? rng() % words : c;
        if (page[w * 4] != twin[w * 4])
            continue;
        for (size_t b = 0; b < bytes; b++)
            page[w * 4 + b] ^= 0xFF;
        c++;
    }
}

static volatile long sink;

int main(void)
{
    static const size_t sizes[] = {4096, 8192, 16384, 65536};
    static const struct { const char *name; double frac; int whole; } pats[] = {
        {"0%", 0, 0},      {"1 b", -1, 0},     {"10% b", 0.10, 0}, {"50% b", 0.50, 0},
        {"100% b", 1.0, 0}, {"1 w", -1, 1},    {"10% w", 0.10, 1}, {"50% w", 0.50, 1},
        {"100% w", 1.0, 1},
    };
    unsigned char *pages = aligned_alloc(4096, COLD_BYTES);
    unsigned char *twins = aligned_alloc(4096, COLD_BYTES);
    unsigned char *dst = aligned_alloc(4096, MEM_DIFF_MAX_PAGE);
    unsigned char *diff = malloc(mem_diff_bound(MEM_DIFF_MAX_PAGE));
    if (!pages || !twins || !dst || !diff) {
        fprintf(stderr, "diff_speed: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < COLD_BYTES; i++)
        twins[i] = (unsigned char)rng();

    printf("%-6s %-7s %8s %8s %12s %12s %10s\n", "page", "changed", "diff B", "payload",
           "create/hot", "create/cold", "apply/hot");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = sizes[s], words = size / 4, npages = COLD_BYTES / size;
        for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
            size_t changed = pats[p].frac < 0 ? 1 : (size_t)(pats[p].frac * words);
            for (size_t i = 0; i < npages; i++)
                mutate(pages + i * size, twins + i * size, size, changed, pats[p].whole);

            long len = mem_diff_create(pages, twins, size, diff, mem_diff_bound(size));
            long payload = mem_diff_payload(diff, (size_t)len);
            memcpy(dst, twins, size);
            if (mem_diff_apply(dst, size, diff, (size_t)len) != 0 || memcmp(dst, pages, size) != 0)
                printf("MISMATCH\n");

            int hot_iters = (int)(4000000 / size) + 100;
            double hot = 1e30, cold = 1e30, apply = 1e30;
            for (int r = 0; r < ROUNDS; r++) {
                double t0 = now_ns();
                for (int i = 0; i < hot_iters; i++)
                    sink += mem_diff_create(pages, twins, size, diff, mem_diff_bound(size));
                double t1 = now_ns();
                for (size_t i = 0; i < npages; i++)
                    sink += mem_diff_create(pages + i * size, twins + i * size, size, diff,
                                            mem_diff_bound(size));
                double t2 = now_ns();
                len = mem_diff_create(pages, twins, size, diff, mem_diff_bound(size));
                double t3 = now_ns();
                for (int i = 0; i < hot_iters; i++)
                    sink += mem_diff_apply(dst, size, diff, (size_t)len);
                double t4 = now_ns();
                if ((t1 - t0) / hot_iters < hot)
                    hot = (t1 - t0) / hot_iters;
                if ((t2 - t1) / npages < cold)
                    cold = (t2 - t1) / npages;
                if ((t4 - t3) / hot_iters < apply)
                    apply = (t4 - t3) / hot_iters;
            }
            printf("%-6zu %-7s %8ld %8ld %9.0f ns %9.0f ns %7.0f ns\n", size, pats[p].name, len,
                   payload, hot, cold, apply);
        }
    }
    free(pages);
    free(twins);
    free(dst);
    free(diff);
    return 0;
}
