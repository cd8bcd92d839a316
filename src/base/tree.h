/*
 * tree.h — the job's spanning tree of fan-out k, rooted at node 0: node i's
 * parent is (i - 1) / k, its children k i + 1 ... k i + k. The barrier
 * (sync/barrier.c), dsm_bcast and the transport's finish (net/transport.c)
 * gather and spread along it: depth log_k N, one message per node each way.
 */
#ifndef DSM_BASE_TREE_H
#define DSM_BASE_TREE_H

/* Node i's parent; -1 for node 0. */
static inline int tree_parent(int i, int k) { return i == 0 ? -1 : (i - 1) / k; }

/* Node i's children in a job of `nodes`: how many, the first in *first. */
static inline int tree_children(int i, int k, int nodes, int *first)
{
    long f = (long)i * k + 1;
    *first = (int)(f < nodes ? f : nodes);
    long n = (long)nodes - f;
    return n <= 0 ? 0 : n < k ? (int)n : k;
}
#endif
