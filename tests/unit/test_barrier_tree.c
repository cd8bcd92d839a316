/*
 * test_barrier_tree.c — the barrier's tree (sync_tree_parent and
 * sync_tree_children) is a spanning tree of the job rooted at node 0, for
 * every job size up to the 256-node maximum and every fan-out allowed:
 * each node but 0 is the child of exactly the parent it names, no node
 * has more than k children, and the depth is the least a k-ary tree of N
 * nodes can have, ceil(log_k((k - 1) N + 1)) - 1 (no chain, no star).
 */
#include "check.h"
#include "sync/sync.h"

static int least_depth(int nodes, int k)
{
    /* levels 0..d hold 1 + k + ... + k^d nodes */
    long full = 1, level = 1;
    int d = 0;
    while (full < nodes) {
        level *= k;
        full += level;
        d++;
    }
    return d;
}

static void test_tree_spans_the_job_with_least_depth(void)
{
    int bad_parent = 0, bad_cover = 0, bad_fanout = 0, bad_depth = 0;
    for (int k = 2; k <= 32; k++) {
        for (int n = 1; n <= 256; n++) {
            int seen[256] = {0}, depth[256] = {0}, deepest = 0;
            for (int i = 0; i < n; i++) {
                int first, c = sync_tree_children(i, k, n, &first);
                if (c < 0 || c > k)
                    bad_fanout++;
                for (int j = first; j < first + c; j++) {
                    if (j <= i || j >= n || sync_tree_parent(j, k) != i)
                        bad_parent++;
                    else
                        seen[j]++;
                }
            }
            CHECK_EQ(sync_tree_parent(0, k), -1);
            for (int i = 1; i < n; i++) {
                bad_cover += seen[i] != 1;
                int p = sync_tree_parent(i, k);
                if (p < 0 || p >= i) {
                    bad_parent++;
                    continue;
                }
                depth[i] = depth[p] + 1; /* parents come first: p < i */
                if (depth[i] > deepest)
                    deepest = depth[i];
            }
            bad_depth += deepest != least_depth(n, k);
        }
    }
    CHECK_EQ(bad_parent, 0);
    CHECK_EQ(bad_cover, 0);
    CHECK_EQ(bad_fanout, 0);
    CHECK_EQ(bad_depth, 0);
    /* The default fan-out at the largest job: three levels below node 0. */
    int first;
    CHECK_EQ(least_depth(256, 8), 3);
    CHECK_EQ(sync_tree_children(0, 8, 256, &first), 8);
    CHECK_EQ(first, 1);
    CHECK_EQ(sync_tree_children(31, 8, 256, &first), 7); /* 249..255 */
    CHECK_EQ(first, 249);
    CHECK_EQ(sync_tree_children(32, 8, 256, &first), 0);
}

int main(void)
{
    test_tree_spans_the_job_with_least_depth();
    return check_report("barrier_tree");
}
