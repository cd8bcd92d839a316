/*
 * The page cache's victim choice (src/mem/replace.c): FIFO takes the
 * oldest page; clock gives a referenced page a second chance, clearing its
 * bit as the hand passes; refused pages (the last faults') are never
 * chosen and keep their bits; removal mends the list and the hand.
 */
#include <string.h>

#include "check.h"
#include "mem/replace.h"

static size_t refused_page = (size_t)-1;
static bool refuse_one(size_t page, void *arg)
{
    (void)arg;
    return page == refused_page;
}

static size_t cleared[64], ncleared;
static void note_cleared(size_t page, void *arg)
{
    (void)arg;
    cleared[ncleared++] = page;
}

static void test_fifo_takes_the_oldest_whatever_was_used(void)
{
    struct replace r;
    CHECK_EQ(replace_init(&r, 100, REPLACE_FIFO), 0);
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), -1); /* empty */
    replace_insert(&r, 7);
    replace_insert(&r, 3);
    replace_insert(&r, 42);
    CHECK_EQ(r.count, 3);
    replace_reference(&r, 7); /* FIFO does not care */
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), 7);
    replace_remove(&r, 7);
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), 3);
    refused_page = 3;
    CHECK_EQ(replace_victim(&r, refuse_one, NULL, NULL), 42);
    replace_remove(&r, 42);
    CHECK_EQ(replace_victim(&r, refuse_one, NULL, NULL), -1); /* only the refused one left */
    replace_remove(&r, 3);
    CHECK_EQ(r.count, 0);
    CHECK(!replace_has(&r, 3));
    replace_insert(&r, 3); /* a page may come back */
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), 3);
    replace_free(&r);
}

static void test_clock_gives_referenced_pages_a_second_chance(void)
{
    struct replace r;
    CHECK_EQ(replace_init(&r, 100, REPLACE_CLOCK), 0);
    for (size_t p = 10; p < 14; p++)
        replace_insert(&r, p); /* all come in referenced */
    /* First victim: the hand clears 10..13, then finds 10 clear. */
    ncleared = 0;
    CHECK_EQ(replace_victim(&r, NULL, note_cleared, NULL), 10);
    CHECK_EQ(ncleared, 4);
    CHECK_EQ(cleared[0], 10);
    CHECK_EQ(cleared[3], 13);
    replace_remove(&r, 10);
    /* 12 is used again: the hand (at 11) takes 11, then skips 12. */
    replace_reference(&r, 12);
    ncleared = 0;
    CHECK_EQ(replace_victim(&r, NULL, note_cleared, NULL), 11);
    CHECK_EQ(ncleared, 0);
    replace_remove(&r, 11);
    CHECK_EQ(replace_victim(&r, NULL, note_cleared, NULL), 13);
    CHECK_EQ(ncleared, 1);
    CHECK_EQ(cleared[0], 12);
    replace_remove(&r, 13);
    /* A new page comes in referenced, behind the hand. */
    replace_insert(&r, 20);
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), 12);
    replace_free(&r);
}

static void test_clock_never_takes_a_refused_page_nor_clears_its_bit(void)
{
    struct replace r;
    CHECK_EQ(replace_init(&r, 16, REPLACE_CLOCK), 0);
    replace_insert(&r, 1);
    replace_insert(&r, 2);
    refused_page = 1;
    ncleared = 0;
    CHECK_EQ(replace_victim(&r, refuse_one, note_cleared, NULL), 2);
    CHECK_EQ(ncleared, 1); /* 2's bit, not 1's */
    CHECK_EQ(cleared[0], 2);
    CHECK_EQ(r.ref[1], 1);
    replace_remove(&r, 2);
    CHECK_EQ(replace_victim(&r, refuse_one, note_cleared, NULL), -1);
    refused_page = (size_t)-1;
    replace_free(&r);
}

static void test_removing_under_the_hand_moves_it_on(void)
{
    struct replace r;
    CHECK_EQ(replace_init(&r, 16, REPLACE_CLOCK), 0);
    for (size_t p = 0; p < 5; p++)
        replace_insert(&r, p);
    for (size_t p = 0; p < 5; p++)
        r.ref[p] = 0;
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), 0); /* hand now at 1 */
    replace_remove(&r, 1);                              /* the hand's page */
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), 2);
    replace_remove(&r, 0);
    replace_remove(&r, 2);
    replace_remove(&r, 4);
    CHECK_EQ(r.count, 1);
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), 3);
    replace_remove(&r, 3);
    CHECK_EQ(r.count, 0);
    CHECK_EQ(replace_victim(&r, NULL, NULL, NULL), -1);
    replace_remove(&r, 3); /* not in: nothing */
    CHECK_EQ(r.count, 0);
    replace_free(&r);
}

/* Against a model: a random mix of inserts, references and evictions;
 * the victim is always a resident, unrefused page, and FIFO's is always
 * the oldest resident one. */
static void test_random_operations_match_a_model(void)
{
    for (int policy = 0; policy < 2; policy++) {
        struct replace r;
        CHECK_EQ(replace_init(&r, 64, (enum replace_policy)policy), 0);
        size_t order[64], n = 0; /* resident pages, oldest first */
        seed(42 + (uint64_t)policy);
        int bad = 0;
        for (int step = 0; step < 20000; step++) {
            size_t page = (size_t)(rng() % 64);
            unsigned op = (unsigned)(rng() % 3);
            if (op == 0 && !replace_has(&r, page)) {
                replace_insert(&r, page);
                order[n++] = page;
            } else if (op == 1 && replace_has(&r, page)) {
                replace_reference(&r, page);
            } else if (n) {
                refused_page = order[rng() % n];
                long v = replace_victim(&r, refuse_one, NULL, NULL);
                size_t at = n;
                for (size_t i = 0; i < n; i++)
                    if (order[i] == (size_t)v)
                        at = i;
                if (n == 1)
                    bad += v != -1;
                else if (v < 0 || at == n || (size_t)v == refused_page)
                    bad++;
                else if (policy == REPLACE_FIFO && at != (order[0] == refused_page ? 1u : 0u))
                    bad++;
                if (v >= 0 && at < n) {
                    replace_remove(&r, (size_t)v);
                    memmove(&order[at], &order[at + 1], (n - at - 1) * sizeof *order);
                    n--;
                }
            }
            if (r.count != n)
                bad++;
        }
        CHECK_EQ(bad, 0);
        refused_page = (size_t)-1;
        replace_free(&r);
    }
}

int main(void)
{
    test_fifo_takes_the_oldest_whatever_was_used();
    test_clock_gives_referenced_pages_a_second_chance();
    test_clock_never_takes_a_refused_page_nor_clears_its_bit();
    test_removing_under_the_hand_moves_it_on();
    test_random_operations_match_a_model();
    return check_report("test_replace");
}
