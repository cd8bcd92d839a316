/*
 * A release's diffs for one home travel together: every node but 0 writes
 * a few words of each of `small` pages homed at node 0 (pages the others
 * write too, in words of their own) and the whole of `big` pages of its
 * own, also homed at node 0; then a barrier, then every node reads and
 * checks every word, then a barrier. Under hlrc (homes that stay, no
 * local memory limit) each release's diffs leave as one COH_DIFFS message,
 * or a few of a datagram each when they do not fit in one (the big pages
 * do not), and node 0 acknowledges each such message with one: the test
 * counts the messages in the node's statistics and fails when there is
 * one a diff. A node whose parent in the barrier's tree is node 0 sends
 * its barrier arrival right behind those diffs, without waiting for their
 * acknowledgement (node 0 fills their versions into the arrival): every
 * diff of such a node is counted as one, and none of the others' (their
 * parent is not the home). Under every protocol, and under loss and
 * duplication, it checks the values, and under hlrc that node 0 applied
 * exactly the diffs made, each once.
 * Usage: test_diffs_per_home [rounds] [small pages] [big pages per node]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/home.h"
#include "ipc/ipc.h"
#include "mem/diff.h"

#define WORDS_EACH 4 /* words of a small page each node writes */

static int64_t value(int round, int node, size_t page, size_t word)
{
    return ((int64_t)(round + 1) << 40) ^ ((int64_t)node << 32) ^ (int64_t)(page * 4099 + word);
}

/* Messages of a type this node has sent so far. */
static uint64_t sent(unsigned type) { return stats_msgs_by_type[type]; }

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    int nsmall = argc > 2 ? atoi(argv[2]) : 16;
    int nbig = argc > 3 ? atoi(argv[3]) : 12;
    MP_CHECK(rounds >= 1 && rounds <= 10000, "rounds %d out of 1..10000", rounds);
    MP_CHECK(nsmall >= 1 && nsmall <= 1024, "small pages %d out of 1..1024", nsmall);
    MP_CHECK(nbig >= 0 && nbig <= 256, "big pages %d out of 0..256", nbig);
    MP_CHECK(n * WORDS_EACH * sizeof(int64_t) <= dsm_page_size(), "%d nodes' words exceed a page", n);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t);
    size_t small = (size_t)nsmall, big = (size_t)nbig;

    int64_t *s = NULL, *b = NULL;
    if (me == 0) {
        s = dsm_malloc_home(small * page, DSM_HOME_LOCAL);
        b = dsm_malloc_home((size_t)n * big * page + 1, DSM_HOME_LOCAL);
        memset(s, 0, small * page);
    }
    dsm_bcast(&s, sizeof s, 0);
    dsm_bcast(&b, sizeof b, 0);
    /* The counts before the barrier that starts the rounds (nothing before
     * it makes a diff): after it, another node may have written and
     * released its first round before this one reads them (seen at load:
     * node 0 counted one release's 48 diffs short). */
    uint64_t diffs0 = sent(COH_DIFF), batches0 = sent(COH_DIFFS);
    uint64_t acks0 = sent(COH_DIFF_ACK) + sent(COH_DIFF_ACKS), applied0 = stats_get(STAT_DIFFS_APPLIED);
    uint64_t before0 = stats_get(STAT_DIFFS_BEFORE_ARRIVAL);
    dsm_barrier();

    for (int r = 0; r < rounds; r++) {
        for (size_t q = 0; q < small; q++)
            for (size_t w = 0; w < WORDS_EACH; w++)
                s[q * words + (size_t)me * WORDS_EACH + w] = value(r, me, q, w);
        int64_t *mine = b + (size_t)me * big * words;
        for (size_t q = 0; q < big; q++)
            for (size_t w = 0; w < words; w++)
                mine[q * words + w] = value(r, me, q, w);
        dsm_barrier();
        for (int j = 0; j < n; j++) {
            for (size_t q = 0; q < small; q++)
                for (size_t w = 0; w < WORDS_EACH; w++) {
                    int64_t got = s[q * words + (size_t)j * WORDS_EACH + w];
                    MP_CHECK(got == value(r, j, q, w), "round %d: node %d's word %zu of small page %zu is %#llx",
                             r, j, w, q, (unsigned long long)got);
                }
            const int64_t *theirs = b + (size_t)j * big * words;
            for (size_t q = 0; q < big; q++)
                for (size_t w = 0; w < words; w += 61)
                    MP_CHECK(theirs[q * words + w] == value(r, j, q, w),
                             "round %d: node %d's big page %zu word %zu", r, j, q, w);
        }
        dsm_barrier();
    }
    uint64_t diffs = sent(COH_DIFF) - diffs0, batches = sent(COH_DIFFS) - batches0;
    uint64_t acks = sent(COH_DIFF_ACK) + sent(COH_DIFF_ACKS) - acks0;
    uint64_t applied = stats_get(STAT_DIFFS_APPLIED) - applied0;
    uint64_t before = stats_get(STAT_DIFFS_BEFORE_ARRIVAL) - before0;

    const char *limit = getenv("DSM_LOCAL_MEM"), *migrate = getenv("DSM_MIGRATE_HOMES");
    bool plain = strcmp(coherence_name(), "hlrc") == 0 && !(limit && *limit) &&
                 !(migrate && strcmp(migrate, "0") != 0);
    if (plain && me > 0) {
        /* The messages one release may take: each is filled to within one
         * item of the room before the next begins. */
        size_t item = sizeof(struct diffs_item) + mem_diff_bound(page), room = ipc_message_room();
        size_t bytes = small * (sizeof(struct diffs_item) + 2 * WORDS_EACH * sizeof(int64_t)) + big * item;
        uint64_t per_release = room > 2 * item ? bytes / (room - item) + 1 : small + big;
        MP_CHECK(diffs + batches <= (uint64_t)rounds * per_release,
                 "%llu diff messages for %d releases of %zu diffs to one home: at most %llu each expected",
                 (unsigned long long)(diffs + batches), rounds, small + big, (unsigned long long)per_release);
        MP_CHECK(batches >= (uint64_t)rounds, "%llu COH_DIFFS messages for %d releases",
                 (unsigned long long)batches, rounds);
        const char *fanout = getenv("DSM_BARRIER_FANOUT");
        int k = fanout && *fanout ? atoi(fanout) : 8;
        uint64_t made = (uint64_t)rounds * (small + big);
        if ((me - 1) / k == 0)
            MP_CHECK(before == made, "%llu of %llu diffs to node 0, this node's barrier parent, went "
                     "before the arrival unacknowledged", (unsigned long long)before,
                     (unsigned long long)made);
        else
            MP_CHECK(before == 0, "%llu diffs went before the arrival to node %d, not their home",
                     (unsigned long long)before, (me - 1) / k);
    }
    if (plain && me == 0) {
        uint64_t made = (uint64_t)rounds * (uint64_t)(n - 1) * (small + big);
        MP_CHECK(applied == made, "node 0 applied %llu diffs, %llu were made",
                 (unsigned long long)applied, (unsigned long long)made);
        MP_CHECK(acks < made, "node 0 sent %llu acknowledgements for %llu diffs",
                 (unsigned long long)acks, (unsigned long long)made);
    }
    if (me == 0)
        printf("diffs_per_home: %d nodes (%s), %d rounds of %zu small and %zu big pages: ok; node 0 "
               "applied %llu diffs and sent %llu acknowledgements\n",
               n, coherence_name(), rounds, small, big, (unsigned long long)applied,
               (unsigned long long)acks);
    dsm_finish();
    return 0;
}
