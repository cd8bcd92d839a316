/*
 * protocol_can.c — what each protocol can do beyond the interface, by its
 * name (protocols.def's third column).
 *
 * Apart from coherence.c's table, which holds every protocol's ops: the
 * settings check asks this before any protocol runs, in dsmrun too, and
 * must not link the protocols' code to ask it.
 */
#include <string.h>

#include "coherence/coherence.h"

static const struct {
    const char *name;
    unsigned    can;
} protocols[] = {
#define PROTOCOL(name, ops, can, description) {name, can},
#include "coherence/protocols.def"
#undef PROTOCOL
};

bool coherence_can(const char *name, unsigned what)
{
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
        if (!strcmp(protocols[i].name, name))
            return (protocols[i].can & what) == what;
    return false;
}
