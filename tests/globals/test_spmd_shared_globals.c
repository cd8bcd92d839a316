/*
 * test_spmd_shared_globals — an SPMD program (dsm_startup on every node)
 * that asks for shared globals at link time (DSM_SHARED_GLOBALS at file
 * scope), linked as dsmcc would but started as SPMD: every node adds its
 * rank to a global under a lock and, after a barrier, every node sees the
 * whole sum; a thread-local stays each node's own.
 */
#include <stdio.h>

#include <dsm.h>

DSM_SHARED_GLOBALS;

long sum;
long written_by_last;
__thread long mine = -1;

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    mine = me;
    dsm_lock(7);
    sum += me + 1;
    dsm_unlock(7);
    if (me == n - 1)
        written_by_last = 1234;
    dsm_barrier();
    int ok = sum == (long)n * (n + 1) / 2 && written_by_last == 1234 && mine == me;
    printf("node %d: sum %ld, last %ld, thread-local %ld: %s\n", me, sum, written_by_last, mine,
           ok ? "ok" : "WRONG");
    dsm_barrier();
    dsm_finish();
    return ok ? 0 : 1;
}
