/*
 * test_schedule.c — dividing a loop's iterations: trip counts of every
 * shape, static blocks and chunks cover each iteration exactly once, guided
 * chunks shrink and add up, weighted splits follow their weights, and
 * OMP_SCHEDULE is parsed or refused with a reason.
 */
#include "check.h"
#include "parallel/profiled.h"
#include "parallel/schedule.h"

#include <stdlib.h>
#include <string.h>

static void test_trip_counts_of_every_shape(void)
{
    CHECK_EQ(sched_trip(0, 9, 1, false), 10);
    CHECK_EQ(sched_trip(0, 9, 3, false), 4);      /* 0 3 6 9 */
    CHECK_EQ(sched_trip(0, 10, 3, false), 4);     /* 0 3 6 9 */
    CHECK_EQ(sched_trip(9, 0, -1, false), 10);
    CHECK_EQ(sched_trip(9, 0, -4, false), 3);     /* 9 5 1 */
    CHECK_EQ(sched_trip(5, 4, 1, false), 0);
    CHECK_EQ(sched_trip(4, 5, -1, false), 0);
    CHECK_EQ(sched_trip(7, 7, 1, false), 1);
    CHECK_EQ(sched_trip(0, 0, 0, false), 0);
    /* Unsigned: the bounds are values of their width, not negatives. */
    CHECK_EQ(sched_trip(0, (int64_t)UINT64_MAX, 1 << 30, true), (UINT64_MAX >> 30) + 1);
    CHECK_EQ(sched_trip(INT64_MIN, INT64_MAX, 1, false), 0); /* 2^64: does not fit; 0 */
    CHECK_EQ(sched_trip(INT64_MIN, INT64_MAX, 2, false), (uint64_t)1 << 63);
    CHECK_EQ(sched_value(10, -3, 4), -2);
}

static void test_static_blocks_cover_each_iteration_once(void)
{
    for (uint64_t trip = 0; trip < 40; trip++)
        for (int n = 1; n <= 9; n++) {
            uint64_t next = 0, sizes_max = 0, sizes_min = UINT64_MAX;
            for (int t = 0; t < n; t++) {
                uint64_t first, count = sched_static_block(trip, t, n, &first);
                if (count)
                    CHECK_EQ(first, next); /* consecutive, in thread order */
                next += count;
                sizes_max = count > sizes_max ? count : sizes_max;
                sizes_min = count < sizes_min ? count : sizes_min;
            }
            CHECK_EQ(next, trip);
            CHECK(sizes_max - sizes_min <= 1); /* balanced */
        }
}

static void test_static_chunks_name_the_last_thread(void)
{
    /* 10 iterations in chunks of 3 over 2 threads: chunks 0,2 to thread 0,
     * 1,3 to thread 1; the last chunk (9) is number 3. */
    CHECK(!sched_static_chunked_has_last(10, 3, 0, 2));
    CHECK(sched_static_chunked_has_last(10, 3, 1, 2));
    CHECK(sched_static_chunked_has_last(9, 3, 0, 2));
    CHECK(!sched_static_chunked_has_last(0, 3, 0, 2));
    for (uint64_t trip = 1; trip < 50; trip++) {
        int owners = 0;
        for (int t = 0; t < 4; t++)
            owners += sched_static_chunked_has_last(trip, 5, t, 4);
        CHECK_EQ(owners, 1);
    }
}

static void test_guided_chunks_shrink_and_add_up(void)
{
    uint64_t left = 1000, prev = UINT64_MAX, total = 0;
    while (left) {
        uint64_t c = sched_guided_chunk(left, 4, 7);
        CHECK(c >= 1 && c <= left);
        CHECK(c >= 7 || c == left);
        CHECK(c <= prev);
        prev = c;
        total += c;
        left -= c;
    }
    CHECK_EQ(total, 1000);
    CHECK_EQ(sched_guided_chunk(1000, 4, 1), 125); /* half an even share */
    CHECK_EQ(sched_guided_chunk(3, 4, 10), 3);
}

static void test_weighted_split_follows_the_weights(void)
{
    /* Seed 003's Fig. 2: three nodes at speeds 3:1:2. */
    double w[3] = {3, 1, 2};
    uint64_t c[3];
    sched_split_by_weight(600, 3, w, c);
    CHECK_EQ(c[0], 300);
    CHECK_EQ(c[1], 100);
    CHECK_EQ(c[2], 200);
    sched_split_by_weight(7, 3, w, c);
    CHECK_EQ(c[0] + c[1] + c[2], 7);
    double even[4] = {1, 1, 1, 1};
    uint64_t e[4];
    sched_split_by_weight(10, 4, even, e);
    CHECK_EQ(e[0] + e[1] + e[2] + e[3], 10);
    for (int i = 0; i < 4; i++)
        CHECK(e[i] == 2 || e[i] == 3);
}

static void test_omp_schedule_is_parsed(void)
{
    struct sched_spec s;
    char err[128];
    CHECK_EQ(sched_parse("static", &s, err, sizeof err), 0);
    CHECK_EQ(s.kind, SCHED_STATIC);
    CHECK_EQ(s.chunk, 0);
    CHECK_EQ(sched_parse("dynamic,4", &s, err, sizeof err), 0);
    CHECK(s.kind == SCHED_DYNAMIC && s.chunk == 4);
    CHECK_EQ(sched_parse(" Guided , 16 ", &s, err, sizeof err), 0);
    CHECK(s.kind == SCHED_GUIDED && s.chunk == 16);
    CHECK_EQ(sched_parse("nonmonotonic:dynamic", &s, err, sizeof err), 0);
    CHECK(s.kind == SCHED_DYNAMIC);
    CHECK_EQ(sched_parse("monotonic:static,2", &s, err, sizeof err), 0);
    CHECK_EQ(sched_parse("auto", &s, err, sizeof err), 0);
    CHECK_EQ(sched_parse("profiled", &s, err, sizeof err), 0);
    CHECK(s.kind == SCHED_PROFILED && s.chunk == 0);
    CHECK_EQ(sched_parse("profiled,0,2,1", &s, err, sizeof err), 0);
    CHECK(s.chunk == 0 && s.eval_size == 2 && s.eval_skip == 1);
    CHECK_EQ(strcmp(sched_kind_name(SCHED_GUIDED), "guided"), 0);
}

static void test_bad_omp_schedules_are_refused(void)
{
    static const char *const bad[] = {
        "", "stat", "static,", "static,-1", "static,0", "dynamic,x", "dynamic,4,5",
        "auto,3", "profiled,1,2,3,4", "weird:static", "static,99999999999999999999",
        ",", "dynamic,,", ":static",
    };
    struct sched_spec s;
    char err[128];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        int rc = sched_parse(bad[i], &s, err, sizeof err);
        CHECK(rc < 0);
        CHECK(err[0] != 0);
        if (rc >= 0)
            fprintf(stderr, "accepted '%s'\n", bad[i]);
    }
}

/* Seed 003 Fig. 2 and Fig. 4: nodes at speeds 3:1:2. */
static void test_profiled_repartitions_when_it_pays(void)
{
    double speed[3] = {3000, 1000, 2000};
    uint64_t even[3] = {200, 200, 200}, next[3];
    double gain;
    CHECK(profiled_decide(600, 3, even, speed, 0.05, next, &gain));
    CHECK_EQ(next[0], 300);
    CHECK_EQ(next[1], 100);
    CHECK_EQ(next[2], 200);
    /* even: 200 / 1000 = 0.2 s; by speed: 0.1 s */
    CHECK(gain > 0.49 && gain < 0.51);
    CHECK(profiled_predict(3, even, speed) > 0.199 && profiled_predict(3, even, speed) < 0.201);

    /* Already divided by speed: nothing left to gain, profiling stops. */
    uint64_t again[3];
    CHECK(!profiled_decide(600, 3, next, speed, 0.05, again, &gain));
    CHECK(gain < 0.01);

    /* Equal speeds, even split: no gain. */
    double same[2] = {5, 5};
    uint64_t half[2] = {50, 50}, out[2];
    CHECK(!profiled_decide(100, 2, half, same, 0.05, out, &gain));
    /* A small gain below the threshold is not taken. */
    double close[2] = {1000, 1040};
    CHECK(!profiled_decide(100, 2, half, close, 0.05, out, &gain));
    CHECK(profiled_decide(100, 2, half, close, 0.01, out, &gain));

    /* A thread that ran nothing counts at the others' mean speed. */
    double unknown[3] = {2000, 0, 2000};
    uint64_t got[3], cur[3] = {10, 0, 10};
    profiled_decide(30, 3, cur, unknown, 0.05, got, &gain);
    CHECK_EQ(got[0] + got[1] + got[2], 30);
    CHECK_EQ(got[1], 10);
}

/* Fig. 4's stop rule (profiled_step): 2 nodes at speeds 2:1, trip 300. */
static const struct profile_rule rule = {.threshold = 0.05, .band = 0.02, .tolerance = 0.10,
                                         .max_repartitions = 8};

static void test_profiled_first_decision_repartitions_by_speed(void)
{
    double speed[2] = {2000, 1000}, gain, predicted;
    uint64_t even[2] = {150, 150}, next[2];
    struct profile_past none = {0};
    /* even: 150 / 1000 = 0.15 s */
    CHECK_EQ(profiled_step(300, 2, even, speed, 0.15, &none, &rule, next, &gain, &predicted),
             PROFILE_REPARTITION);
    CHECK_EQ(next[0], 200);
    CHECK_EQ(next[1], 100);
    CHECK(predicted > 0.0999 && predicted < 0.1001); /* 100 / 1000 */
    CHECK(gain > 0.33 && gain < 0.34);
}

static void test_profiled_stops_when_nothing_left_to_gain(void)
{
    double speed[2] = {2000, 1000}, gain, predicted;
    uint64_t even[2] = {150, 150}, cur[2] = {200, 100}, next[2];
    /* The re-partition delivered (0.1 s, as predicted): now balanced. */
    struct profile_past past = {.prev = even, .predicted = 0.1, .before = 0.15};
    CHECK_EQ(profiled_step(300, 2, cur, speed, 0.1, &past, &rule, next, &gain, &predicted),
             PROFILE_STOP_GAIN);
    /* A gain below the threshold, without a past, stops too. */
    double close[2] = {1000, 1040};
    uint64_t half[2] = {150, 150};
    struct profile_past none = {0};
    CHECK_EQ(profiled_step(300, 2, half, close, 0.15, &none, &rule, next, &gain, &predicted),
             PROFILE_STOP_GAIN);
}

static void test_profiled_does_not_repartition_within_the_band(void)
{
    /* Speeds 101:100 from 150:150 would move 1 iteration of 300 (0.3 %);
     * with a threshold of 0 the gain passes, the band does not. */
    struct profile_rule loose = rule;
    loose.threshold = 0;
    double speed[2] = {101, 100}, gain, predicted;
    uint64_t half[2] = {150, 150}, next[2];
    struct profile_past none = {0};
    CHECK_EQ(profiled_step(300, 2, half, speed, 1.5, &none, &loose, next, &gain, &predicted),
             PROFILE_STOP_BAND);
    CHECK(gain > 0);
    /* 110:100 moves 7 iterations (2.3 %), beyond the band: it
     * re-partitions; 106.5:100 moves 5 (1.7 %), within it. */
    double faster[2] = {110, 100}, slightly[2] = {106.5, 100};
    CHECK_EQ(profiled_step(300, 2, half, faster, 1.5, &none, &loose, next, &gain, &predicted),
             PROFILE_REPARTITION);
    CHECK_EQ(next[0], 157);
    CHECK_EQ(profiled_step(300, 2, half, slightly, 1.5, &none, &loose, next, &gain, &predicted),
             PROFILE_STOP_BAND);
}

/* A decision of 2 nodes on a trip of 300 under the rule above. */
static enum profile_verdict step2(const uint64_t *cur, const double *speed, double measured,
                                  const struct profile_past *past, uint64_t *next)
{
    double gain, predicted;
    return profiled_step(300, 2, cur, speed, measured, past, &rule, next, &gain, &predicted);
}

static void test_profiled_stops_after_a_swing_back(void)
{
    /* Even -> 200:100 (node 0 gained); now the speeds say 170:130, a step
     * back toward even: the division oscillates; settle halfway and stop. The
     * re-partition itself delivered better than before (not judged). */
    double speed[2] = {1700, 1300};
    uint64_t even[2] = {150, 150}, cur[2] = {200, 100}, next[2];
    struct profile_past past = {.prev = even, .predicted = 0.1, .before = 0.15};
    CHECK_EQ(step2(cur, speed, 0.118, &past, next), PROFILE_STOP_SWING);
    /* settled halfway between 200:100 and the proposed 170:130 */
    CHECK_EQ(next[0], 185);
    CHECK_EQ(next[1], 115);
    /* The same step further in the same direction goes on. */
    double more[2] = {2300, 700};
    past.predicted = 0; /* already judged */
    CHECK_EQ(step2(cur, more, 0.143, &past, next), PROFILE_REPARTITION);
    CHECK_EQ(next[0], 230);
}

static void test_profiled_judges_the_last_repartition(void)
{
    double speed[2] = {1000, 2000};
    uint64_t even[2] = {150, 150}, cur[2] = {200, 100}, next[2];
    struct profile_past past = {.prev = even, .predicted = 0.1, .before = 0.15};
    /* Slower than the division it replaced (0.2 > 0.15 * 1.1): back. */
    CHECK_EQ(step2(cur, speed, 0.2, &past, next), PROFILE_STOP_REVERT);
    /* 0.145: not slower than before, but neither near 0.1 nor better
     * than 0.15 by the threshold: the speeds were noise. */
    CHECK_EQ(step2(cur, speed, 0.145, &past, next), PROFILE_STOP_MISSED);
    /* 0.13: missed its prediction but better than before by > 5 %: paid,
     * and the new speeds (1:2) propose another re-partition. It turns
     * back past even, a swing. */
    CHECK_EQ(step2(cur, speed, 0.13, &past, next), PROFILE_STOP_SWING);
    /* Within 10 % of the prediction (0.108): met; further the same way. */
    double more[2] = {3000, 1000};
    CHECK_EQ(step2(cur, more, 0.108, &past, next), PROFILE_REPARTITION);
    CHECK_EQ(next[0], 225);
    /* The same at the limit: it stops, whatever it measures. */
    past.repartitions = 8;
    CHECK_EQ(step2(cur, more, 0.108, &past, next), PROFILE_STOP_LIMIT);
}

/* How long a loop ran where nothing slowed it: the shortest thread's
 * time, a thread that ran nothing not counted. */
static void test_profiled_loop_time_is_the_shortest_threads(void)
{
    uint64_t it[3] = {100, 50, 0};
    uint64_t ns[3] = {2000000, 5000000, 7};
    CHECK_EQ(profiled_shortest_ns(3, it, ns), 2000000);
    /* the fast thread's 10 us, though the other was stopped 5 ms */
    uint64_t stopped[3] = {10000, 5000000, 0};
    CHECK_EQ(profiled_shortest_ns(3, it, stopped), 10000);
    uint64_t none[3] = {0, 0, 0};
    CHECK_EQ(profiled_shortest_ns(3, none, ns), UINT64_MAX);
}

static void test_cyclic_chunks_scale_with_speed_and_cover_once(void)
{
    double speed[3] = {3, 1, 2};
    uint64_t chunks[3];
    profiled_chunks(3, speed, 4, chunks);
    CHECK_EQ(chunks[0], 12);
    CHECK_EQ(chunks[1], 4);
    CHECK_EQ(chunks[2], 8);
    for (uint64_t trip = 0; trip < 100; trip += 7) {
        static int hits[100];
        memset(hits, 0, sizeof hits);
        for (int t = 0; t < 3; t++)
            for (uint64_t k = 0;; k++) {
                uint64_t first, c = profiled_cyclic_chunk(trip, 3, chunks, t, k, &first);
                if (!c)
                    break;
                for (uint64_t i = first; i < first + c; i++)
                    hits[i]++;
            }
        int ok = 1;
        for (uint64_t i = 0; i < trip; i++)
            ok &= hits[i] == 1;
        CHECK(ok);
    }
}

/* A thread that computes its own block or chunk alone (a node's threads
 * each do, loopsite.c) gets what the whole division gives it, and the
 * threads' parts still cover each iteration once. */
static void test_one_threads_part_is_the_whole_divisions(void)
{
    double w[6] = {3.7, 1, 0.2, 2.5, 2.5, 9};
    double speed[6] = {3.7, 0, 0.2, 2.5, 2.5, 9}; /* an unknown one: the mean */
    for (uint64_t trip = 0; trip < 200; trip += 13) {
        uint64_t counts[6], sum = 0;
        sched_split_by_weight(trip, 6, w, counts);
        int ok = 1;
        for (int t = 0; t < 6; t++) {
            uint64_t first, c = sched_weight_block(trip, 6, w, t, &first);
            ok &= c == counts[t] && first == sum;
            sum += c;
        }
        CHECK(ok);
        CHECK_EQ(sum, trip);
    }
    uint64_t chunks[6];
    profiled_chunks(6, speed, 3, chunks);
    for (int t = 0; t < 6; t++) {
        uint64_t chunk, offset, round;
        profiled_chunk_of(6, speed, 3, t, &chunk, &offset, &round);
        CHECK_EQ(chunk, chunks[t]);
        for (uint64_t k = 0; k < 5; k++) {
            uint64_t f1 = 0, f2 = 0;
            uint64_t c1 = profiled_cyclic_chunk(150, 6, chunks, t, k, &f1);
            uint64_t c2 = profiled_cyclic_next(150, chunk, offset, round, k, &f2);
            CHECK_EQ(c1, c2);
            CHECK_EQ(f1, f2);
        }
    }
}

int main(void)
{
    test_trip_counts_of_every_shape();
    test_one_threads_part_is_the_whole_divisions();
    test_static_blocks_cover_each_iteration_once();
    test_static_chunks_name_the_last_thread();
    test_guided_chunks_shrink_and_add_up();
    test_weighted_split_follows_the_weights();
    test_omp_schedule_is_parsed();
    test_bad_omp_schedules_are_refused();
    test_profiled_repartitions_when_it_pays();
    test_profiled_first_decision_repartitions_by_speed();
    test_profiled_stops_when_nothing_left_to_gain();
    test_profiled_does_not_repartition_within_the_band();
    test_profiled_stops_after_a_swing_back();
    test_profiled_judges_the_last_repartition();
    test_profiled_loop_time_is_the_shortest_threads();
    test_cyclic_chunks_scale_with_speed_and_cover_once();
    return check_report("test_schedule");
}
