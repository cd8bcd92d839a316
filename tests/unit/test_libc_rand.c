/*
 * test_libc_rand.c — the job's random number generators
 * (src/runtime/libc_rand.c) draw exactly what the C library's draw: rand,
 * random, initstate and setstate with buffers of every type, and the whole
 * drand48 family, from the first state and after many seeds. Issue 89,
 * point 3: a thread on another node must draw the one process's sequence.
 */
#define _DEFAULT_SOURCE
#include "check.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { DRAWS = 400 };

static void test_first_state_is_the_c_library_s(void)
{
    /* Before any seeding: this process has drawn nothing from either. */
    struct libc_rand r = {0};
    int same = 1;
    for (int i = 0; i < DRAWS; i++) {
        long want = random();
        same &= libc_random_next(&r) == want;
    }
    CHECK(same);
    same = 1;
    for (int i = 0; i < DRAWS; i++) {
        long want = lrand48();
        same &= libc_nrand48(&r.r48, r.r48.x) == want;
    }
    CHECK(same);
}

static void test_random_and_rand_after_any_seed(void)
{
    seed(89);
    for (int s = 0; s < 300; s++) {
        unsigned sd = s < 4 ? (unsigned)s : (unsigned)rng(); /* 0 is 1; seeds over 2^31 too */
        struct libc_rand r = {0};
        libc_random_seed(&r, sd);
        srandom(sd);
        int same = 1;
        for (int i = 0; i < DRAWS; i++)
            same &= libc_random_next(&r) == random();
        if (!same)
            fprintf(stderr, "srandom(%u) differs\n", sd);
        CHECK(same);
        libc_random_seed(&r, sd);
        srand(sd); /* rand is random */
        same = 1;
        for (int i = 0; i < DRAWS; i++)
            same &= libc_random_next(&r) == rand();
        CHECK(same);
    }
}

/* initstate with each size glibc tells apart (TYPE_0 .. TYPE_4), a draw
 * in each, and setstate back and forth: the same numbers and the same
 * returned (old) states, buffer for buffer. */
static void test_initstate_and_setstate_of_every_type(void)
{
    static const size_t sizes[] = {8, 31, 32, 63, 64, 127, 128, 255, 256, 300};
    enum { N = sizeof sizes / sizeof sizes[0] };
    static char mine[N][300], theirs[N][300];
    struct libc_rand r = {0};
    libc_random_seed(&r, 1);
    srandom(1);
    char *my_first = NULL, *their_first = NULL;
    for (size_t k = 0; k < N; k++) {
        char *my_old = libc_random_initstate(&r, (unsigned)(k * 7919 + 3), mine[k], sizes[k]);
        char *their_old = initstate((unsigned)(k * 7919 + 3), theirs[k], sizes[k]);
        if (k == 0) {
            my_first = my_old;
            their_first = their_old;
        } else
            CHECK(my_old == mine[k - 1] && their_old == theirs[k - 1]);
        int same = 1;
        for (int i = 0; i < 50; i++)
            same &= libc_random_next(&r) == random();
        if (!same)
            fprintf(stderr, "initstate of %zu bytes differs\n", sizes[k]);
        CHECK(same);
    }
    /* Back through every buffer, each going on where it stopped. */
    for (size_t k = N; k-- > 0;) {
        char *my_old = libc_random_setstate(&r, mine[k]);
        char *their_old = setstate(theirs[k]);
        CHECK((my_old == NULL) == (their_old == NULL));
        int same = 1;
        for (int i = 0; i < 37; i++)
            same &= libc_random_next(&r) == random();
        CHECK(same);
    }
    /* And to random's own first buffer. */
    libc_random_setstate(&r, my_first);
    setstate(their_first);
    int same = 1;
    for (int i = 0; i < DRAWS; i++)
        same &= libc_random_next(&r) == random();
    CHECK(same);
    /* Too small: EINVAL, nothing changed. */
    char tiny[7];
    errno = 0;
    CHECK(libc_random_initstate(&r, 5, tiny, sizeof tiny) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(initstate(5, tiny, sizeof tiny) == NULL && errno == EINVAL);
    same = 1;
    for (int i = 0; i < 50; i++)
        same &= libc_random_next(&r) == random();
    CHECK(same);
}

static void test_drand48_family_after_any_seed(void)
{
    seed(48);
    for (int s = 0; s < 300; s++) {
        struct libc_rand48 d = {0};
        long sd = (long)rng();
        libc_srand48(&d, sd);
        srand48(sd);
        int same = 1;
        for (int i = 0; i < DRAWS; i++) {
            switch (i % 3) {
            case 0: same &= libc_nrand48(&d, d.x) == lrand48(); break;
            case 1: same &= libc_jrand48(&d, d.x) == mrand48(); break;
            default: same &= libc_erand48(&d, d.x) == drand48(); break;
            }
        }
        if (!same)
            fprintf(stderr, "srand48(%ld) differs\n", sd);
        CHECK(same);

        /* seed48: the old state back, then the new sequence. */
        unsigned short seed16[3] = {(unsigned short)rng(), (unsigned short)rng(), (unsigned short)rng()};
        unsigned short *mine = libc_seed48(&d, seed16), *theirs = seed48(seed16);
        CHECK(!memcmp(mine, theirs, 3 * sizeof *mine));
        same = 1;
        for (int i = 0; i < 50; i++)
            same &= libc_nrand48(&d, d.x) == lrand48();
        CHECK(same);

        /* lcong48's a and c hold for the calls on a caller's xsubi too. */
        unsigned short param[7];
        for (int k = 0; k < 7; k++)
            param[k] = (unsigned short)rng();
        libc_lcong48(&d, param);
        lcong48(param);
        unsigned short mx[3] = {1, 2, 3}, tx[3] = {1, 2, 3};
        same = 1;
        for (int i = 0; i < 60; i++) {
            switch (i % 6) {
            case 0: same &= libc_nrand48(&d, d.x) == lrand48(); break;
            case 1: same &= libc_jrand48(&d, d.x) == mrand48(); break;
            case 2: same &= libc_erand48(&d, d.x) == drand48(); break;
            case 3: same &= libc_nrand48(&d, mx) == nrand48(tx); break;
            case 4: same &= libc_jrand48(&d, mx) == jrand48(tx); break;
            default: same &= libc_erand48(&d, mx) == erand48(tx); break;
            }
        }
        CHECK(same && !memcmp(mx, tx, sizeof mx));
    }
}

int main(void)
{
    test_first_state_is_the_c_library_s();
    test_random_and_rand_after_any_seed();
    test_initstate_and_setstate_of_every_type();
    test_drand48_family_after_any_seed();
    return check_report("libc_rand");
}
