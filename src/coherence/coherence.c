/* coherence.c — the active protocol. */
#include "base/state.h"
#include "coherence/coherence.h"

DSM_STATE const struct coherence_ops *coh;

#include <string.h>

/* Every protocol; CONFIG_PROTOCOLS (base/config.h) lists their names. */
static const struct coherence_ops *const protocols[] = {&hlrc_ops, &lrc_ops, &sc_ops, &erc_inv_ops,
                                                       &erc_upd_ops};

const struct coherence_ops *coherence_find(const char *name)
{
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
        if (!strcmp(protocols[i]->name, name))
            return protocols[i];
    return NULL;
}

void coherence_start(const struct coherence_ops *ops)
{
    coh = ops;
    ops->start();
    static DSM_STATE struct mem_fault_ops fo;
    fo.read_fault = ops->read_fault;
    fo.write_fault = ops->write_fault;
    mem_set_fault_ops(&fo);
}

void coherence_release_sent(void)
{
    if (coh->release_sent)
        coh->release_sent();
}

void coherence_finish(void)
{
    if (coh && coh->finish)
        coh->finish();
}
