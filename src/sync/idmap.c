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

/* Programs choose ids with a pattern (a lock per object, id % nodes naming
 * the manager), so the bucket comes from all the id's bits, not its low
 * ones: with `id % buckets`, ids that are multiples of the node count would
 * use only a fraction of the buckets. */
static size_t bucket_of(const struct idmap *m, int id)
{
    return (size_t)(((uint64_t)(unsigned)id * 0x9E3779B97F4A7C15ull) >> (64 - m->shift));
}

static void *zalloc_or_die(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p)
        log_fatal("out of memory for synchronization objects");
    return p;
}

/* Doubles the table; records stay where they are (callers keep pointers
 * to them), only the chains are relinked. */
static void grow(struct idmap *m)
{
    struct idmap_entry **old = m->buckets;
    size_t oldn = m->nbuckets;
    m->shift++;
    m->nbuckets = (size_t)1 << m->shift;
    m->buckets = zalloc_or_die(m->nbuckets, sizeof *m->buckets);
    for (size_t i = 0; i < oldn; i++)
        for (struct idmap_entry *e = old[i], *next; e; e = next) {
            next = e->next;
            size_t b = bucket_of(m, e->id);
            e->next = m->buckets[b];
            m->buckets[b] = e;
        }
    free(old);
}

void *idmap_get(struct idmap *m, int id)
{
    if (!m->buckets) {
        m->shift = 10;
        m->nbuckets = (size_t)1 << m->shift;
        m->buckets = zalloc_or_die(m->nbuckets, sizeof *m->buckets);
    }
    size_t b = bucket_of(m, id);
    for (struct idmap_entry *e = m->buckets[b]; e; e = e->next)
        if (e->id == id)
            return e->record;
    if (m->count >= m->nbuckets) {
        grow(m);
        b = bucket_of(m, id);
    }
    struct idmap_entry *e = zalloc_or_die(1, sizeof *e + m->size);
    e->id = id;
    e->next = m->buckets[b];
    m->buckets[b] = e;
    m->count++;
    return e->record;
}

void *idmap_find(const struct idmap *m, int id)
{
    if (!m->buckets)
        return NULL;
    for (struct idmap_entry *e = m->buckets[bucket_of(m, id)]; e; e = e->next)
        if (e->id == id)
            return e->record;
    return NULL;
}

size_t idmap_longest_chain(const struct idmap *m)
{
    size_t longest = 0;
    for (size_t i = 0; i < m->nbuckets; i++) {
        size_t n = 0;
        for (const struct idmap_entry *e = m->buckets[i]; e; e = e->next)
            n++;
        if (n > longest)
            longest = n;
    }
    return longest;
}

void idmap_free(struct idmap *m)
{
    for (size_t i = 0; i < m->nbuckets; i++)
        for (struct idmap_entry *e = m->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
    m->shift = 0;
}
