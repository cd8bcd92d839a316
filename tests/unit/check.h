/* check.h — the smallest test harness: CHECK records, the summary line tells. */
#ifndef DSM_TEST_CHECK_H
#define DSM_TEST_CHECK_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond)                                                              \
            check_passed++;                                                    \
        else {                                                                 \
            check_failed++;                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                      \
    } while (0)

#define CHECK_EQ(a, b)                                                         \
    do {                                                                       \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);        \
        if (check_a_ == check_b_)                                              \
            check_passed++;                                                    \
        else {                                                                 \
            check_failed++;                                                    \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
                    __FILE__, __LINE__, #a, check_a_, #b, check_b_);           \
        }                                                                      \
    } while (0)

/* A seeded xorshift64* generator for the tests' random inputs (the same
 * seed gives the same run, so a failure can be replayed). */
static inline uint64_t *check_rng_state(void)
{
    static uint64_t state;
    return &state;
}

static inline void seed(uint64_t s)
{
    *check_rng_state() = s * 0x9E3779B97F4A7C15ULL + 1;
}

static inline uint64_t rng(void)
{
    uint64_t x = *check_rng_state();
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *check_rng_state() = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline int check_report(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
#endif
