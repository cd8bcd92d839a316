/*
 * diff.c — twins and word-granularity run-length diffs (TreadMarks, HLRC).
 *
 * Encoding (all header fields little-endian, no alignment anywhere):
 *
 *     diff := run*                      the empty diff (0 bytes): page unchanged
 *     run  := u16 offset                index of the run's first 32-bit word
 *             u16 count                 number of words, 1 .. 16384
 *             u32 word[count]           the new contents, copied verbatim
 *
 * A run covers words [offset, offset + count) of the page. Runs are in
 * ascending order and do not overlap (offset >= previous offset + count);
 * apply rejects anything else, so a diff has one meaning whatever order it is
 * read in. The words themselves are raw page bytes: nodes of one job share
 * the byte order, and the words are not interpreted. Offsets are 16-bit, so a
 * page holds at most 65536 words; the design limits pages to 64 KiB (16384
 * words), which also keeps every count in range.
 *
 * No run merging across equal words: a run carries exactly the words this
 * writer changed. Covering an unchanged word to save a header (an equal word
 * costs 4 bytes, as does a header) would ship the writer's stale copy of that
 * word, and applied at the home it would overwrite another writer's change to
 * it: concurrent writers of interleaved words (false sharing, the case
 * multiple-writer protocols exist for) would lose updates.
 *
 * Size bound: runs are separated by at least one equal word, so a diff of R
 * runs carrying C words obeys C + R - 1 <= W (W words in the page) and its
 * size is 4(C + R) <= 4W + 4: at most page_size + 4 bytes, reached by one run
 * covering the whole page (alternating words give exactly page_size).
 *
 * Speed: the page is compared in 64-byte blocks; each yields a 16-bit mask
 * of the words that differ (SSE2: four compares and one movemask, no
 * branches per word). A block whose mask neither starts nor ends a run (all
 * equal, or all different inside a run) costs one test; elsewhere the runs
 * are found with count-trailing-zeros on the mask, so scattered changes do
 * not pay a mispredicted branch per word. Short runs are copied with
 * fixed-size moves. Neither direction allocates.
 */
#include "mem/diff.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define WORD        4u                /* diff granularity in bytes */
#define BLOCK       64u               /* compare granularity in bytes */
#define BLOCK_WORDS (BLOCK / WORD)
#define RUN_HEADER  4u                /* u16 offset + u16 count */

static inline unsigned get16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static inline void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static int page_size_ok(size_t page_size)
{
    return page_size >= BLOCK && page_size <= MEM_DIFF_MAX_PAGE && page_size % BLOCK == 0;
}

#if !defined(__SSE2__)
/* Loads through memcpy: no alignment or aliasing assumptions, one mov. */
static inline uint32_t load32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
#endif

/* Bit i set when word i of the 64-byte block differs from the twin. */
static inline unsigned block_mask(const unsigned char *a, const unsigned char *b)
{
#if defined(__SSE2__)
    __m128i e0 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)a),
                                 _mm_loadu_si128((const __m128i *)b));
    __m128i e1 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(a + 16)),
                                 _mm_loadu_si128((const __m128i *)(b + 16)));
    __m128i e2 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(a + 32)),
                                 _mm_loadu_si128((const __m128i *)(b + 32)));
    __m128i e3 = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(a + 48)),
                                 _mm_loadu_si128((const __m128i *)(b + 48)));
    /* -1/0 per word, narrowed to one byte per word in word order */
    __m128i eq = _mm_packs_epi16(_mm_packs_epi32(e0, e1), _mm_packs_epi32(e2, e3));
    return (unsigned)_mm_movemask_epi8(eq) ^ 0xFFFFu;
#else
    unsigned m = 0;
    for (unsigned i = 0; i < BLOCK_WORDS; i++)
        m |= (unsigned)(load32(a + i * WORD) != load32(b + i * WORD)) << i;
    return m;
#endif
}

/* Copies a run's words. Most runs in scattered writes are a word or two,
 * where a call to memcpy would cost more than the copy: fixed-size copies
 * of the head and the (overlapping) tail compile to plain moves. */
static inline void copy_run(unsigned char *d, const unsigned char *s, size_t bytes)
{
    if (bytes <= 8) {
        memcpy(d, s, 4);
        memcpy(d + bytes - 4, s + bytes - 4, 4);
    } else if (bytes <= 16) {
        memcpy(d, s, 8);
        memcpy(d + bytes - 8, s + bytes - 8, 8);
    } else {
        memcpy(d, s, bytes);
    }
}

/* Appends the run of words [start, end) of page p to the diff o of length
 * len. Returns the new length, or -ENOSPC. */
static inline long put_run(unsigned char *o, size_t len, size_t cap, const unsigned char *p,
                           size_t start, size_t end)
{
    size_t count = end - start, bytes = count * WORD;
    if (cap - len < RUN_HEADER + bytes)
        return -ENOSPC;
    put16(o + len, (unsigned)start);
    put16(o + len + 2, (unsigned)count);
    copy_run(o + len + RUN_HEADER, p + start * WORD, bytes);
    return (long)(len + RUN_HEADER + bytes);
}

size_t mem_diff_bound(size_t page_size)
{
    return page_size + RUN_HEADER;
}

long mem_diff_create(const void *page, const void *twin, size_t page_size, void *out, size_t cap)
{
    const unsigned char *p = page, *t = twin;
    size_t n = page_size / WORD, start = 0;
    long len = 0;
    int open = 0; /* a run started in an earlier block and has not ended */

    if (!page_size_ok(page_size))
        return -EINVAL;
    for (size_t w = 0; w < n; w += BLOCK_WORDS) {
        unsigned m = block_mask(p + w * WORD, t + w * WORD);
        if (m == (open ? 0xFFFFu : 0u))
            continue; /* no run starts or ends in this block */
        unsigned pos = 0, rest;
        for (;;) {
            if (!open) {
                if (!(rest = m >> pos))
                    break;
                pos += (unsigned)__builtin_ctz(rest);
                start = w + pos;
                open = 1;
            }
            if (!(rest = (~m & 0xFFFFu) >> pos))
                break; /* the run goes on into the next block */
            pos += (unsigned)__builtin_ctz(rest);
            if ((len = put_run(out, (size_t)len, cap, p, start, w + pos)) < 0)
                return len;
            open = 0;
        }
    }
    if (open)
        len = put_run(out, (size_t)len, cap, p, start, n);
    return len;
}

/* Walks the runs of an untrusted diff for a page of `nwords` words, checking
 * every rule of the format, and copies each run into `dst` once it is known to
 * be good (no copy when dst is NULL). One pass: the walk is a chain of
 * dependent loads (each header says where the next one is), and walking it
 * twice, to check before copying anything, made applying a scattered diff
 * nearly twice as slow. Returns the payload in bytes or -EINVAL. */
static long diff_walk(unsigned char *dst, const unsigned char *d, size_t len, size_t nwords)
{
    size_t pos = 0, next = 0, payload = 0;

    while (pos < len) {
        if (len - pos < RUN_HEADER)
            return -EINVAL; /* truncated header */
        size_t off = get16(d + pos), count = get16(d + pos + 2);
        pos += RUN_HEADER;
        if (count == 0 || off < next || off >= nwords || count > nwords - off)
            return -EINVAL; /* empty, out of order, overlapping or outside */
        if ((len - pos) / WORD < count)
            return -EINVAL; /* truncated words */
        if (dst)
            copy_run(dst + off * WORD, d + pos, count * WORD);
        pos += count * WORD;
        payload += count * WORD;
        next = off + count;
    }
    return (long)payload;
}

int mem_diff_apply(void *dst, size_t page_size, const void *diff, size_t len)
{
    if (!page_size_ok(page_size))
        return -EINVAL;
    long rc = diff_walk(dst, diff, len, page_size / WORD);
    return rc < 0 ? (int)rc : 0;
}

long mem_diff_check(const void *diff, size_t len, size_t page_size)
{
    if (!page_size_ok(page_size))
        return -EINVAL;
    return diff_walk(NULL, diff, len, page_size / WORD);
}

long mem_diff_payload(const void *diff, size_t len)
{
    return diff_walk(NULL, diff, len, MEM_DIFF_MAX_PAGE / WORD);
}

void mem_twin_copy(void *twin, const void *page, size_t page_size)
{
    memcpy(twin, page, page_size);
}
