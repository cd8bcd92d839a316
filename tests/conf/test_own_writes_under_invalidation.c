/*
 * A node's own writes stay in its copy while the home takes the page away.
 * Node 0 homes one page. Every other node owns a share of its words (false
 * sharing, no conflict) and writes them all, again and again, reading each
 * pass back: a copy fetched again after an invalidation must hold every
 * word written before it. In each round, once every writer has written a
 * pass (it says so with a port message, so that its page is dirty with a
 * long diff; it goes on for at most PASSES more), node 0 writes its own word and releases (a lock only it
 * takes): under erc-inv that release invalidates the writers' copies while
 * they write. The invalidated writer sends its diff home from its delivery
 * thread while its program, faulting at once, fetches the page again; a
 * fetch that overtook the diff came back without the writer's words (barnes
 * on 2 nodes, ~1 run in 10, before the fix). After a barrier every node
 * checks every node's last values.
 * Usage: test_own_writes_under_invalidation [rounds]
 */
#include <errno.h>
#include <stdbool.h>

#include "mp_util.h"

#define LOCK_OF_NODE0 7
#define PASSES        16

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    MP_CHECK(rounds >= 1 && rounds <= 1000000, "rounds %d out of 1..1000000", rounds);
    size_t words = dsm_page_size() / sizeof(int32_t);
    size_t per = words / (size_t)n; /* word 0 is node 0's; node k > 0 owns [k*per, (k+1)*per) */

    int32_t *page = NULL;
    if (me == 0)
        page = dsm_malloc(dsm_page_size());
    dsm_bcast(&page, sizeof page, 0);

    int port = dsm_port_create("own-writes", (unsigned)n);
    MP_CHECK(port >= 0, "port");
    dsm_port_ref *peer = calloc((size_t)n, sizeof *peer);
    MP_CHECK(peer, "out of memory");
    for (int k = 0; k < n; k++)
        if ((me == 0) != (k == 0))
            MP_CHECK(dsm_port_lookup(k, "own-writes", 30, &peer[k]) == 0, "lookup %d", k);
    dsm_barrier();

    int32_t v = 0;
    for (int r = 0; r < rounds; r++) {
        struct dsm_msg m;
        if (me == 0) {
            for (int k = 1; k < n; k++) {
                MP_CHECK(dsm_msg_recv(port, &m, 60) == 0, "round %d: a writer's pass", r);
                dsm_msg_free(&m);
            }
            dsm_lock(LOCK_OF_NODE0);
            page[0] = r + 1;
            dsm_unlock(LOCK_OF_NODE0);
            for (int k = 1; k < n; k++)
                MP_CHECK(dsm_msg_send(&peer[k], &r, sizeof r, NULL, 0, 30, NULL) == 0, "next");
            continue;
        }
        int32_t *mine = page + (size_t)me * per;
        bool told = false;
        for (int pass = 0;; pass++) {
            v++;
            for (size_t w = 0; w < per; w++)
                mine[w] = v;
            for (size_t w = 0; w < per; w++)
                MP_CHECK(mine[w] == v, "round %d: my word %zu reads %d, and I wrote %d there", r,
                         w, mine[w], v);
            if (!told) {
                MP_CHECK(dsm_msg_send(&peer[0], &r, sizeof r, NULL, 0, 30, NULL) == 0, "pass");
                told = true;
            }
            /* A bounded number of passes while node 0 releases: under sc
             * the writers take the page from each other at every pass. */
            int got = dsm_msg_recv(port, &m, pass < PASSES ? 0 : 60);
            if (got == 0) {
                dsm_msg_free(&m);
                break;
            }
            MP_CHECK(got == -ETIMEDOUT, "receive: %d", got);
        }
    }
    /* Every writer's last value, from every node. */
    int32_t *last = calloc((size_t)n, sizeof *last);
    MP_CHECK(last, "out of memory");
    last[me] = v;
    for (int k = 1; k < n; k++)
        dsm_bcast(&last[k], sizeof last[k], k);
    dsm_barrier();
    MP_CHECK(page[0] == rounds, "node 0's word reads %d, expected %d", page[0], rounds);
    for (int k = 1; k < n; k++)
        for (size_t w = 0; w < per; w++)
            MP_CHECK(page[(size_t)k * per + w] == last[k], "node %d's word %zu reads %d, expected %d",
                     k, w, page[(size_t)k * per + w], last[k]);
    dsm_barrier();
    if (me == 0)
        printf("own_writes_under_invalidation: %d nodes, %d rounds, %zu words each: ok\n", n,
               rounds, per);
    free(last);
    free(peer);
    dsm_finish();
    return 0;
}
