/* idmap.c — int id -> record, for locks and conditions (any id >= 0). */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "sync/sync.h"

struct idmap_entry {
    struct idmap_entry *next;
    int                 id;
    _Alignas(16) unsigned char record[];
};

void *idmap_get(struct idmap *m, int id)
{
    if (!m->buckets) {
        m->nbuckets = 1024;
        m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
        if (!m->buckets)
            log_fatal("out of memory for synchronization objects");
    }
    size_t b = (unsigned)id % m->nbuckets;
    for (struct idmap_entry *e = m->buckets[b]; e; e = e->next)
        if (e->id == id)
            return e->record;
    struct idmap_entry *e = calloc(1, sizeof *e + m->size);
    if (!e)
        log_fatal("out of memory for synchronization objects");
    e->id = id;
    e->next = m->buckets[b];
    m->buckets[b] = e;
    return e->record;
}
