/*
 * The home's writes found by the kernel's write watch (hlrc, mem/watch.c):
 * node 0 homes `pages` pages that every other node reads, so that each is
 * shared and tracked with a snapshot at node 0. Then, each round, node 0
 * changes one page by a store, one by read(2) from a pipe (the kernel
 * writes it on the program's behalf: it must be seen like a store; the
 * page stored into the round before, still writable at hlrc's home), and
 * rewrites a third with the values it already holds (written, unchanged:
 * nothing to announce); after a barrier every node checks every page.
 * Under every protocol the values must be right. Under hlrc with the
 * watch on (DSM_WRITE_WATCH=auto on a kernel that has it) node 0 must
 * have compared only the pages written, not every tracked page at every
 * release: at most 4 a release here, where the compare of every tracked
 * page costs `pages` a release (NAS BT class W compared 500-800 a release,
 * 8 % of them changed). With the watch off, every tracked page is compared.
 * With `warm` rounds first, node 0 changes every page each round: under
 * DSM_WRITE_WATCH=auto the home's compares pass the number after which
 * the watch starts (hlrc.c, WATCH_AFTER_COMPARES) mid-run, and it must
 * have started by their end wherever the kernel keeps the record; the
 * rounds after it are checked as above.
 * Usage: test_write_watch [rounds] [pages] [warm]
 */
#include "mp_util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/stats.h"
#include "coherence/coherence.h"
#include "mem/mem.h"

static int64_t value(int round, size_t page, size_t word)
{
    return ((int64_t)(round + 1) << 32) ^ (int64_t)(page * 7919 + word);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    int npages = argc > 2 ? atoi(argv[2]) : 48;
    int warm = argc > 3 ? atoi(argv[3]) : 0;
    MP_CHECK(warm >= 0 && warm <= 10000, "warm rounds %d out of 0..10000", warm);
    MP_CHECK(rounds >= 1 && rounds <= 10000, "rounds %d out of 1..10000", rounds);
    MP_CHECK(npages >= 8 && npages <= 4096, "pages %d out of 8..4096", npages);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), np = (size_t)npages;

    int64_t *a = NULL;
    int64_t *last = malloc(np * sizeof *last); /* per page: the round of its values, -1: 0 */
    MP_CHECK(last != NULL, "out of memory");
    if (me == 0) {
        a = dsm_malloc_home(np * page, DSM_HOME_LOCAL);
        memset(a, 0, np * page);
    }
    dsm_bcast(&a, sizeof a, 0);
    for (size_t q = 0; q < np; q++)
        last[q] = -1;
    dsm_barrier();
    int64_t sum = 0;
    for (size_t i = 0; i < np * words; i += words)
        sum += a[i]; /* every node's copy: each page shared at node 0 */
    MP_CHECK(sum == 0, "pages not zero at the start");
    dsm_barrier();

    for (int r = 0; r < warm; r++) {
        /* Every page changed (and zero again at the end), then read by
         * every node: a home page stays tracked, and compared, only while
         * other nodes fetch it again after each change (hlrc.c,
         * announce_home_writes). */
        int64_t want = r + 1 < warm ? r + 1 : 0;
        if (me == 0)
            for (size_t q = 0; q < np; q++)
                a[q * words] = want;
        dsm_barrier();
        for (size_t q = 0; q < np; q++)
            MP_CHECK(a[q * words] == want, "warm round %d: node %d reads page %zu's first word as "
                     "%lld, %lld expected", r, me, q, (long long)a[q * words], (long long)want);
        dsm_barrier();
    }
    if (warm && me == 0 && strcmp(coherence_name(), "hlrc") == 0 && !mem_watch_on()) {
        const char *set = getenv("DSM_WRITE_WATCH");
        /* Off, or the kernel keeps no record here (asked once more: the
         * answer is the first one's). */
        MP_CHECK((set && strcmp(set, "off") == 0) || !mem_watch_start(),
                 "the write watch had not started after %d warm rounds of %zu pages (%llu compares)",
                 warm, np, (unsigned long long)stats_get(STAT_HOME_COMPARES));
    }

    int fds[2];
    MP_CHECK(pipe(fds) == 0, "pipe");
    uint64_t compares0 = stats_get(STAT_HOME_COMPARES), releases = 0;
    int64_t *buf = malloc(page);
    MP_CHECK(buf != NULL, "out of memory");
    uint64_t efaults = 0;
    for (int r = 0; r < rounds; r++) {
        /* The page piped into is the one stored into the round before: at
         * hlrc's home it is still writable (a page retires after two quiet
         * releases), so the kernel's write is the only one it gets. */
        size_t stored = (size_t)(3 * r) % np, piped = (size_t)(3 * r - 3) % np, same = (stored + 1) % np;
        if (me == 0) {
            for (size_t w = 0; w < words; w += 3)
                a[stored * words + w] = value(r, stored, w);
            if (r > 0) {
                for (size_t w = 0; w < words; w++)
                    buf[w] = value(r, piped, w);
                /* Whole, through the kernel: a pipe holds 64 KiB by
                 * default; read returns the page in one call or pieces. */
                MP_CHECK(write(fds[1], buf, page) == (ssize_t)page, "write to the pipe");
                for (size_t got = 0; got < page;) {
                    char *to = (char *)(a + piped * words) + got;
                    ssize_t k = read(fds[0], to, page - got);
                    if (k < 0 && errno == EFAULT) {
                        /* Held read-only here (docs/unmodified-programs.md:
                         * read(2) into such a page fails): a store first. */
                        efaults++;
                        *(volatile char *)to = *to;
                        continue;
                    }
                    MP_CHECK(k > 0, "read from the pipe into shared memory");
                    got += (size_t)k;
                }
            }
            memcpy(buf, a + same * words, page);
            memcpy(a + same * words, buf, page);
        }
        last[stored] = r;
        if (r > 0)
            last[piped] = r;
        dsm_barrier();
        releases++;
        for (size_t q = 0; q < np; q++) {
            bool every = r > 0 && q == piped;
            for (size_t w = 0; w < words; w += every ? 1 : 3) {
                int64_t want = last[q] < 0 ? 0 : value((int)last[q], q, w);
                int64_t got = a[q * words + w];
                /* A stored page holds the round's value on every third
                 * word; the others are what the pipe left there before,
                 * or zero. */
                if (q == stored && w % 3)
                    continue;
                MP_CHECK(got == want, "round %d: node %d reads word %zu of page %zu as %#llx, %#llx "
                         "expected", r, me, w, q, (unsigned long long)got, (unsigned long long)want);
            }
        }
        dsm_barrier();
        releases++;
    }
    close(fds[0]);
    close(fds[1]);
    free(buf);
    free(last);

    uint64_t compares = stats_get(STAT_HOME_COMPARES) - compares0;
    if (me == 0 && strcmp(coherence_name(), "hlrc") == 0) {
        /* Under DSM_LOCAL_MEM a home may hold a page without a snapshot,
         * write-protected at each release. */
        const char *limit = getenv("DSM_LOCAL_MEM");
        if (!(limit && *limit))
            MP_CHECK(efaults == 0, "read(2) into a page written at the home the round before failed "
                     "with EFAULT %llu times", (unsigned long long)efaults);
        if (mem_watch_on())
            MP_CHECK(compares <= 4 * releases,
                     "node 0 compared %llu home pages with their snapshots in %llu releases, with the "
                     "write watch on: at most 4 a release expected (3 pages written a round)",
                     (unsigned long long)compares, (unsigned long long)releases);
        printf("write_watch: %d nodes, %d rounds of %d pages: ok; watch %s, %llu compares in %llu "
               "releases\n", n, rounds, npages, mem_watch_on() ? "on" : "off",
               (unsigned long long)compares, (unsigned long long)releases);
    } else if (me == 0) {
        printf("write_watch: %d nodes (%s), %d rounds of %d pages: ok\n", n, coherence_name(), rounds,
               npages);
    }
    dsm_finish();
    return 0;
}
