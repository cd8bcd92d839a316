/*
 * Writers of one page under different locks, readers after acquiring: the
 * eager protocols' invalidations and updates race with local writes and
 * fetches of the same page.
 *
 * Every page is cut into one slot per node; node j's slot in page k is
 * guarded by lock L(k, j) alone, so all nodes write each page at once,
 * each under its own lock. A slot holds
 *   - a count: how many times its owner has rewritten it,
 *   - a ticket: how many times anyone has held its lock (each holder adds
 *     one, so a holder that reads a stale copy sets it back, which the
 *     next holder, or the end, sees),
 *   - words that are a function of (owner, page, count, word).
 * Each iteration a node
 *   - rewrites its slot of one page under its lock (its count must be the
 *     one it wrote last: no diff of another writer undid it), reading its
 *     slot of another page half way through,
 *   - takes another node's lock for one page and checks that node's slot:
 *     every word matches the count found,
 *   - every fourth iteration, holds its own lock and another node's for the
 *     same page together, writing its slot while checking the other's.
 * Both writes wait on the network half way through, with the page dirty
 * here while other writers' invalidations or updates of it arrive. Counts
 * and tickets never go back. At the end, after a barrier, every slot holds
 * its owner's last count and a ticket of every time its lock was held.
 * Pages homed cyclically over the nodes and at the first toucher.
 * Usage: test_page_writers_under_locks [iterations] [pages per block]
 */
#include "mp_util.h"

#define LOCK_BASE 1000
#define COUNT     0  /* word indices in a slot */
#define TICKET    1
#define FIRST     2

/* The participant's: with threads each of a node's threads is one
 * (conf_threads.h), so they are thread-local (one thread a node without). */
static _Thread_local int nodes, pages;
static _Thread_local size_t slot_words;
static _Thread_local int64_t **page; /* page[k]: the k-th shared page */
static _Thread_local int64_t *mine;  /* per page: the count we wrote last */
static _Thread_local int64_t *seen;  /* per page and node: the count and ticket we saw last */

static int lock_of(int k, int j) { return LOCK_BASE + k * nodes + j; }

static int64_t *slot(int k, int j) { return page[k] + (size_t)j * slot_words; }

/* Count 0: never written, still the zeros dsm_malloc gave. */
static int64_t value(int j, int k, int64_t count, size_t w)
{
    return count ? (count << 32) ^ (int64_t)(j * 131 + k * 7919 + (int)w * 31 + 1) : 0;
}

/* Node j's iteration i: the page it writes, the node and page whose slot
 * it reads, and every fourth iteration the page of which it holds two
 * slots' locks (-1: none). */
static int write_page(int j, int i) { return (i * 3 + j) % pages; }
static int read_node(int j, int i)
{
    int r = (j + 1 + i) % nodes;
    return r == j ? (r + 1) % nodes : r;
}
static int read_page(int j, int i) { return (i * 5 + j * 7) % pages; }
static int paired_page(int j, int i) { return i % 4 == 3 ? (i + 2 * j + 1) % pages : -1; }

/* Holding L(k, j): the ticket goes on by one. */
static void take_ticket(int k, int j)
{
    int64_t *s = slot(k, j), *last = &seen[(k * nodes + j) * 2 + 1];
    MP_CHECK(s[TICKET] >= *last, "page %d, node %d's ticket went back from %lld to %lld", k, j,
             (long long)*last, (long long)s[TICKET]);
    *last = ++s[TICKET];
}

/* Writes the far half of our slot in page k: the page is dirty here from
 * then on. */
static void write_first_half(int k, int me)
{
    int64_t *s = slot(k, me);
    MP_CHECK(s[COUNT] == mine[k], "page %d: my count is %lld, I wrote %lld last", k,
             (long long)s[COUNT], (long long)mine[k]);
    take_ticket(k, me);
    for (size_t w = slot_words - 1; w > slot_words / 2; w--)
        s[w] = value(me, k, mine[k] + 1, w);
}

/* The rest, count last: a lost or reverted piece of the slot shows as a
 * mismatch with the count. */
static void write_second_half(int k, int me)
{
    int64_t *s = slot(k, me);
    int64_t c = ++mine[k];
    for (size_t w = slot_words / 2; w >= FIRST; w--)
        s[w] = value(me, k, c, w);
    s[COUNT] = c;
}

static void check_slot(int k, int j)
{
    const int64_t *s = slot(k, j);
    int64_t c = s[COUNT], *last = &seen[(k * nodes + j) * 2];
    MP_CHECK(c >= *last, "page %d, node %d's count went back from %lld to %lld", k, j,
             (long long)*last, (long long)c);
    for (size_t w = FIRST; w < slot_words; w++)
        MP_CHECK(s[w] == value(j, k, c, w), "page %d, node %d's word %zu = %#llx, expected %#llx (count %lld)",
                 k, j, w, (unsigned long long)s[w], (unsigned long long)value(j, k, c, w), (long long)c);
    *last = c;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    nodes = dsm_nodes();
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    int per_block = argc > 2 ? atoi(argv[2]) : 2;
    size_t psize = dsm_page_size();
    slot_words = psize / sizeof(int64_t) / (size_t)nodes;
    pages = 2 * per_block;
    MP_CHECK(slot_words >= 2 * FIRST && per_block > 0 && pages <= 64 && iters > 0,
             "too many nodes for a page, or bad arguments");

    int64_t *cyclic = NULL, *touch = NULL;
    if (me == 0)
        cyclic = dsm_malloc_home((size_t)per_block * psize, DSM_HOME_CYCLIC);
    if (me == nodes - 1)
        touch = dsm_malloc_home((size_t)per_block * psize, DSM_HOME_FIRST_TOUCH);
    dsm_bcast(&cyclic, sizeof cyclic, 0);
    dsm_bcast(&touch, sizeof touch, nodes - 1);
    page = malloc((size_t)pages * sizeof *page);
    mine = calloc((size_t)pages, sizeof *mine);
    seen = calloc((size_t)pages * (size_t)nodes * 2, sizeof *seen);
    MP_CHECK(page && mine && seen, "out of memory");
    for (int k = 0; k < per_block; k++) {
        page[k] = (int64_t *)((char *)cyclic + (size_t)k * psize);
        page[per_block + k] = (int64_t *)((char *)touch + (size_t)k * psize);
    }
    dsm_barrier();

    for (int i = 0; i < iters; i++) {
        /* Half the slot written, then our own slot of the next page read
         * (only we write it: no lock needed), which is likely invalid here
         * by now: the fetch waits on the network with this page dirty, while
         * the other writers' invalidations or updates of it come in. */
        int k = write_page(me, i), k2 = (k + 1) % pages;
        dsm_lock(lock_of(k, me));
        write_first_half(k, me);
        MP_CHECK(slot(k2, me)[COUNT] == mine[k2], "page %d: my count is %lld, I wrote %lld last", k2,
                 (long long)slot(k2, me)[COUNT], (long long)mine[k2]);
        write_second_half(k, me);
        dsm_unlock(lock_of(k, me));

        int j = read_node(me, i), r = read_page(me, i);
        dsm_lock(lock_of(r, j));
        check_slot(r, j);
        take_ticket(r, j);
        dsm_unlock(lock_of(r, j));

        /* Two locks of one page, taken in id order (no deadlock); where
         * ours comes first, the page is dirty here while we wait for the
         * other. */
        int p = paired_page(me, i);
        if (p >= 0) {
            int a = lock_of(p, me), b = lock_of(p, j);
            dsm_lock(a < b ? a : b);
            if (a < b)
                write_first_half(p, me);
            dsm_lock(a < b ? b : a);
            if (a > b)
                write_first_half(p, me);
            check_slot(p, j);
            take_ticket(p, j);
            write_second_half(p, me);
            dsm_unlock(b);
            dsm_unlock(a);
        }
    }
    dsm_barrier();

    /* Every count and ticket, replaying every node's iterations. */
    int64_t *count = calloc((size_t)pages * (size_t)nodes, sizeof *count);
    int64_t *tickets = calloc((size_t)pages * (size_t)nodes, sizeof *tickets);
    MP_CHECK(count && tickets, "out of memory");
    for (int m = 0; m < nodes; m++)
        for (int i = 0; i < iters; i++) {
            int w = write_page(m, i) * nodes + m, p = paired_page(m, i);
            count[w]++;
            tickets[w]++;
            tickets[read_page(m, i) * nodes + read_node(m, i)]++;
            if (p >= 0) {
                count[p * nodes + m]++;
                tickets[p * nodes + m]++;
                tickets[p * nodes + read_node(m, i)]++;
            }
        }
    for (int k = 0; k < pages; k++)
        for (int m = 0; m < nodes; m++) {
            const int64_t *s = slot(k, m);
            MP_CHECK(s[COUNT] == count[k * nodes + m] && s[TICKET] == tickets[k * nodes + m],
                     "after the barrier, page %d: node %d's count is %lld (expected %lld), its ticket %lld "
                     "(expected %lld)", k, m, (long long)s[COUNT], (long long)count[k * nodes + m],
                     (long long)s[TICKET], (long long)tickets[k * nodes + m]);
            check_slot(k, m);
        }
    free(count);
    free(tickets);
    dsm_barrier(); /* nobody leaves while others still read its pages */
    if (me == 0)
        printf("page_writers_under_locks: %d nodes, %d iterations, %d pages: ok\n", nodes, iters, pages);
    dsm_finish();
    return 0;
}
