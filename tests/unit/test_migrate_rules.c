/* test_migrate_rules.c — the rules by which a home moves (migrate.h), as
 * the pure functions they are: majority votes, dominance, thresholds. */
#include "check.h"
#include "coherence/migrate.h"

static int decide(const struct migrate_counts *c, int home, bool pages, bool homes,
                  enum migrate_reason *why)
{
    return migrate_decide(c, home, pages, homes, false, why);
}

static void test_a_dominant_reader_takes_the_page(void)
{
    struct migrate_counts c = {0};
    enum migrate_reason why;
    for (int i = 0; i < 7; i++)
        migrate_count_fault(&c, 2);
    migrate_count_fault(&c, 1); /* 7 of 8: its lead, 6, is 3/4 of them */
    CHECK_EQ(decide(&c, 0, true, false, &why), 2);
    CHECK_EQ(why, MIGRATE_FOR_FAULTS);
    CHECK_EQ(decide(&c, 0, false, true, &why), -1); /* page migration off */
    CHECK_EQ(why, MIGRATE_STAY);
    migrate_count_fault(&c, 1); /* lead 5 of 9: no longer shown to be 3/4 */
    CHECK_EQ(decide(&c, 0, true, false, &why), -1);
}

static void test_faults_split_between_nodes_move_nothing(void)
{
    struct migrate_counts c = {0};
    enum migrate_reason why;
    for (int i = 0; i < 10; i++)
        migrate_count_fault(&c, 1 + i % 2);
    CHECK_EQ(decide(&c, 0, true, true, &why), -1);
    struct migrate_counts one = {0};
    migrate_count_fault(&one, 1); /* a single fault is no pattern */
    CHECK_EQ(decide(&one, 0, true, false, &why), -1);
}

static void test_a_page_its_home_writes_stays_for_faults(void)
{
    struct migrate_counts c = {0};
    enum migrate_reason why;
    for (int i = 0; i < 8; i++)
        migrate_count_fault(&c, 1);
    migrate_count_write(&c, 0, 0, 8); /* the home wrote a word */
    CHECK_EQ(decide(&c, 0, true, false, &why), -1);
}

static void test_a_dominant_writer_takes_the_home(void)
{
    struct migrate_counts c = {0};
    enum migrate_reason why;
    migrate_count_write(&c, 3, 0, 4096);
    migrate_count_write(&c, 1, 0, 64);
    migrate_count_write(&c, 0, 0, 64);
    CHECK_EQ(decide(&c, 0, false, true, &why), 3);
    CHECK_EQ(why, MIGRATE_FOR_WRITES);
    /* Writes come first when both would move it. */
    for (int i = 0; i < 8; i++)
        migrate_count_fault(&c, 2);
    CHECK_EQ(decide(&c, 0, true, true, &why), 3);
    CHECK_EQ(why, MIGRATE_FOR_WRITES);
}

static void test_writes_not_twice_the_rest_move_nothing(void)
{
    struct migrate_counts c = {0};
    enum migrate_reason why;
    migrate_count_write(&c, 1, 0, 1000);
    migrate_count_write(&c, 0, 0, 600); /* the home wrote more than half as much */
    CHECK_EQ(decide(&c, 0, false, true, &why), -1);
    struct migrate_counts d = {0};
    migrate_count_write(&d, 1, 0, 1000);
    migrate_count_write(&d, 2, 0, 1000);
    CHECK_EQ(decide(&d, 0, false, true, &why), -1);
    struct migrate_counts e = {0};
    migrate_count_write(&e, 1, 0, 56); /* below MIGRATE_MIN_BYTES */
    CHECK_EQ(decide(&e, 0, false, true, &why), -1);
}

/* Whatever order the writes come in, a node chosen wrote at least twice
 * what the others did together, and a node that wrote five times what the
 * others did (its lead then is at least 2/3 of all) is found. */
static void test_the_vote_finds_the_majority_in_any_order(void)
{
    seed(22);
    for (int trial = 0; trial < 2000; trial++) {
        struct migrate_counts c = {0};
        uint64_t by[4] = {0};
        int writes = 1 + (int)(rng() % 40);
        for (int i = 0; i < writes; i++) {
            int node = 1 + (int)(rng() % 3);
            size_t bytes = 8 * (1 + rng() % 64);
            if (rng() % 4 == 0)
                node = 2; /* a tilt, so majorities happen */
            by[node] += bytes;
            migrate_count_write(&c, node, 0, bytes);
        }
        enum migrate_reason why;
        int to = decide(&c, 0, false, true, &why);
        uint64_t total = by[1] + by[2] + by[3];
        for (int n = 1; n <= 3; n++) {
            if (by[n] >= 5 * (total - by[n]) && by[n] >= 2 * MIGRATE_MIN_BYTES)
                CHECK_EQ(to, n); /* 5/6 of all bytes: the lead is at least 2/3 */
        }
        if (to > 0)
            CHECK(by[to] >= 2 * (total - by[to]));
    }
}

/* A page judged over its stay (it bounced) moves to a provable majority
 * writer: NPB BT's and SP's pages, written by one node in one sweep of
 * three and by the other in two, go to the writer of two, even where
 * its sweeps change fewer bytes. */
static void test_over_a_stay_the_writer_of_most_phases_takes_it(void)
{
    enum migrate_reason why;
    struct migrate_counts c = {0};
    for (int step = 0; step < 4; step++) {
        migrate_count_write(&c, 0, 0, 4096); /* the home's sweep */
        migrate_count_write(&c, 1, 0, 3072);
        migrate_count_write(&c, 1, 0, 3072);
    }
    CHECK_EQ(decide(&c, 0, false, true, &why), -1); /* 3/5 is not twice the rest... */
    CHECK_EQ(migrate_decide(&c, 0, false, true, true, &why), 1); /* ...but a majority */
    CHECK_EQ(why, MIGRATE_FOR_WRITES);
    /* At the writer of most phases the other one is no majority: it stays. */
    struct migrate_counts d = {0};
    for (int step = 0; step < 4; step++) {
        migrate_count_write(&d, 0, 1, 4096);
        migrate_count_write(&d, 1, 1, 4096);
        migrate_count_write(&d, 1, 1, 4096);
    }
    CHECK_EQ(migrate_decide(&d, 1, false, true, true, &why), -1);
    CHECK_EQ(why, MIGRATE_STAY);
    /* Half each is no majority either way. */
    struct migrate_counts e = {0};
    migrate_count_write(&e, 0, 0, 4096);
    migrate_count_write(&e, 1, 0, 4096);
    CHECK_EQ(migrate_decide(&e, 0, false, true, true, &why), -1);
    /* Nor are writes below MIGRATE_MIN_BYTES. */
    struct migrate_counts f = {0};
    migrate_count_write(&f, 1, 0, 56);
    CHECK_EQ(migrate_decide(&f, 0, false, true, true, &why), -1);
}

/* Whatever the order, a node chosen over a stay wrote more than all the
 * others together. */
static void test_over_a_stay_a_node_chosen_wrote_most(void)
{
    seed(63);
    for (int trial = 0; trial < 2000; trial++) {
        struct migrate_counts c = {0};
        uint64_t by[4] = {0};
        int writes = 1 + (int)(rng() % 40);
        for (int i = 0; i < writes; i++) {
            int node = (int)(rng() % 4);
            if (rng() % 3 == 0)
                node = 2;
            size_t bytes = 8 * (1 + rng() % 64);
            by[node] += bytes;
            migrate_count_write(&c, node, 0, bytes);
        }
        enum migrate_reason why;
        int to = migrate_decide(&c, 0, false, true, true, &why);
        uint64_t total = by[0] + by[1] + by[2] + by[3];
        if (to > 0)
            CHECK(2 * by[to] > total);
        for (int n = 1; n <= 3; n++)
            if (by[n] > 3 * (total - by[n]) && by[n] >= 2 * MIGRATE_MIN_BYTES)
                CHECK_EQ(to, n); /* over 3/4 of all: its lead is over 1/2 */
    }
}

/* The same for faults: a node chosen took at least 3/4 of them. */
static void test_a_reader_chosen_took_three_quarters(void)
{
    seed(5);
    for (int trial = 0; trial < 2000; trial++) {
        struct migrate_counts c = {0};
        uint32_t by[4] = {0};
        int faults = 1 + (int)(rng() % 60);
        for (int i = 0; i < faults; i++) {
            int node = rng() % 3 ? 1 : 2 + (int)(rng() % 2);
            by[node]++;
            migrate_count_fault(&c, node);
        }
        enum migrate_reason why;
        int to = decide(&c, 0, true, false, &why);
        if (to > 0)
            CHECK(4 * by[to] >= 3 * (uint32_t)faults);
        if (by[1] == (uint32_t)faults && faults >= MIGRATE_MIN_FAULTS)
            CHECK_EQ(to, 1); /* a lone reader */
    }
}

int main(void)
{
    test_over_a_stay_the_writer_of_most_phases_takes_it();
    test_over_a_stay_a_node_chosen_wrote_most();
    test_a_dominant_reader_takes_the_page();
    test_faults_split_between_nodes_move_nothing();
    test_a_page_its_home_writes_stays_for_faults();
    test_a_dominant_writer_takes_the_home();
    test_writes_not_twice_the_rest_move_nothing();
    test_the_vote_finds_the_majority_in_any_order();
    test_a_reader_chosen_took_three_quarters();
    return check_report("test_migrate_rules");
}
