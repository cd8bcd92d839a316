/*
 * test_idmap.c — the id -> record map under locks and conditions: one
 * zeroed record per id, kept in place while the table grows, and lookups
 * that stay short for the id patterns programs use (multiples of the node
 * count, which name a lock's manager, and dense ranges).
 */
#include "check.h"
#include "sync/sync.h"

#include <string.h>

struct rec { int id; int zero[5]; };

static void test_one_zeroed_record_per_id_that_never_moves(void)
{
    struct idmap m = {.size = sizeof(struct rec)};
    enum { IDS = 50000 };
    static struct rec *first[IDS];
    for (int i = 0; i < IDS; i++) {
        struct rec *r = idmap_get(&m, i * 7);
        int zero = r->id == 0;
        for (int k = 0; k < 5; k++)
            zero &= r->zero[k] == 0;
        if (!zero)
            CHECK(zero);
        r->id = i * 7 + 1;
        first[i] = r;
    }
    CHECK(m.nbuckets > 1024); /* it grew */
    int same = 1, kept = 1;
    for (int i = 0; i < IDS; i++) {
        struct rec *r = idmap_get(&m, i * 7);
        same &= r == first[i];
        kept &= r->id == i * 7 + 1;
    }
    CHECK(same);
    CHECK(kept);
    CHECK_EQ(m.count, IDS);
    /* distinct ids, distinct records */
    CHECK(idmap_get(&m, 1) != idmap_get(&m, 2));
    CHECK(idmap_get(&m, 0x7fffffff) != idmap_get(&m, 0));
    idmap_free(&m);
    CHECK(idmap_longest_chain(&m) == 0);
    CHECK(idmap_get(&m, 5) != NULL); /* usable again after it was freed */
    CHECK_EQ(m.count, 1);
    idmap_free(&m);
}

static void test_lookups_stay_short_for_strided_ids(void)
{
    static const int strides[] = {1, 2, 8, 64, 256, 1024, 4096};
    for (size_t s = 0; s < sizeof strides / sizeof *strides; s++) {
        struct idmap m = {.size = sizeof(int)};
        for (int i = 0; i < 100000; i++)
            idmap_get(&m, i * strides[s]);
        size_t longest = idmap_longest_chain(&m);
        if (longest > 12)
            fprintf(stderr, "stride %d: a chain of %zu\n", strides[s], longest);
        CHECK(longest <= 12);
        CHECK(m.count <= m.nbuckets);
        idmap_free(&m);
    }
}

int main(void)
{
    test_one_zeroed_record_per_id_that_never_moves();
    test_lookups_stay_short_for_strided_ids();
    return check_report("idmap");
}
