/*
 * interval.c — intervals, vector timestamps and their encoding.
 *
 * Encoding: u32 count, then per interval { u16 node, u16 zero, u32 id,
 * u32 notices } and the notices (u32 page, u32 version). A node's intervals
 * appear in increasing id order, so a receiver applies them in the order
 * they happened; an interval whose predecessor the receiver lacks is a
 * protocol error.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/msgcheck.h"

struct interval {
    uint32_t       id, count;
    struct notice *notices;
};

struct ilog {                  /* one node's intervals since the last barrier */
    struct interval *v;
    size_t           n, cap;
};

static DSM_STATE struct {
    pthread_mutex_t lock;      /* the delivery thread encodes grants */
    uint32_t       *vt;
    struct ilog    *log;
} iv = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Appends len bytes; with data NULL, only makes room for them. */
void buf_put(struct buf *b, const void *data, size_t len)
{
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            log_fatal("out of memory encoding a message");
        b->p = p;
        b->cap = cap;
    }
    if (data)
        memcpy(b->p + b->len, data, len);
    b->len += len;
}

void buf_free(struct buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void page_list_add(uint32_t **v, size_t *n, size_t *cap, size_t page)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        *v = realloc(*v, *cap * sizeof **v);
        if (!*v)
            log_fatal("out of memory for a list of pages");
    }
    (*v)[(*n)++] = (uint32_t)page;
}

static int by_page(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void page_list_sort(uint32_t *v, size_t n)
{
    if (n > 1) /* an empty list may be NULL, which qsort must not get */
        qsort(v, n, sizeof *v, by_page);
}

void interval_init(void)
{
    int nodes = job()->nodes;
    iv.vt = calloc((size_t)nodes, sizeof *iv.vt);
    iv.log = calloc((size_t)nodes, sizeof *iv.log);
    if (!iv.vt || !iv.log)
        log_fatal("out of memory for vector timestamps");
}

static void store(int node, uint32_t id, const struct notice *n, uint32_t count)
{
    struct ilog *l = &iv.log[node];
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v)
            log_fatal("out of memory for intervals");
    }
    struct interval *i = &l->v[l->n++];
    i->id = id;
    i->count = count;
    i->notices = malloc((count ? count : 1) * sizeof *n);
    if (!i->notices)
        log_fatal("out of memory for write notices");
    memcpy(i->notices, n, count * sizeof *n);
    iv.vt[node] = id;
}

void interval_create(const struct notice *n, uint32_t count)
{
    pthread_mutex_lock(&iv.lock);
    store(job()->rank, iv.vt[job()->rank] + 1, n, count);
    pthread_mutex_unlock(&iv.lock);
    stats_add(STAT_INTERVALS, 1);
}

void interval_vt(uint32_t *out)
{
    pthread_mutex_lock(&iv.lock);
    memcpy(out, iv.vt, (size_t)job()->nodes * sizeof *out);
    pthread_mutex_unlock(&iv.lock);
}

void interval_encode(struct buf *b, const uint32_t *their_vt, int only_node)
{
    pthread_mutex_lock(&iv.lock);
    size_t count_at = b->len;
    uint32_t count = 0;
    buf_put(b, &count, sizeof count);
    for (int j = 0; j < job()->nodes; j++) {
        if (only_node >= 0 && j != only_node)
            continue;
        struct ilog *l = &iv.log[j];
        for (size_t k = 0; k < l->n; k++) {
            struct interval *i = &l->v[k];
            if (their_vt && i->id <= their_vt[j])
                continue;
            struct wire_interval w = {.node = (uint16_t)j, .id = i->id, .count = i->count};
            buf_put(b, &w, sizeof w);
            buf_put(b, i->notices, i->count * sizeof *i->notices);
            count++;
        }
    }
    memcpy(b->p + count_at, &count, sizeof count);
    pthread_mutex_unlock(&iv.lock);
}

void interval_apply(int from, const void *data, size_t len)
{
    const unsigned char *p = data;
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_notices_check(data, len, &lim, NULL);
    if (why)
        log_fatal("node %d sent malformed write notices: %s", from, why);
    /* Well formed from here on (msgcheck.c). */
    uint32_t count;
    memcpy(&count, p, sizeof count);
    p += sizeof count;
    for (uint32_t k = 0; k < count; k++) {
        struct wire_interval w;
        memcpy(&w, p, sizeof w);
        p += sizeof w;
        /* Copied out first: the notices may sit unaligned in the message. */
        struct notice *n = malloc((w.count ? w.count : 1) * sizeof *n);
        if (!n)
            log_fatal("out of memory for write notices");
        memcpy(n, p, (size_t)w.count * sizeof *n);
        p += (size_t)w.count * sizeof *n;

        pthread_mutex_lock(&iv.lock);
        uint32_t seen = iv.vt[w.node];
        if (w.id <= seen) {
            pthread_mutex_unlock(&iv.lock);
            free(n);
            continue;
        }
        if (w.id != seen + 1)
            log_fatal("node %d passed interval %u of node %u, but interval %u is missing here; protocol error",
                      from, w.id, w.node, seen + 1);
        store(w.node, w.id, n, w.count);
        pthread_mutex_unlock(&iv.lock);
        stats_add(STAT_WRITE_NOTICES, w.count);
        if (w.node != job()->rank && !coh->apply_notices && w.count)
            log_fatal("node %d passed %u write notices; %s makes none (mixed protocols?)", w.node,
                      w.count, coherence_name());
        if (w.node != job()->rank && coh->apply_notices)
            coh->apply_notices(w.node, n, w.count);
        free(n);
    }
    if (coh->notices_applied)
        coh->notices_applied();
}

void interval_gc(void)
{
    pthread_mutex_lock(&iv.lock);
    for (int j = 0; j < job()->nodes; j++) {
        struct ilog *l = &iv.log[j];
        for (size_t k = 0; k < l->n; k++)
            free(l->v[k].notices);
        l->n = 0;
    }
    pthread_mutex_unlock(&iv.lock);
}
