/*
 * schedule.c — dividing a loop's iterations (schedule.h). Pure functions:
 * every node computes the same division from the same arguments.
 */
#include "parallel/schedule.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t sched_trip(int64_t lb, int64_t ub, int64_t st, bool is_unsigned)
{
    /* 128-bit arithmetic: ub - lb of two 64-bit values may not fit in 64. */
    __int128 lo = is_unsigned ? (__int128)(uint64_t)lb : (__int128)lb;
    __int128 hi = is_unsigned ? (__int128)(uint64_t)ub : (__int128)ub;
    if (st == 0)
        return 0;
    if (st > 0 ? hi < lo : hi > lo)
        return 0;
    __int128 span = st > 0 ? hi - lo : lo - hi;
    __int128 step = st > 0 ? (__int128)st : -(__int128)st;
    return (uint64_t)(span / step + 1);
}

uint64_t sched_static_block(uint64_t trip, int tid, int n, uint64_t *first)
{
    uint64_t small = trip / (uint64_t)n, extras = trip % (uint64_t)n;
    uint64_t t = (uint64_t)tid;
    *first = t * small + (t < extras ? t : extras);
    return small + (t < extras ? 1 : 0);
}

bool sched_static_chunked_has_last(uint64_t trip, uint64_t chunk, int tid, int n)
{
    if (trip == 0)
        return false;
    uint64_t last_chunk = (trip - 1) / chunk;
    return last_chunk % (uint64_t)n == (uint64_t)tid;
}

uint64_t sched_guided_chunk(uint64_t remaining, int n, uint64_t min_chunk)
{
    /* As libomp's guided_iterative and guided_simd: half an even share of
     * what is left, rounded up to a multiple of the chunk (schedule(simd:
     * guided) needs whole simd widths; for plain guided any size of at
     * least the chunk is right), large chunks first, shrinking as the
     * loop ends; once fewer than 2 n (chunk + 1) iterations are left,
     * chunks of exactly the chunk. */
    uint64_t c = min_chunk ? min_chunk : 1;
    if (remaining >= 2 * (uint64_t)n * (c + 1)) {
        uint64_t share = (remaining + 2 * (uint64_t)n - 1) / (2 * (uint64_t)n);
        c = (share + c - 1) / c * c;
    }
    return c < remaining ? c : remaining;
}

/* Blocks 0 .. last of a split by weight, in order (into counts[] when
 * given): returns block last's size, its first iteration in *first.
 * Cumulative rounding: block i ends at round(trip * (w0+..+wi) / total),
 * so the sizes always add up to trip and no block drifts by more than
 * one iteration from its share. */
static uint64_t split_walk(uint64_t trip, int n, const double *weight, int last,
                           uint64_t *counts, uint64_t *first)
{
    double total = 0;
    for (int i = 0; i < n; i++)
        total += weight[i];
    double acc = 0;
    uint64_t start = 0, end = 0;
    for (int i = 0; i <= last; i++) {
        start = end;
        acc += weight[i];
        end = i == n - 1 ? trip : (uint64_t)((double)trip * acc / total + 0.5);
        if (end < start)
            end = start;
        if (end > trip)
            end = trip;
        if (counts)
            counts[i] = end - start;
    }
    *first = start;
    return end - start;
}

void sched_split_by_weight(uint64_t trip, int n, const double *weight, uint64_t *counts)
{
    uint64_t first;
    split_walk(trip, n, weight, n - 1, counts, &first);
}

uint64_t sched_weight_block(uint64_t trip, int n, const double *weight, int tid, uint64_t *first)
{
    return split_walk(trip, n, weight, tid, NULL, first);
}

static const char *const kind_names[] = {
    [SCHED_STATIC] = "static", [SCHED_DYNAMIC] = "dynamic", [SCHED_GUIDED] = "guided",
    [SCHED_AUTO] = "auto",     [SCHED_PROFILED] = "profiled",
};

const char *sched_kind_name(enum sched_kind kind)
{
    if ((unsigned)kind < sizeof kind_names / sizeof kind_names[0] && kind_names[kind])
        return kind_names[kind];
    return "unknown";
}

/* A non-negative decimal number (at most 2^62), surrounded by blanks. */
static int parse_count(const char *s, size_t len, int64_t *out)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (!len || len > 19)
        return -EINVAL;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    if (v > ((int64_t)1 << 62))
        return -EINVAL;
    *out = v;
    return 0;
}

int sched_parse(const char *text, struct sched_spec *out, char *err, unsigned errlen)
{
    memset(out, 0, sizeof *out);
    if (!text) {
        snprintf(err, errlen, "no schedule given");
        return -EINVAL;
    }
    const char *p = text;
    const char *colon = strchr(p, ':');
    if (colon) {
        size_t mlen = (size_t)(colon - p);
        while (mlen && isspace((unsigned char)*p))
            p++, mlen--;
        while (mlen && isspace((unsigned char)p[mlen - 1]))
            mlen--;
        if (!((mlen == 9 && !strncasecmp(p, "monotonic", 9)) ||
              (mlen == 12 && !strncasecmp(p, "nonmonotonic", 12)))) {
            snprintf(err, errlen, "'%s': the modifier must be monotonic or nonmonotonic", text);
            return -EINVAL;
        }
        out->monotonic = mlen == 9;
        p = colon + 1;
    }
    /* The kind, then up to three comma-separated numbers. */
    const char *fields[5];
    size_t lens[5];
    int nf = 0;
    const char *start = p;
    for (;;) {
        const char *comma = strchr(start, ',');
        size_t len = comma ? (size_t)(comma - start) : strlen(start);
        if (nf == 5) {
            snprintf(err, errlen, "'%s': too many fields", text);
            return -EINVAL;
        }
        fields[nf] = start;
        lens[nf++] = len;
        if (!comma)
            break;
        start = comma + 1;
    }
    const char *k = fields[0];
    size_t klen = lens[0];
    while (klen && isspace((unsigned char)*k))
        k++, klen--;
    while (klen && isspace((unsigned char)k[klen - 1]))
        klen--;
    enum sched_kind kind = 0;
    for (unsigned i = 1; i < sizeof kind_names / sizeof kind_names[0]; i++)
        if (strlen(kind_names[i]) == klen && !strncasecmp(k, kind_names[i], klen))
            kind = (enum sched_kind)i;
    if (!kind) {
        snprintf(err, errlen, "'%s': the kind must be static, dynamic, guided, auto or profiled",
                 text);
        return -EINVAL;
    }
    int max_numbers = kind == SCHED_PROFILED ? 3 : kind == SCHED_AUTO ? 0 : 1;
    if (nf - 1 > max_numbers) {
        snprintf(err, errlen, "'%s': %s takes at most %d number%s", text, kind_names[kind],
                 max_numbers, max_numbers == 1 ? "" : "s");
        return -EINVAL;
    }
    int64_t v[3] = {0, 0, 0};
    for (int i = 1; i < nf; i++)
        if (parse_count(fields[i], lens[i], &v[i - 1])) {
            snprintf(err, errlen, "'%s': field %d is not a non-negative number", text, i + 1);
            return -EINVAL;
        }
    if (kind != SCHED_PROFILED && nf > 1 && v[0] == 0) {
        snprintf(err, errlen, "'%s': the chunk size must be at least 1", text);
        return -EINVAL;
    }
    out->kind = kind;
    out->chunk = v[0];
    out->eval_size = v[1];
    out->eval_skip = v[2];
    return 0;
}

int sched_parse_static(const char *text, struct sched_spec *out, char *err, unsigned errlen)
{
    if (sched_parse(text, out, err, errlen))
        return -EINVAL;
    if (out->kind != SCHED_STATIC && out->kind != SCHED_PROFILED) {
        snprintf(err, errlen, "'%s': static loops may be divided static or profiled", text);
        return -EINVAL;
    }
    return 0;
}
