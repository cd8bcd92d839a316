/* parallel.c — the parallel layer's start and finish (parallel.h). */
#include "parallel/parallel.h"

void parallel_start(const struct parallel_params *p)
{
    parallel_dispatch_start();
    parallel_claim_start();
    parallel_sites_start();
    parallel_set_profile_threshold(p->profiled_gain);
}

void parallel_finish(void)
{
    parallel_dispatch_finish();
    parallel_claim_finish();
    parallel_sites_finish();
}
