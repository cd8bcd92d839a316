/* job.c — the node's identity and configuration (job.h). A 1-node job until
 * the runtime says otherwise, so code that runs before dsm_startup sees a
 * consistent answer. */
#include "base/job.h"
#include "base/state.h"

DSM_STATE struct job job_state = {.rank = 0, .nodes = 1};
