/*
 * test_inject.c — the fault injector: inactive when all is zero, drops,
 * duplicates and holds back the fractions it is given, and replays the same
 * decisions from the same seed.
 */
#include "check.h"
#include "net/inject.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define DECISIONS 100000

struct counts {
    long send, drop, dup, hold;
};

static struct counts decide_many(struct inject *in, long n)
{
    struct counts c = {0};
    for (long i = 0; i < n; i++) {
        switch (inject_decide(in)) {
        case INJECT_SEND: c.send++; break;
        case INJECT_DROP: c.drop++; break;
        case INJECT_DUPLICATE: c.dup++; break;
        case INJECT_HOLD: c.hold++; break;
        }
    }
    return c;
}

/* Whether `hits` out of n is a plausible draw of probability p: within five
 * standard deviations (the seeds are fixed, so this never flakes; it fails
 * only for a generator or a decision rule that is off). */
static int near(long hits, long n, double p, const char *what)
{
    double got = (double)hits / (double)n;
    double tol = 5 * sqrt(p * (1 - p) / (double)n) + 1e-9;
    if (fabs(got - p) > tol) {
        fprintf(stderr, "%s: observed %.5f, want %.5f +- %.5f\n", what, got, p, tol);
        return 0;
    }
    return 1;
}

static void test_zero_settings_are_inactive_and_always_send(void)
{
    struct inject in;
    inject_init(&in, 0, 0, 0, 0, 1);
    CHECK(!inject_active(&in));
    struct counts c = decide_many(&in, DECISIONS);
    CHECK_EQ(c.send, DECISIONS);

    /* Any one setting makes it active. */
    inject_init(&in, 0.01, 0, 0, 0, 1);
    CHECK(inject_active(&in));
    inject_init(&in, 0, 0.01, 0, 0, 1);
    CHECK(inject_active(&in));
    inject_init(&in, 0, 0, 0.01, 0, 1);
    CHECK(inject_active(&in));
    inject_init(&in, 0, 0, 0, 1, 1);
    CHECK(inject_active(&in));
    CHECK(in.delay_ns == 1000);
    /* Delay alone changes no decision. */
    c = decide_many(&in, 1000);
    CHECK_EQ(c.send, 1000);
}

static void test_loss_drops_the_given_fraction(void)
{
    static const double ps[] = {0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        struct inject in;
        inject_init(&in, ps[i], 0, 0, 0, 1000 + i);
        struct counts c = decide_many(&in, DECISIONS);
        CHECK(near(c.drop, DECISIONS, ps[i], "loss"));
        CHECK_EQ(c.drop + c.send, DECISIONS);
    }
    /* Certain loss drops everything. */
    struct inject in;
    inject_init(&in, 1.0, 0, 0, 0, 5);
    CHECK_EQ(decide_many(&in, 1000).drop, 1000);
}

static void test_dup_and_reorder_alone_give_their_fractions(void)
{
    static const double ps[] = {0.01, 0.1, 0.5, 0.9};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        struct inject in;
        inject_init(&in, 0, ps[i], 0, 0, 2000 + i);
        struct counts c = decide_many(&in, DECISIONS);
        CHECK(near(c.dup, DECISIONS, ps[i], "dup"));
        CHECK_EQ(c.dup + c.send, DECISIONS);

        inject_init(&in, 0, 0, ps[i], 0, 3000 + i);
        c = decide_many(&in, DECISIONS);
        CHECK(near(c.hold, DECISIONS, ps[i], "reorder"));
        CHECK_EQ(c.hold + c.send, DECISIONS);
    }
}

static void test_combined_faults_apply_in_turn(void)
{
    /* A datagram is dropped, else duplicated, else held back: each later
     * fault applies to what the earlier ones let through. */
    const double loss = 0.2, dup = 0.3, reorder = 0.4;
    struct inject in;
    inject_init(&in, loss, dup, reorder, 0, 4242);
    struct counts c = decide_many(&in, DECISIONS);
    CHECK(near(c.drop, DECISIONS, loss, "combined loss"));
    CHECK(near(c.dup, DECISIONS, (1 - loss) * dup, "combined dup"));
    CHECK(near(c.hold, DECISIONS, (1 - loss) * (1 - dup) * reorder, "combined reorder"));
    CHECK_EQ(c.send + c.drop + c.dup + c.hold, DECISIONS);
}

static void test_decisions_are_independent_of_the_previous_one(void)
{
    /* After a drop, the next is dropped with the same probability. */
    struct inject in;
    inject_init(&in, 0.3, 0, 0, 0, 77);
    long after_drop = 0, drop_after_drop = 0;
    enum inject_action prev = inject_decide(&in);
    for (long i = 0; i < DECISIONS; i++) {
        enum inject_action a = inject_decide(&in);
        if (prev == INJECT_DROP) {
            after_drop++;
            drop_after_drop += a == INJECT_DROP;
        }
        prev = a;
    }
    CHECK(near(drop_after_drop, after_drop, 0.3, "drop after drop"));
}

static void test_same_seed_replays_the_same_decisions(void)
{
    static enum inject_action first[DECISIONS];
    struct inject a, b;
    inject_init(&a, 0.1, 0.1, 0.1, 0, 123456789);
    for (long i = 0; i < DECISIONS; i++)
        first[i] = inject_decide(&a);
    inject_init(&b, 0.1, 0.1, 0.1, 0, 123456789);
    long same = 0;
    for (long i = 0; i < DECISIONS; i++)
        same += inject_decide(&b) == first[i];
    CHECK_EQ(same, DECISIONS);

    /* Another seed gives another sequence. */
    inject_init(&b, 0.1, 0.1, 0.1, 0, 123456790);
    same = 0;
    for (long i = 0; i < DECISIONS; i++)
        same += inject_decide(&b) == first[i];
    CHECK(same < DECISIONS * 9 / 10);

    /* Seed 0 is a fixed, working seed too (a zero xorshift state would
     * never change and decide the same thing forever). */
    inject_init(&a, 0.5, 0, 0, 0, 0);
    inject_init(&b, 0.5, 0, 0, 0, 0);
    struct counts ca = decide_many(&a, DECISIONS);
    struct counts cb = decide_many(&b, DECISIONS);
    CHECK(near(ca.drop, DECISIONS, 0.5, "seed 0 loss"));
    CHECK_EQ(ca.drop, cb.drop);
    CHECK(a.rng == b.rng);
}

int main(void)
{
    test_zero_settings_are_inactive_and_always_send();
    test_loss_drops_the_given_fraction();
    test_dup_and_reorder_alone_give_their_fractions();
    test_combined_faults_apply_in_turn();
    test_decisions_are_independent_of_the_previous_one();
    test_same_seed_replays_the_same_decisions();
    return check_report("test_inject");
}
