/*
 * diff.c — twins and byte-exact run-length diffs (TreadMarks, HLRC).
 *
 * What a diff must carry: in C11, C++11, OpenMP and POSIX every byte (each
 * char, bool, int8_t, each struct member that is not a bit-field) is its own
 * memory location, and two nodes writing different bytes of one word is a
 * race-free program entitled to both writes. A diff therefore applies
 * exactly the bytes its writer changed: applying a stale neighbour, even a
 * byte of the same word, would erase another writer's change to it.
 * TreadMarks and HLRC diffed whole words and assumed word-aligned data;
 * dsm diffs words (the runs stay long and cheap to find) and carries a byte
 * mask for every run in which some word changed only in part.
 *
 * Encoding (all header fields little-endian, no alignment anywhere):
 *
 *     diff := run*                      the empty diff (0 bytes): page unchanged
 *     run  := u16 offset                index of the run's first 32-bit word
 *             u16 count | MASKED        number of words, 1 .. 16384 (bits 0-14);
 *                                       bit 15 (MASKED): a byte mask follows
 *             u8  mask[(count + 1) / 2] if MASKED: 4 bits a word, the run's
 *                                       first word in the low nibble of
 *                                       mask[0]; bit j: byte j was written
 *             u32 word[count]           the new contents, copied verbatim
 *
 * A run covers words [offset, offset + count) of the page. Runs are in
 * ascending order and do not overlap (offset >= previous offset + count);
 * apply rejects anything else, so a diff has one meaning whatever order it is
 * read in. An unmasked run writes all its bytes; a masked run writes the
 * bytes its mask names and leaves the others (the writer's unchanged, maybe
 * stale, copies) alone. The words themselves are raw page bytes: nodes of
 * one job share the byte order, and the words are not interpreted. Offsets
 * are 16-bit, so a page holds at most 65536 words; the design limits pages
 * to 64 KiB (16384 words), which also keeps every count within 15 bits.
 *
 * No run merging across equal words: a run carries exactly the words this
 * writer changed, for the reason above (covering an equal word to save a
 * header would ship the writer's stale copy of it).
 *
 * Size bound: runs are separated by at least one equal word, so a diff of R
 * runs carrying C words obeys C + R - 1 <= W (W words in the page); a run
 * of c words costs at most 4 + 4c + (c + 1) / 2 bytes, so the diff is at
 * most 4.5 (C + R) <= 4.5 (W + 1) bytes: page_size + page_size / 8 + 4.5.
 * Words that change in all four bytes (ints, floats, doubles, pointers
 * written whole) make unmasked runs of exactly the old format's size.
 *
 * Speed: the page is compared in 64-byte blocks; each yields a 16-bit mask
 * of the words that differ (SSE2: four word compares and one movemask, no
 * branches per word); in a block where words changed, four byte compares
 * more tell which changed only in part. A block whose mask neither starts nor
 * ends a run (all equal, or all different inside a run) costs a test;
 * elsewhere the runs are found with count-trailing-zeros on the mask, so
 * scattered changes do not pay a mispredicted branch per word. A masked
 * run's mask is the block's byte compares again (bit 4i + j of a block's
 * 64-bit byte mask is byte j of word i: the mask's nibbles), or for a run
 * of one or two words a few bit operations on their XOR, out of line from
 * the scan. Short runs are copied with fixed-size moves; masked runs
 * stretch of named bytes by stretch, never touching an unnamed byte.
 * Neither direction allocates.
 * bench/diff_speed measures both directions with words changed whole and
 * in one byte.
 */
#include "mem/diff.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define WORD        4u                /* run granularity in bytes */
#define BLOCK       64u               /* compare granularity in bytes */
#define BLOCK_WORDS (BLOCK / WORD)
#define RUN_HEADER  4u                /* u16 offset + u16 count */
#define RUN_MASKED  0x8000u           /* count's flag: a byte mask follows */

static inline unsigned get16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static int page_size_ok(size_t page_size)
{
    return page_size >= BLOCK && page_size <= MEM_DIFF_MAX_PAGE && page_size % BLOCK == 0;
}

/* Loads and stores through memcpy: no alignment or aliasing assumptions. */
static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t load32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Bit i set when word i of the 64-byte block differs from the twin (the
 * return value), and, in *part, when it differs in some bytes but not all
 * four. An unchanged block (most of a page) costs what a word compare
 * does: four compares, three packs and a movemask; the bytes are looked
 * at only in blocks that changed. */
static inline unsigned block_words(const unsigned char *a, const unsigned char *b, unsigned *part)
{
#if defined(__SSE2__)
    __m128i a0 = _mm_loadu_si128((const __m128i *)a), b0 = _mm_loadu_si128((const __m128i *)b);
    __m128i a1 = _mm_loadu_si128((const __m128i *)(a + 16));
    __m128i b1 = _mm_loadu_si128((const __m128i *)(b + 16));
    __m128i a2 = _mm_loadu_si128((const __m128i *)(a + 32));
    __m128i b2 = _mm_loadu_si128((const __m128i *)(b + 32));
    __m128i a3 = _mm_loadu_si128((const __m128i *)(a + 48));
    __m128i b3 = _mm_loadu_si128((const __m128i *)(b + 48));
    /* -1/0 per word, narrowed to one byte per word in word order */
    __m128i same = _mm_packs_epi16(_mm_packs_epi32(_mm_cmpeq_epi32(a0, b0), _mm_cmpeq_epi32(a1, b1)),
                                   _mm_packs_epi32(_mm_cmpeq_epi32(a2, b2), _mm_cmpeq_epi32(a3, b3)));
    unsigned any = (unsigned)_mm_movemask_epi8(same) ^ 0xFFFFu;
    if (!any) {
        *part = 0;
        return 0;
    }
    /* a word with an equal byte: its byte compares are not all zero */
    __m128i zero = _mm_setzero_si128();
    __m128i e0 = _mm_cmpeq_epi32(_mm_cmpeq_epi8(a0, b0), zero);
    __m128i e1 = _mm_cmpeq_epi32(_mm_cmpeq_epi8(a1, b1), zero);
    __m128i e2 = _mm_cmpeq_epi32(_mm_cmpeq_epi8(a2, b2), zero);
    __m128i e3 = _mm_cmpeq_epi32(_mm_cmpeq_epi8(a3, b3), zero);
    __m128i whole = _mm_packs_epi16(_mm_packs_epi32(e0, e1), _mm_packs_epi32(e2, e3));
    *part = any & ~(unsigned)_mm_movemask_epi8(whole);
    return any;
#else
    unsigned any = 0, p = 0;
    for (unsigned i = 0; i < BLOCK_WORDS; i++) {
        unsigned n = 0;
        for (unsigned j = 0; j < WORD; j++)
            n += a[i * WORD + j] != b[i * WORD + j];
        any |= (unsigned)(n != 0) << i;
        p |= (unsigned)(n != 0 && n != WORD) << i;
    }
    *part = p;
    return any;
#endif
}

/* Bit 4i + j set when byte j of word i of the 64-byte block differs from
 * the twin (bit k: byte k of the block): the block's part of a run's mask. */
static inline uint64_t block_bytes(const unsigned char *a, const unsigned char *b)
{
#if defined(__SSE2__)
    uint64_t eq = 0;
    for (unsigned i = 0; i < 4; i++) {
        __m128i e = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + 16 * i)),
                                   _mm_loadu_si128((const __m128i *)(b + 16 * i)));
        eq |= (uint64_t)(unsigned)_mm_movemask_epi8(e) << (16 * i);
    }
    return ~eq;
#else
    uint64_t m = 0;
    for (unsigned i = 0; i < BLOCK; i++)
        m |= (uint64_t)(a[i] != b[i]) << i;
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

/* Copies len (1 .. 64) bytes with at most two moves, overlapping ones
 * inside [d, d + len): nothing outside the range is read or written. */
static inline void copy_bytes(unsigned char *d, const unsigned char *s, size_t len)
{
    if (len >= 16) {
        memcpy(d, s, len);
    } else if (len >= 8) {
        memcpy(d, s, 8);
        memcpy(d + len - 8, s + len - 8, 8);
    } else if (len >= 4) {
        memcpy(d, s, 4);
        memcpy(d + len - 4, s + len - 4, 4);
    } else if (len >= 2) {
        memcpy(d, s, 2);
        memcpy(d + len - 2, s + len - 2, 2);
    } else {
        *d = *s;
    }
}

/* Writes the bytes of a masked run's `count` words from s into d that its
 * mask names, and no other byte: d may be a page its own node's program
 * is writing while the diff is applied (a home's page, an erc-upd
 * member's copy, through the system view), and a neighbouring byte read
 * and written back — a blend of whole words — would undo such a write
 * made in between (conf.own_bytes_under_diffs). The mask is a bitmap of
 * the run's bytes (bit k of the little-endian mask: byte k), so each
 * stretch of named bytes is found with count-trailing-zeros, 64 bytes at
 * a time, and copied with at most two moves; 64 named bytes are one copy.
 * Bits past the run (the last nibble of an odd count) are ignored. */
static void blend_run(unsigned char *d, const unsigned char *s, const unsigned char *mask,
                      size_t count)
{
    size_t bytes = count * WORD;
    for (size_t base = 0; base < bytes; base += 64) {
        size_t n = bytes - base < 64 ? bytes - base : 64;
        uint64_t m = 0;
        for (size_t i = 0; i * 8 < n; i++)
            m |= (uint64_t)mask[base / 8 + i] << (8 * i);
        if (n < 64)
            m &= (1ull << n) - 1;
        if (m == ~0ull) {
            memcpy(d + base, s + base, 64);
            continue;
        }
        while (m) {
            unsigned at = (unsigned)__builtin_ctzll(m);
            uint64_t clear = ~(m >> at);
            unsigned len = clear ? (unsigned)__builtin_ctzll(clear) : 64 - at;
            copy_bytes(d + base + at, s + base + at, len);
            m = at + len >= 64 ? 0 : m & (~0ull << (at + len));
        }
    }
}

/* Store v's bytes at o, least significant first. */
static inline void store_le64(unsigned char *o, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(o, &v, 8);
#else
    for (unsigned i = 0; i < 8; i++)
        o[i] = (unsigned char)(v >> (8 * i));
#endif
}

static inline void store_le32(unsigned char *o, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(o, &v, 4);
#else
    for (unsigned i = 0; i < 4; i++)
        o[i] = (unsigned char)(v >> (8 * i));
#endif
}

/* Writes the byte mask of words [start, end) of page p against twin t to
 * o, two words a byte: each block's part of it is block_bytes' nibbles for
 * the run's words, shifted by half a byte when the run began at an odd
 * word (the nibble left over waits for the next block's first). */
static void put_mask(unsigned char *o, const unsigned char *p, const unsigned char *t,
                     size_t start, size_t end)
{
    unsigned pending = 0, half = 0; /* a nibble waiting for its byte's other half */
    for (size_t w = start; w < end;) {
        size_t block = w & ~(size_t)(BLOCK_WORDS - 1), in = w - block;
        size_t n = BLOCK_WORDS - in < end - w ? BLOCK_WORDS - in : end - w;
        uint64_t m = block_bytes(p + block * WORD, t + block * WORD) >> (4 * in);
        w += n;
        if (n == BLOCK_WORDS) { /* a whole block: eight bytes at once */
            store_le64(o, half ? (uint64_t)pending | m << 4 : m);
            o += 8;
            pending = (unsigned)(m >> 60);
            continue;
        }
        if (half) {
            *o++ = (unsigned char)(pending | (unsigned)(m & 0xF) << 4);
            m >>= 4;
            n--;
            half = 0;
        }
        for (; n >= 2; n -= 2, m >>= 8)
            *o++ = (unsigned char)m;
        if (n) {
            pending = (unsigned)(m & 0xF);
            half = 1;
        }
    }
    if (half)
        *o = (unsigned char)pending;
}

/* The mask of a run of one or two words (most runs of scattered writes),
 * without a block compare: bit j set when byte j of the words differs. */
static inline unsigned char small_mask(const unsigned char *p, const unsigned char *t, size_t count)
{
    uint64_t x = count == 2 ? load64(p) ^ load64(t) : (uint64_t)(load32(p) ^ load32(t));
    /* the top bit of each byte: set when the byte is not zero */
    uint64_t top = (((x & 0x7F7F7F7F7F7F7F7Full) + 0x7F7F7F7F7F7F7F7Full) | x) & 0x8080808080808080ull;
    /* gathered into the top byte: byte j's bit lands on bit 56 + j */
    return (unsigned char)(((top >> 7) * 0x0102040810204080ull) >> 56);
}

static inline size_t mask_bytes(size_t count)
{
    return (count + 1) / 2;
}

/* Appends the run of words [start, end) of page p to the diff o of length
 * len. Returns the new length, or -ENOSPC. */
static inline long put_run(unsigned char *o, size_t len, size_t cap, const unsigned char *p,
                           size_t start, size_t end)
{
    size_t count = end - start, bytes = count * WORD;
    if (cap - len < RUN_HEADER + bytes)
        return -ENOSPC;
    store_le32(o + len, (uint32_t)start | (uint32_t)count << 16);
    copy_run(o + len + RUN_HEADER, p + start * WORD, bytes);
    return (long)(len + RUN_HEADER + bytes);
}

/* put_run for a run with a word changed in part: its byte mask (twin t)
 * goes between the header and the words. Out of line: the loop that
 * finds runs stays small where words are written whole. */
__attribute__((noinline)) static long put_masked_run(unsigned char *o, size_t len, size_t cap,
                                                     const unsigned char *p, const unsigned char *t,
                                                     size_t start, size_t end)
{
    size_t count = end - start, bytes = count * WORD, mbytes = mask_bytes(count);
    if (cap - len < RUN_HEADER + mbytes + bytes)
        return -ENOSPC;
    store_le32(o + len, (uint32_t)start | (uint32_t)(count | RUN_MASKED) << 16);
    len += RUN_HEADER;
    if (count <= 2)
        o[len] = small_mask(p + start * WORD, t + start * WORD, count);
    else
        put_mask(o + len, p, t, start, end);
    copy_run(o + len + mbytes, p + start * WORD, bytes);
    return (long)(len + mbytes + bytes);
}

size_t mem_diff_bound(size_t page_size)
{
    return page_size + page_size / 8 + 2 * RUN_HEADER;
}

long mem_diff_create(const void *page, const void *twin, size_t page_size, void *out, size_t cap)
{
    const unsigned char *p = page, *t = twin;
    size_t n = page_size / WORD, start = 0;
    long len = 0;
    int open = 0;   /* a run started in an earlier block and has not ended */
    int masked = 0; /* the open run has a word changed in part */

    if (!page_size_ok(page_size))
        return -EINVAL;
    for (size_t w = 0; w < n; w += BLOCK_WORDS) {
        unsigned part, m = block_words(p + w * WORD, t + w * WORD, &part);
        if (m == (open ? 0xFFFFu : 0u)) {
            masked |= part != 0;
            continue; /* no run starts or ends in this block */
        }
        unsigned pos = 0, rest;
        for (;;) {
            if (!open) {
                if (!(rest = m >> pos))
                    break;
                pos += (unsigned)__builtin_ctz(rest);
                start = w + pos;
                open = 1;
            }
            if (!(rest = (~m & 0xFFFFu) >> pos)) {
                masked |= (part >> pos) != 0;
                break; /* the run goes on into the next block */
            }
            unsigned end = pos + (unsigned)__builtin_ctz(rest);
            if (part) /* (rare where words are written whole) */
                masked |= ((part >> pos) & ((1u << (end - pos)) - 1)) != 0;
            pos = end;
            len = masked ? put_masked_run(out, (size_t)len, cap, p, t, start, w + pos)
                         : put_run(out, (size_t)len, cap, p, start, w + pos);
            if (len < 0)
                return len;
            open = masked = 0;
        }
    }
    if (open)
        len = masked ? put_masked_run(out, (size_t)len, cap, p, t, start, n)
                     : put_run(out, (size_t)len, cap, p, start, n);
    return len;
}

/* Walks the runs of an untrusted diff for a page of `nwords` words, checking
 * every rule of the format, and writes each run into `dst` once it is known
 * to be good (nothing when dst is NULL). One pass: the walk is a chain of
 * dependent loads (each header says where the next one is), and walking it
 * twice, to check before copying anything, made applying a scattered diff
 * nearly twice as slow. Returns the payload in bytes or -EINVAL. */
static long diff_walk(unsigned char *dst, const unsigned char *d, size_t len, size_t nwords)
{
    size_t pos = 0, next = 0, payload = 0;

    while (pos < len) {
        if (len - pos < RUN_HEADER)
            return -EINVAL; /* truncated header */
        size_t off = get16(d + pos), count = get16(d + pos + 2), mbytes = 0;
        pos += RUN_HEADER;
        if (count & RUN_MASKED) {
            count &= ~(size_t)RUN_MASKED;
            mbytes = mask_bytes(count);
            if (len - pos < mbytes)
                return -EINVAL; /* truncated mask */
        }
        if (count == 0 || off < next || off >= nwords || count > nwords - off)
            return -EINVAL; /* empty, out of order, overlapping or outside */
        if ((len - pos - mbytes) / WORD < count)
            return -EINVAL; /* truncated words */
        if (dst) {
            if (mbytes)
                blend_run(dst + off * WORD, d + pos + mbytes, d + pos, count);
            else
                copy_run(dst + off * WORD, d + pos, count * WORD);
        }
        pos += mbytes + count * WORD;
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
