/*
 * The home's writes reach a node that first fetched the page while they
 * were not yet announced, when the home then writes a word back to the
 * value it had before (issue 36, erc-upd's lost update; docs/protocols.md).
 *
 * erc-upd's home announces its writes to a page others hold as a diff
 * against a twin taken at its first write while the page was shared. A copy
 * served meanwhile carries the writes made since the twin, which the twin
 * does not: a word the home then sets back to its twin's value is no change
 * to the diff, and the new copy kept the intermediate value for good.
 * (omp_constructs under erc-upd on 4 nodes: clear() zeroed words the
 * previous loop had set to 1 on the home, after other nodes had fetched the
 * page with those 1s; they read 1, added one, and hits[i] was 2.)
 *
 * Each round takes a fresh page of node 0's, so that its reader has never
 * held it:
 *   - node 1 reads it (it is shared: node 0's next write takes a twin),
 *     then a barrier;
 *   - node 0 sets word 0 to 1 and tells the round's reader by a port
 *     message (no synchronisation of memory), which reads word 1 — fetching
 *     the page, word 0 included — and answers; node 0 sets word 0 back to
 *     0; a barrier;
 *   - every node must read 0 in word 0.
 * The program is race-free: word 0 is written by node 0 alone and read by
 * others only after the barrier. With 2 nodes the reader is node 1 itself
 * (no node holds the page before it).
 * Usage: test_home_writes_new_reader [rounds]
 */
#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 24;
    MP_CHECK(rounds >= 1 && rounds <= 10000, "rounds %d out of 1..10000", rounds);
    size_t words = dsm_page_size() / sizeof(int64_t);

    int64_t *a = NULL;
    if (me == 0) {
        a = dsm_malloc_home((size_t)rounds * dsm_page_size(), DSM_HOME_LOCAL);
        MP_CHECK(a, "out of shared memory for %d pages", rounds);
        for (int r = 0; r < rounds; r++) {
            a[r * words] = 0;
            a[r * words + 1] = 7;
        }
    }
    dsm_bcast(&a, sizeof a, 0);

    int port = dsm_port_create("new-reader", 4);
    MP_CHECK(port >= 0, "port");
    dsm_port_ref *peer = calloc((size_t)n, sizeof *peer);
    MP_CHECK(peer, "out of memory");
    for (int k = 0; k < n; k++)
        if ((me == 0) != (k == 0))
            MP_CHECK(dsm_port_lookup(k, "new-reader", 30, &peer[k]) == 0, "lookup %d", k);
    dsm_barrier();

    for (int r = 0; r < rounds; r++) {
        int64_t *p = a + (size_t)r * words;
        int reader = n > 2 ? 2 + r % (n - 2) : 1;
        if (n > 2 && me == 1)
            MP_CHECK(p[1] == 7, "round %d: word 1 reads %lld at node 1", r, (long long)p[1]);
        dsm_barrier();
        if (me == 0) {
            p[0] = 1;
            MP_CHECK(dsm_msg_send(&peer[reader], &r, sizeof r, NULL, 0, 30, NULL) == 0, "go");
            struct dsm_msg m;
            MP_CHECK(dsm_msg_recv(port, &m, 60) == 0, "round %d: no answer from node %d", r, reader);
            dsm_msg_free(&m);
            p[0] = 0;
        } else if (me == reader) {
            struct dsm_msg m;
            MP_CHECK(dsm_msg_recv(port, &m, 60) == 0, "round %d: no go from node 0", r);
            dsm_msg_free(&m);
            MP_CHECK(p[1] == 7, "round %d: word 1 reads %lld at node %d", r, (long long)p[1], me);
            MP_CHECK(dsm_msg_send(&peer[0], &r, sizeof r, NULL, 0, 30, NULL) == 0, "done");
        }
        dsm_barrier();
        MP_CHECK(p[0] == 0,
                 "round %d: node 0 set word 0 to 1 and back to 0, node %d (%s) reads %lld", r, me,
                 me == reader ? "which fetched the page in between" : "", (long long)p[0]);
        dsm_barrier(); /* read everywhere before the next round writes */
    }
    free(peer);
    if (me == 0)
        printf("home writes to new readers: %d rounds on %d nodes ok\n", rounds, n);
    dsm_finish();
    return 0;
}
