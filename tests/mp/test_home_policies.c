/*
 * Pages homed by policy on a node that has never touched them: the base
 * node that decides the home must tell it. Every node writes a page of every
 * other node's home, in allocations under each policy, before the homes have
 * touched them; after a barrier everyone reads every value.
 */
#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    long ps = (long)dsm_page_size();
    const enum dsm_home policies[] = {DSM_HOME_LOCAL, DSM_HOME_CYCLIC, DSM_HOME_BLOCK,
                                      DSM_HOME_FIRST_TOUCH};
    for (size_t k = 0; k < sizeof policies / sizeof policies[0]; k++) {
        int64_t *p = NULL;
        size_t pages = (size_t)n * 3;
        if (me == 0)
            p = dsm_malloc_home(pages * (size_t)ps, policies[k]);
        dsm_bcast(&p, sizeof p, 0);
        /* Node i writes word i of every page (false sharing across homes). */
        for (size_t pg = 0; pg < pages; pg++)
            p[pg * (size_t)ps / sizeof *p + (size_t)me] = (int64_t)(k * 1000000 + pg * 100 + (size_t)me);
        dsm_barrier();
        for (size_t pg = 0; pg < pages; pg++)
            for (int i = 0; i < n; i++)
                MP_CHECK(p[pg * (size_t)ps / sizeof *p + (size_t)i] == (int64_t)(k * 1000000 + pg * 100 + (size_t)i),
                         "policy %zu page %zu word %d", k, pg, i);
        dsm_barrier();
    }
    if (me == 0)
        printf("home policies: local, cyclic, block, first touch: all writes merged and seen\n");
    dsm_finish();
    return 0;
}
