/*
 * Sequential consistency, message passing with no synchronisation: the
 * writer of a round stores data, then a flag; every other node spins on the
 * flag and, once it sees it, must see all the data. No lock or barrier
 * stands between the stores and the loads (barriers only separate rounds),
 * so release consistency does not promise this; sc must.
 *
 * The writer changes every round, and the readers hold copies of the data
 * from the round before (they read it to check), so a protocol that let a
 * stale copy survive would be caught. Two layouts: the data on pages homed
 * cyclically over the nodes with the flag on a page of its own, and the
 * data and the flag on one page.
 * Usage: test_sc_message_passing [rounds] [data pages]
 */
#include <sched.h>

#include "mp_util.h"

static int64_t value(int round, size_t word)
{
    return (int64_t)(round + 1) * 1000003 + (int64_t)word * 7919;
}

/* The readers outnumber the cores here: spinning without yielding would
 * starve the nodes that have to answer. */
static void await_flag(volatile int64_t *flag, int64_t want)
{
    while (*flag != want)
        sched_yield();
}

static void round_trip(int round, int n, int me, volatile int64_t *data, size_t words,
                       volatile int64_t *flag, const char *layout)
{
    int writer = round % n;
    if (me == writer) {
        for (size_t w = 0; w < words; w++)
            data[w] = value(round, w);
        *flag = round + 1;
    } else {
        await_flag(flag, round + 1);
        for (size_t w = 0; w < words; w++)
            MP_CHECK(data[w] == value(round, w),
                     "%s, round %d: saw node %d's flag, but data word %zu = %lld, expected %lld",
                     layout, round, writer, w, (long long)data[w], (long long)value(round, w));
    }
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    size_t pages = argc > 2 ? (size_t)atol(argv[2]) : 3;
    size_t page = dsm_page_size(), words = pages * page / sizeof(int64_t);

    int64_t *data = NULL, *flag = NULL, *same = NULL;
    if (me == 0) {
        data = dsm_malloc_home(pages * page, DSM_HOME_CYCLIC);
        flag = dsm_malloc_home(page, DSM_HOME_CYCLIC);
        same = dsm_malloc(page);
    }
    dsm_bcast(&data, sizeof data, 0);
    dsm_bcast(&flag, sizeof flag, 0);
    dsm_bcast(&same, sizeof same, 0);
    /* In the one-page layout the flag is the page's last word. */
    size_t same_words = page / sizeof(int64_t) - 1;

    for (int r = 0; r < rounds; r++) {
        round_trip(r, n, me, data, words, flag, "flag on its own page");
        round_trip(r, n, me, same, same_words, same + same_words, "flag on the data's page");
        dsm_barrier();
    }
    if (me == 0)
        printf("sc_message_passing: %d nodes, %d rounds, %zu + 1 data pages: every reader saw the "
               "data behind the flag\n", n, rounds, pages);
    dsm_finish();
    return 0;
}
