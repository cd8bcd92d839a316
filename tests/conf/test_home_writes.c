/*
 * The home's own writes, seen by the other nodes, in the patterns that
 * decide how a home detects and announces them (hlrc tracks shared home
 * pages with a snapshot, and refreshes re-read pages at the acquire):
 *
 *  - A value written, fetched and written back: node 0 (the home) sets a
 *    word to 1; a reader, told so by a port message (no acquire), reads
 *    another word of the page, which fetches it when the last barrier
 *    announced a change (every other round); node 0 then restores the word
 *    to 0. After the barrier the reader must see 0, whatever its copy held.
 *  - A page written once, then read for many barriers without change, then
 *    written again (a quiet page that the home stops tracking must still
 *    announce its next write).
 *  - A page written by the home every round and read by everyone every
 *    round, except for a stretch of rounds in which nobody reads it.
 *  - A page written every round by every node, a word each, read whole.
 * Usage: test_home_writes [rounds]
 */
#include "mp_util.h"

struct shared {
    int64_t *aba;     /* a page: [0] set and restored, [1] read to fetch, [2] changed every other round */
    int64_t *quiet;   /* a page: [0] written in round 0 and in round rounds/2 */
    int64_t *every;   /* a page: [0] the round, written by node 0 */
    int64_t *mine;    /* a page: [k] the round, written by node k */
};

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    MP_CHECK(rounds >= 8 && rounds <= 100000, "rounds %d out of 8..100000", rounds);
    size_t page = dsm_page_size();

    struct shared s;
    if (me == 0) {
        s.aba = dsm_malloc(page);
        s.quiet = dsm_malloc(page);
        s.every = dsm_malloc(page);
        s.mine = dsm_malloc(page);
        s.aba[0] = 0;
        s.aba[1] = 7;
        s.aba[2] = -1;
        s.quiet[0] = 1;
        s.every[0] = -1;
    }
    dsm_bcast(&s, sizeof s, 0);
    MP_CHECK((size_t)n <= page / sizeof(int64_t), "%d nodes do not fit a page of words", n);

    int port = dsm_port_create("home-writes", 4);
    MP_CHECK(port >= 0, "port");
    dsm_port_ref *peer = calloc((size_t)n, sizeof *peer);
    MP_CHECK(peer, "out of memory");
    for (int k = 0; k < n; k++)
        if ((me == 0) != (k == 0))
            MP_CHECK(dsm_port_lookup(k, "home-writes", 30, &peer[k]) == 0, "lookup %d", k);
    dsm_barrier();

    int quiet_round = rounds / 2, skip_from = rounds / 4, skip_to = rounds / 4 + 5;
    for (int r = 0; r < rounds; r++) {
        /* aba[2] is written between the round's two barriers (node 0, even
         * rounds), so it is read only here, between the previous round's
         * last barrier and this round's first. */
        int64_t a2 = r % 2 ? r : r - 1;
        MP_CHECK(s.aba[2] == a2, "round %d: aba[2] = %lld, not %lld", r, (long long)s.aba[2],
                 (long long)a2);
        /* The set-fetch-restore, reader by reader, in odd rounds: the
         * page changed just before the last barrier (aba[2]), so a
         * reader's copy is stale, unless the acquire refreshed it. */
        if (me == 0 && r % 2) {
            for (int k = 1; k < n; k++) {
                s.aba[0] = 1;
                MP_CHECK(dsm_msg_send(&peer[k], &r, sizeof r, NULL, 0, 30, NULL) == 0, "go");
                struct dsm_msg m;
                MP_CHECK(dsm_msg_recv(port, &m, 60) == 0, "done from %d", k);
                dsm_msg_free(&m);
                s.aba[0] = 0;
            }
        } else if (r % 2) {
            struct dsm_msg m;
            MP_CHECK(dsm_msg_recv(port, &m, 60) == 0, "go");
            dsm_msg_free(&m);
            MP_CHECK(s.aba[1] == 7, "round %d: aba[1] = %lld", r, (long long)s.aba[1]);
            MP_CHECK(dsm_msg_send(&peer[0], &r, sizeof r, NULL, 0, 30, NULL) == 0, "done");
        }

        if (me == 0) {
            if (r == quiet_round)
                s.quiet[0] = 2;
            s.every[0] = r;
        }
        s.mine[me] = r;
        dsm_barrier();

        MP_CHECK(s.aba[0] == 0, "round %d: a word set to 1 and back to 0 reads %lld", r,
                 (long long)s.aba[0]);
        int64_t q = r < quiet_round ? 1 : 2;
        MP_CHECK(s.quiet[0] == q, "round %d: the quiet page reads %lld, not %lld", r,
                 (long long)s.quiet[0], (long long)q);
        if (r < skip_from || r >= skip_to)
            MP_CHECK(s.every[0] == r, "round %d: the page written every round reads %lld", r,
                     (long long)s.every[0]);
        for (int k = 0; k < n; k++)
            MP_CHECK(s.mine[k] == r, "round %d: node %d's word reads %lld", r, k,
                     (long long)s.mine[k]);
        if (me == 0 && r % 2 == 0)
            s.aba[2] = r + 1;
        dsm_barrier(); /* nobody writes a page before everyone has read it */
    }
    free(peer);
    if (me == 0)
        printf("home writes: %d rounds on %d nodes ok\n", rounds, n);
    dsm_finish();
    return 0;
}
