/* coherence.c — the active protocol. */
#include "base/state.h"
#include "coherence/coherence.h"

DSM_STATE const struct coherence_ops *coh;

const struct coherence_ops *const coherence_protocols[] = {&hlrc_ops};

void coherence_start(const struct coherence_ops *ops)
{
    coh = ops;
    ops->start();
    static DSM_STATE struct mem_fault_ops fo;
    fo.read_fault = ops->read_fault;
    fo.write_fault = ops->write_fault;
    mem_set_fault_ops(&fo);
}
