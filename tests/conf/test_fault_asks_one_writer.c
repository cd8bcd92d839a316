/*
 * A fault after a chain of lock holders asks one node, not every writer
 * (issue 61, lrc). The nodes take one lock in a ring: node k waits for
 * node k-1's go-ahead (a port message, which carries no consistency),
 * takes the lock, reads the shared counter and checks it, adds 1 to it and
 * to its own word of the same page, lets the lock go and tells node k+1.
 * So at each turn every other node has written the page since this one
 * last read it: under lrc the notices the grant brings name nodes-1
 * writers, and the latest of them holds all their writes in its copy (it
 * read the page under the lock before it wrote), so the fault takes that
 * copy in one round trip; it used to ask each writer for its diffs and
 * wait for the slowest. Every word must come out right under every
 * protocol; under lrc each node's requests for diffs or pages
 * (LRC_DIFF_REQ, LRC_COVER_REQ) may be at most its read faults.
 * Usage: test_fault_asks_one_writer [turns]
 */
#include <string.h>

#include "mp_util.h"

#include "base/stats.h"
#include "coherence/coherence.h"
#include "ipc/ipc.h"

#define THE_LOCK 5

/* Messages this node has sent of the type named `name` (0: no such type). */
static uint64_t sent_named(const char *name)
{
    for (unsigned t = 0; t < IPC_TYPE_MAX; t++) {
        const char *n = ipc_type_name(t);
        if (n && !strcmp(n, name))
            return stats_msgs_by_type[t];
    }
    return 0;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    long turns = argc > 1 ? atol(argv[1]) : 200;
    MP_CHECK(turns >= 1 && turns <= 1000000, "turns %ld out of 1..1000000", turns);
    MP_CHECK((size_t)n < dsm_page_size() / sizeof(int64_t), "%d nodes do not fit a page", n);

    int64_t *page = NULL;
    if (me == 0)
        page = dsm_malloc(dsm_page_size());
    dsm_bcast(&page, sizeof page, 0);
    dsm_barrier();

    /* Every turn reads the page before it writes it: a write fault finds
     * the page valid and fetches nothing; read faults do the asking. */
    uint64_t faults0 = stats_get(STAT_READ_FAULTS);
    uint64_t asked0 = sent_named("LRC_DIFF_REQ") + sent_named("LRC_COVER_REQ");
    int port = dsm_port_create("one-writer", 4);
    MP_CHECK(port >= 0, "port");
    dsm_port_ref to_next;
    MP_CHECK(dsm_port_lookup((me + 1) % n, "one-writer", 30, &to_next) == 0, "lookup %d", (me + 1) % n);
    dsm_barrier();

    long total = (long)n * turns;
    for (int64_t t = 0; t < turns; t++) {
        if (me > 0 || t > 0) /* node n-1's go-ahead to node 0 closes the turn before */
            mp_recv_round(port, (me + n - 1) % n, me > 0 ? t : t - 1);
        dsm_lock(THE_LOCK);
        int64_t count = page[0];
        MP_CHECK(count == t * n + me, "turn %lld: the counter reads %lld, expected %lld",
                 (long long)t, (long long)count, (long long)(t * n + me));
        page[0] = count + 1;
        page[1 + me]++;
        dsm_unlock(THE_LOCK);
        MP_CHECK(dsm_msg_send(&to_next, &t, sizeof t, NULL, 0, DSM_FOREVER, NULL) == 0, "send");
    }
    if (me == 0) /* node n-1's last go-ahead */
        mp_recv_round(port, n - 1, turns - 1);
    uint64_t faults = stats_get(STAT_READ_FAULTS) - faults0;
    uint64_t asked = sent_named("LRC_DIFF_REQ") + sent_named("LRC_COVER_REQ") - asked0;

    dsm_barrier();
    MP_CHECK(page[0] == total, "the counter reads %lld, expected %ld", (long long)page[0], total);
    for (int k = 0; k < n; k++)
        MP_CHECK(page[1 + k] == turns, "node %d's word reads %lld, expected %ld", k,
                 (long long)page[1 + k], turns);
    if (!strcmp(coherence_name(), "lrc"))
        MP_CHECK(asked <= faults,
                 "%llu requests for diffs or pages in %llu read faults: a fault asked more than one node",
                 (unsigned long long)asked, (unsigned long long)faults);
    printf("fault_asks_one_writer: node %d: %llu read faults, %llu requests\n", me,
           (unsigned long long)faults, (unsigned long long)asked);
    dsm_barrier();
    if (me == 0)
        printf("fault_asks_one_writer: %d nodes, %ld turns each: ok\n", n, turns);
    dsm_finish();
    return 0;
}
