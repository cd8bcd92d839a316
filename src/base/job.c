/* job.c — the node's identity and configuration (job.h). A 1-node job until
 * the runtime says otherwise, so code that runs before dsm_startup sees a
 * consistent answer. */
#include "base/job.h"
#include "base/state.h"

DSM_STATE struct job job_state = {.rank = 0, .nodes = 1};

extern const int dsm_openmp_program __attribute__((weak));

int job_cpus(void)
{
    if (!job()->started)
        return 0;
    const struct job *j = job();
    if (j->cpus > 0)
        return j->cpus;
    if (j->nodes <= 1 && !&dsm_openmp_program)
        return 0;
    return j->nodes * (j->node_threads > 1 ? j->node_threads : 1);
}
