/*
 * A lock passed on while its owner is still taking in another lock's
 * grant carries every interval the intervals it passes depend on (issue
 * 36): a grant that cut a message in two gave its acquirer an interval
 * without an older one of a third node; under lrc the older one's diffs
 * came later and were applied over the newer content.
 *
 * Node A (1) owns many locks M_j it does not hold; node D (0) takes them
 * one by one while A keeps taking lock L1, whose grants carry long chains
 * of intervals in which a lower-numbered node's interval depends on a
 * higher-numbered node's (a grant lists intervals in node order, so each
 * such grant is, until it is all in, a set that is not causally closed).
 * The writers (nodes n-1 down to 2) each make several intervals of their
 * own, then in turn take L1 and overwrite the pages X, so that the last
 * writer's values are the ones every node must read after the round; D
 * reads X under each M_j (a race: any value will do, but it brings X's
 * diffs in before the round's barrier brings the rest). Checked: the
 * counter A raised under each M_j, the writers' chain under L1, and X
 * everywhere after each round. Under DSM_CHECK (make test) a grant that
 * carries part of a message ends the job, whether or not a value shows it.
 * Needs 3 nodes or more (on 2 there is no third node's interval to miss).
 * Usage: test_grant_during_apply [rounds] [locks] [pages] [intervals]
 */
#include "mp_util.h"

#define L1 1
#define M0 100 /* M_j = M0 + j */
#define Q0 50  /* each writer's own lock, for its intervals of its own */

struct shared {
    int64_t turn;                   /* under L1: the writer whose turn it is; 1: A's */
    int64_t counter[MP_MAX_NODES];  /* under M_j */
    int64_t *own[MP_MAX_NODES];     /* each writer's pages of its own */
};

static int64_t xval(int round, int writer, size_t word)
{
    return ((int64_t)round << 40) + ((int64_t)writer << 24) + (int64_t)word;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    int locks = argc > 2 ? atoi(argv[2]) : 32;
    int pages = argc > 3 ? atoi(argv[3]) : 4;
    int own = argc > 4 ? atoi(argv[4]) : 4;
    if (n < 3 || locks < 1 || locks > MP_MAX_NODES || pages < 1 || own < 1) {
        if (me == 0)
            fprintf(stderr, "test_grant_during_apply: needs 3 nodes or more, and 1 to %d locks\n",
                    MP_MAX_NODES);
        dsm_finish();
        return 1;
    }
    size_t pw = dsm_page_size() / sizeof(int64_t), words = (size_t)pages * pw;

    struct shared *s = NULL;
    int64_t *x = NULL, *mine = NULL;
    if (me == 0) {
        s = dsm_malloc(sizeof *s);
        x = dsm_malloc(words * sizeof *x);
        memset(s, 0, sizeof *s);
        memset(x, 0, words * sizeof *x);
    }
    dsm_bcast(&s, sizeof s, 0);
    dsm_bcast(&x, sizeof x, 0);
    mine = dsm_malloc((size_t)own * pw * sizeof *mine); /* pages of this node's own */
    s->own[me] = mine;
    dsm_barrier();

    /* The last writer's go-ahead, once the chain is done: a message,
     * which carries no intervals, so that A's next grant of L1 carries the
     * whole chain at once, and the others ask A for M_j while it takes it in. */
    int go = dsm_port_create("go", 4);
    MP_CHECK(go >= 0, "port: %d", go);
    dsm_port_ref to[MP_MAX_NODES];
    for (int k = 0; me == 2 && k < n; k++)
        MP_CHECK(k == 2 || dsm_port_lookup(k, "go", 60, &to[k]) == 0, "lookup of node %d", k);

    for (int r = 0; r < rounds; r++) {
        if (me == 1) { /* A comes to own every M_j, not holding it */
            for (int j = 0; j < locks; j++) {
                dsm_lock(M0 + j);
                s->counter[j]++;
                dsm_unlock(M0 + j);
            }
            dsm_lock(L1);
            s->turn = n - 1;
            dsm_unlock(L1);
        }
        dsm_barrier();
        if (me >= 2) { /* a writer: intervals of its own, then its turn under L1 */
            for (int i = 0; i < own; i++) {
                dsm_lock(Q0 + me);
                mine[(size_t)i * pw] = xval(r, me, 0) + i; /* a page per interval */
                dsm_unlock(Q0 + me);
            }
            for (;;) {
                dsm_lock(L1);
                if (s->turn == me)
                    break;
                dsm_unlock(L1);
            }
            for (size_t w = 0; w < words; w++) {
                int64_t want = me == n - 1 ? (r ? xval(r - 1, 2, w) : 0) : xval(r, me + 1, w);
                MP_CHECK(x[w] == want, "round %d: writer %d read x[%zu] = %llx under L1, "
                         "expected %llx", r, me, w, (long long)x[w], (long long)want);
                x[w] = xval(r, me, w);
            }
            s->turn = me - 1;
            dsm_unlock(L1);
            int64_t round = r;
            for (int k = 0; me == 2 && k < n; k++)
                MP_CHECK(k == 2 || dsm_msg_send(&to[k], &round, sizeof round, NULL, 0, 60, NULL) == 0,
                         "go-ahead to node %d", k);
        }
        if (me != 2)
            mp_recv_round(go, 2, r);
        if (me == 1) { /* A: the whole chain in one grant of L1 */
            dsm_lock(L1);
            MP_CHECK(s->turn == 1, "round %d: A took L1 after the last writer, turn %lld", r,
                     (long long)s->turn);
            for (size_t w = 0; w < words; w++)
                MP_CHECK(x[w] == xval(r, 2, w), "round %d: A read x[%zu] = %llx under L1, "
                         "expected %llx from the last writer", r, w, (long long)x[w],
                         (long long)xval(r, 2, w));
            dsm_unlock(L1);
        } else if (me != 2) { /* the others: their share of the M_j from A, as it takes L1 in */
            volatile int64_t sink = 0;
            int askers = n - 2, at = me == 0 ? 0 : me - 2; /* nodes 0, 3, 4, ... */
            for (int j = at; j < locks; j += askers) {
                dsm_lock(M0 + j);
                MP_CHECK(s->counter[j] == r + 1, "round %d: node %d read counter %d = %lld "
                         "under its lock, expected %d", r, me, j, (long long)s->counter[j], r + 1);
                sink += x[(size_t)j * 61 % words]; /* racy: brings X's diffs in */
                dsm_unlock(M0 + j);
            }
            (void)sink;
        }
        dsm_barrier();
        for (size_t w = 0; w < words; w++)
            MP_CHECK(x[w] == xval(r, 2, w), "round %d: after the barrier x[%zu] = %llx, "
                     "expected %llx from the last writer (node 2)", r, w, (long long)x[w],
                     (long long)xval(r, 2, w));
        /* A keeps a valid copy of every writer's own page, so that each of
         * their intervals costs A's apply an invalidation: a longer apply. */
        for (int k = 2; me == 1 && k < n; k++)
            for (int i = 0; i < own; i++)
                MP_CHECK(s->own[k][(size_t)i * pw] == xval(r, k, 0) + i, "round %d: A read %lld "
                         "in node %d's own page %d after the barrier, expected %lld", r,
                         (long long)s->own[k][(size_t)i * pw], k, i, (long long)(xval(r, k, 0) + i));
        dsm_barrier(); /* nobody writes round r + 1 while another still reads round r */
    }
    if (me == 0)
        printf("grant_during_apply: %d rounds, %d locks, %d pages on %d nodes: ok\n", rounds,
               locks, pages, n);
    dsm_finish();
    return 0;
}
