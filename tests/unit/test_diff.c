/*
 * test_diff.c — twins and byte-exact run-length diffs: encode, apply, merge, reject.
 */
#include "check.h"
#include "mem/diff.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define MAX_PAGE   (64 * 1024)
#define MAX_DIFF   (MAX_PAGE + MAX_PAGE / 8 + 64)
#define GUARD      256
#define GUARD_BYTE 0xA5

static const size_t page_sizes[] = {4096, 8192, 16384, 65536};
#define NSIZES (sizeof page_sizes / sizeof page_sizes[0])


static void fill_random(void *buf, size_t len)
{
    unsigned char *b = buf;
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)rng();
}

static uint32_t get_word(const void *page, size_t w)
{
    uint32_t v;
    memcpy(&v, (const unsigned char *)page + w * 4, 4);
    return v;
}

static void set_word(void *page, size_t w, uint32_t v)
{
    memcpy((unsigned char *)page + w * 4, &v, 4);
}

static void flip_word(void *page, size_t w)
{
    set_word(page, w, ~get_word(page, w));
}

/* Flips one random bit of buf (one rng() per statement: the order in which
 * function arguments are evaluated is unspecified, and the tests should draw
 * the same numbers under every compiler). */
static void flip_bit(unsigned char *buf, size_t len)
{
    size_t i = rng() % len;
    buf[i] ^= (unsigned char)(1u << (rng() % 8));
}

/* Big static buffers: pages up to 64 KiB, each with room for guards. */
static unsigned char page[MAX_PAGE], twin[MAX_PAGE], copy[MAX_PAGE];
static unsigned char diff[MAX_DIFF], diff2[MAX_DIFF];
static unsigned char guarded[GUARD + MAX_PAGE + GUARD];

/* dst inside guard bytes, initialised from `from`. */
static unsigned char *guarded_page(const void *from, size_t size)
{
    memset(guarded, GUARD_BYTE, sizeof guarded);
    memcpy(guarded + GUARD, from, size);
    return guarded + GUARD;
}

static int guards_intact(size_t size)
{
    for (size_t i = 0; i < GUARD; i++)
        if (guarded[i] != GUARD_BYTE || guarded[GUARD + size + i] != GUARD_BYTE)
            return 0;
    return 1;
}

/* Encodes page against twin, checks the length against the bound and the
 * payload against the encoding, and that applying onto a fresh copy of the
 * twin reproduces page exactly. Returns the encoded length. */
static long roundtrip(size_t size)
{
    long len = mem_diff_create(page, twin, size, diff, sizeof diff);
    CHECK(len >= 0);
    if (len < 0)
        return len;
    CHECK((size_t)len <= mem_diff_bound(size));
    long payload = mem_diff_payload(diff, (size_t)len);
    CHECK(payload >= 0);
    CHECK(payload <= (long)size);
    CHECK(len == 0 || payload < len);
    CHECK_EQ(mem_diff_check(diff, (size_t)len, size), payload);
    unsigned char *dst = guarded_page(twin, size);
    CHECK_EQ(mem_diff_apply(dst, size, diff, (size_t)len), 0);
    CHECK(memcmp(dst, page, size) == 0);
    CHECK(guards_intact(size));
    return len;
}

static void test_twin_copy_is_exact(void)
{
    seed(1);
    fill_random(page, MAX_PAGE);
    memset(twin, 0, sizeof twin);
    mem_twin_copy(twin, page, 8192);
    CHECK(memcmp(twin, page, 8192) == 0);
    CHECK(twin[8192] == 0);
}

static void test_unchanged_page_gives_empty_diff(void)
{
    for (size_t i = 0; i < NSIZES; i++) {
        size_t size = page_sizes[i];
        seed(2 + i);
        fill_random(page, size);
        mem_twin_copy(twin, page, size);
        CHECK_EQ(mem_diff_create(page, twin, size, diff, sizeof diff), 0);
        CHECK_EQ(mem_diff_create(page, twin, size, NULL, 0), 0); /* no room needed */
        CHECK_EQ(mem_diff_payload(diff, 0), 0);
        unsigned char *dst = guarded_page(twin, size);
        CHECK_EQ(mem_diff_apply(dst, size, diff, 0), 0);
        CHECK(memcmp(dst, twin, size) == 0);
        CHECK(guards_intact(size));
    }
}

static void test_single_word_at_first_and_last_word(void)
{
    for (size_t i = 0; i < NSIZES; i++) {
        size_t size = page_sizes[i], n = size / 4;
        size_t where[] = {0, 1, 15, 16, n / 2, n - 17, n - 16, n - 2, n - 1};
        for (size_t k = 0; k < sizeof where / sizeof where[0]; k++) {
            seed(10 + k);
            fill_random(twin, size);
            memcpy(page, twin, size);
            flip_word(page, where[k]);
            long len = roundtrip(size);
            CHECK_EQ(len, 8); /* one header, one word */
            CHECK_EQ(mem_diff_payload(diff, (size_t)len), 4);
            /* offset field, little-endian, names the word */
            CHECK_EQ(diff[0] | diff[1] << 8, where[k]);
            CHECK_EQ(diff[2] | diff[3] << 8, 1);
        }
    }
}

static void test_every_word_changed_is_one_run_at_the_bound(void)
{
    for (size_t i = 0; i < NSIZES; i++) {
        size_t size = page_sizes[i];
        seed(20 + i);
        fill_random(twin, size);
        for (size_t w = 0; w < size / 4; w++)
            set_word(page, w, ~get_word(twin, w));
        long len = roundtrip(size);
        CHECK_EQ(len, (long)size + 4); /* whole words: no mask */
        CHECK_EQ(mem_diff_payload(diff, (size_t)len), (long)size);
        CHECK_EQ(diff[2] | diff[3] << 8, size / 4);
        /* every word changed in one byte: one masked run, the largest diff */
        memcpy(page, twin, size);
        for (size_t w = 0; w < size / 4; w++)
            page[w * 4 + w % 4] = (unsigned char)~twin[w * 4 + w % 4];
        len = roundtrip(size);
        CHECK_EQ(len, (long)(size + size / 8 + 4));
        CHECK(len <= (long)mem_diff_bound(size));
        CHECK_EQ(diff[2] | diff[3] << 8, 0x8000 | size / 4);
        CHECK_EQ(diff[4], 0x21); /* words 0 and 1: bytes 0 and 1 */
        CHECK_EQ(diff[5], 0x84); /* words 2 and 3: bytes 2 and 3 */
    }
}

/* A C11 memory location is a byte: a run of words in which some word
 * changed only in part carries a mask, and applies only the named bytes. */
static void test_byte_changes_carry_a_mask(void)
{
    for (size_t i = 0; i < NSIZES; i++) {
        size_t size = page_sizes[i], n = size / 4;
        size_t where[] = {0, 1, 15, 16, 17, n / 2 + 1, n - 17, n - 16, n - 2, n - 1};
        for (size_t k = 0; k < sizeof where / sizeof where[0]; k++) {
            for (unsigned b = 0; b < 4; b++) {
                seed(300 + k * 4 + b);
                fill_random(twin, size);
                memcpy(page, twin, size);
                page[where[k] * 4 + b] ^= 0x5A;
                long len = roundtrip(size);
                CHECK_EQ(len, 9); /* header, one mask byte, one word */
                CHECK_EQ(diff[0] | diff[1] << 8, where[k]);
                CHECK_EQ(diff[2] | diff[3] << 8, 0x8001);
                CHECK_EQ(diff[4], 1u << b);
                /* the other three bytes are another writer's, and stay */
                unsigned char *dst = guarded_page(twin, size);
                for (unsigned o = 0; o < 4; o++)
                    if (o != b)
                        dst[where[k] * 4 + o] = (unsigned char)(0xC0 + o);
                CHECK_EQ(mem_diff_apply(dst, size, diff, (size_t)len), 0);
                for (unsigned o = 0; o < 4; o++)
                    CHECK_EQ(dst[where[k] * 4 + o],
                             o == b ? page[where[k] * 4 + o] : (unsigned char)(0xC0 + o));
                CHECK(guards_intact(size));
            }
        }
    }
}

/* A run whose words change in part across blocks, starting at an odd word
 * (its mask's nibbles are not the block mask's bytes). */
static void test_masked_runs_across_blocks(void)
{
    for (size_t start = 0; start < 40; start++) {
        for (size_t count = 1; count < 50; count += 3) {
            seed(500 + start * 64 + count);
            fill_random(twin, 8192);
            memcpy(page, twin, 8192);
            for (size_t w = start; w < start + count; w++)
                page[w * 4 + rng() % 4] ^= (unsigned char)(1 + rng() % 255);
            if (rng() % 2)
                set_word(page, start + rng() % count, ~get_word(twin, start));
            long len = roundtrip(8192);
            CHECK_EQ(diff[0] | diff[1] << 8, start);
            CHECK_EQ((diff[2] | diff[3] << 8) & 0x7FFF, count);
            int part = 0; /* some word of the run changed in only some bytes */
            for (size_t w = start; w < start + count; w++)
                for (unsigned b = 0; b < 4; b++)
                    part |= page[w * 4 + b] == twin[w * 4 + b];
            CHECK_EQ(len, (long)(4 + (part ? (count + 1) / 2 : 0) + 4 * count));
            CHECK_EQ((diff[3] & 0x80) != 0, part);
        }
    }
}

/* Writers of disjoint bytes (chars, bools, shorts, unaligned values) merge
 * in either order: the case word diffs lost. */
static void test_two_writers_of_disjoint_bytes_merge_in_either_order(void)
{
    static unsigned char orig[MAX_PAGE], a[MAX_PAGE], b[MAX_PAGE], merged[MAX_PAGE];
    for (uint64_t s = 0; s < 200; s++) {
        seed(3000 + s);
        size_t size = page_sizes[s % NSIZES];
        fill_random(orig, size);
        memcpy(a, orig, size);
        memcpy(b, orig, size);
        memcpy(merged, orig, size);
        /* pieces of 1, 2, 3, 8 or 16 bytes at any offset go to a, b or nobody */
        static const size_t widths[] = {1, 2, 3, 8, 16};
        size_t width = widths[s % 5];
        for (size_t at = rng() % width; at + width <= size; at += width) {
            unsigned who = (unsigned)(rng() % 3);
            for (size_t k = at; k < at + width && who < 2; k++) {
                unsigned char v = (unsigned char)rng();
                (who ? b : a)[k] = v;
                merged[k] = v;
            }
        }
        long la = mem_diff_create(a, orig, size, diff, sizeof diff);
        long lb = mem_diff_create(b, orig, size, diff2, sizeof diff2);
        CHECK(la >= 0 && lb >= 0 && (size_t)la <= mem_diff_bound(size) &&
              (size_t)lb <= mem_diff_bound(size));
        if (la < 0 || lb < 0)
            continue;
        unsigned char *dst = guarded_page(orig, size);
        CHECK_EQ(mem_diff_apply(dst, size, diff, (size_t)la), 0);
        CHECK_EQ(mem_diff_apply(dst, size, diff2, (size_t)lb), 0);
        CHECK(memcmp(dst, merged, size) == 0);
        CHECK(guards_intact(size));
        dst = guarded_page(orig, size);
        CHECK_EQ(mem_diff_apply(dst, size, diff2, (size_t)lb), 0);
        CHECK_EQ(mem_diff_apply(dst, size, diff, (size_t)la), 0);
        CHECK(memcmp(dst, merged, size) == 0);
        CHECK(guards_intact(size));
    }
}

static void test_alternating_words_stay_separate_runs(void)
{
    for (size_t i = 0; i < NSIZES; i++) {
        size_t size = page_sizes[i], n = size / 4;
        seed(30 + i);
        fill_random(twin, size);
        memcpy(page, twin, size);
        for (size_t w = 0; w < n; w += 2)
            flip_word(page, w);
        /* words 0, 2, ..., n-2: n/2 runs of one word, 8 bytes each */
        long len = roundtrip(size);
        CHECK_EQ(len, (long)size);
        CHECK_EQ(mem_diff_payload(diff, (size_t)len), (long)size / 2);
        CHECK_EQ(diff[8] | diff[9] << 8, 2);
        CHECK_EQ(diff[10] | diff[11] << 8, 1);
        /* odd words: 1, 3, ..., n-1 */
        memcpy(page, twin, size);
        for (size_t w = 1; w < n; w += 2)
            flip_word(page, w);
        len = roundtrip(size);
        CHECK_EQ(len, (long)size);
        CHECK_EQ(diff[0] | diff[1] << 8, 1);
        CHECK_EQ(diff[len - 8] | diff[len - 7] << 8, n - 1);
    }
}

/* An unchanged word between two changed ones is never carried: the home may
 * hold another writer's value for it (false sharing). */
static void test_unchanged_gap_word_is_not_carried(void)
{
    seed(40);
    fill_random(twin, 4096);
    memcpy(page, twin, 4096);
    flip_word(page, 100);
    flip_word(page, 102);
    long len = roundtrip(4096);
    CHECK_EQ(len, 16);
    CHECK_EQ(mem_diff_payload(diff, (size_t)len), 8);
    CHECK_EQ(diff[8] | diff[9] << 8, 102);
    /* another writer's value for word 101 survives this diff */
    unsigned char *dst = guarded_page(twin, 4096);
    set_word(dst, 101, 0xdeadbeef);
    CHECK_EQ(mem_diff_apply(dst, 4096, diff, (size_t)len), 0);
    CHECK_EQ(get_word(dst, 101), 0xdeadbeef);
    CHECK_EQ(get_word(dst, 100), get_word(page, 100));
    CHECK_EQ(get_word(dst, 102), get_word(page, 102));
    /* adjacent changed words form one run */
    flip_word(page, 101);
    len = roundtrip(4096);
    CHECK_EQ(len, 16);
    CHECK_EQ(diff[2] | diff[3] << 8, 3);
}

static void test_random_changes_roundtrip(void)
{
    for (uint64_t s = 0; s < 400; s++) {
        seed(1000 + s);
        size_t size = page_sizes[rng() % NSIZES], n = size / 4;
        fill_random(twin, size);
        memcpy(page, twin, size);
        /* densities from one word to everything; sometimes clustered */
        unsigned mode = (unsigned)(rng() % 4);
        size_t changes = mode == 0 ? 1 + rng() % 4 : mode == 1 ? rng() % (n / 8) : rng() % (2 * n);
        for (size_t c = 0; c < changes; c++) {
            size_t w = rng() % n;
            if (mode == 3) { /* a burst */
                size_t l = 1 + rng() % 64;
                for (size_t k = w; k < w + l && k < n; k++)
                    set_word(page, k, (uint32_t)rng());
                c += l;
            } else {
                set_word(page, w, (uint32_t)rng());
            }
        }
        /* sometimes change bytes and pieces of any width and alignment */
        if (rng() % 2)
            flip_bit(page, size);
        if (mode != 0 && rng() % 2) {
            size_t pieces = rng() % (n / 4);
            for (size_t c = 0; c < pieces; c++) {
                size_t width = 1 + rng() % 16, at = rng() % (size - width);
                for (size_t k = at; k < at + width; k++)
                    page[k] = rng() % 4 ? (unsigned char)rng() : twin[k];
            }
        }
        long len = roundtrip(size);
        if (memcmp(page, twin, size) == 0)
            CHECK_EQ(len, 0);
        else
            CHECK(len > 0);
    }
}

static void test_two_writers_of_disjoint_words_merge_in_either_order(void)
{
    static unsigned char orig[MAX_PAGE], a[MAX_PAGE], b[MAX_PAGE], merged[MAX_PAGE];
    for (uint64_t s = 0; s < 100; s++) {
        seed(2000 + s);
        size_t size = page_sizes[s % NSIZES], n = size / 4;
        fill_random(orig, size);
        memcpy(a, orig, size);
        memcpy(b, orig, size);
        memcpy(merged, orig, size);
        /* each word goes to writer a, writer b or nobody; interleaved finely
         * so runs of one writer straddle the other's words */
        for (size_t w = 0; w < n; w++) {
            unsigned who = (unsigned)(rng() % (s % 2 ? 3 : 12));
            uint32_t v = (uint32_t)rng();
            if (who == 0) {
                set_word(a, w, v);
                set_word(merged, w, v);
            } else if (who == 1) {
                set_word(b, w, v);
                set_word(merged, w, v);
            }
        }
        long la = mem_diff_create(a, orig, size, diff, sizeof diff);
        long lb = mem_diff_create(b, orig, size, diff2, sizeof diff2);
        CHECK(la >= 0 && lb >= 0);
        if (la < 0 || lb < 0)
            continue;
        unsigned char *dst = guarded_page(orig, size);
        CHECK_EQ(mem_diff_apply(dst, size, diff, (size_t)la), 0);
        CHECK_EQ(mem_diff_apply(dst, size, diff2, (size_t)lb), 0);
        CHECK(memcmp(dst, merged, size) == 0);
        CHECK(guards_intact(size));
        dst = guarded_page(orig, size);
        CHECK_EQ(mem_diff_apply(dst, size, diff2, (size_t)lb), 0);
        CHECK_EQ(mem_diff_apply(dst, size, diff, (size_t)la), 0);
        CHECK(memcmp(dst, merged, size) == 0);
        CHECK(guards_intact(size));
    }
}

static void test_page_changed_back_gives_empty_diff(void)
{
    seed(50);
    fill_random(page, 8192);
    mem_twin_copy(twin, page, 8192);
    for (size_t w = 0; w < 2048; w += 7) {
        uint32_t old = get_word(page, w);
        set_word(page, w, old + 1);
        set_word(page, w, old);
    }
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, sizeof diff), 0);
}

static void test_too_small_buffer_gives_enospc(void)
{
    seed(60);
    fill_random(twin, 8192);
    memcpy(page, twin, 8192);
    flip_word(page, 5);
    flip_word(page, 2000);
    long len = mem_diff_create(page, twin, 8192, diff, sizeof diff);
    CHECK_EQ(len, 16);
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 0), -ENOSPC);
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 7), -ENOSPC);
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 15), -ENOSPC);
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 16), 16);
    /* the encoder never writes past cap */
    memset(diff, 0xEE, sizeof diff);
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 12), -ENOSPC);
    CHECK(diff[12] == 0xEE && diff[13] == 0xEE);
    /* every word changed needs exactly its length, whole or in part */
    for (size_t w = 0; w < 2048; w++)
        set_word(page, w, ~get_word(twin, w));
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 8192 + 4 - 1), -ENOSPC);
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 8192 + 4), 8192 + 4);
    page[4] = twin[4];
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 8192 + 1024 + 4 - 1), -ENOSPC);
    CHECK_EQ(mem_diff_create(page, twin, 8192, diff, 8192 + 1024 + 4), 8192 + 1024 + 4);
}

static void test_invalid_page_size_is_rejected(void)
{
    CHECK_EQ(mem_diff_create(page, twin, 0, diff, sizeof diff), -EINVAL);
    CHECK_EQ(mem_diff_create(page, twin, 100, diff, sizeof diff), -EINVAL);
    CHECK_EQ(mem_diff_create(page, twin, 128 * 1024, diff, sizeof diff), -EINVAL);
    CHECK_EQ(mem_diff_apply(copy, 0, diff, 0), -EINVAL);
    CHECK_EQ(mem_diff_apply(copy, 4100, diff, 0), -EINVAL);
    CHECK_EQ(mem_diff_check(diff, 0, 0), -EINVAL);
    CHECK_EQ(mem_diff_check(diff, 0, 128 * 1024), -EINVAL);
    /* the smallest page is one 64-byte block */
    seed(70);
    fill_random(twin, 64);
    memcpy(page, twin, 64);
    flip_word(page, 15);
    CHECK_EQ(roundtrip(64), 8);
}

/* Builds a diff by hand: runs of (offset, count, number of words present). */
static size_t put_run(unsigned char *d, size_t pos, unsigned off, unsigned count, unsigned words)
{
    d[pos] = (unsigned char)off;
    d[pos + 1] = (unsigned char)(off >> 8);
    d[pos + 2] = (unsigned char)count;
    d[pos + 3] = (unsigned char)(count >> 8);
    for (unsigned i = 0; i < words * 4; i++)
        d[pos + 4 + i] = (unsigned char)(0x11 + i);
    return pos + 4 + words * 4;
}

/* The diff must be rejected by check and by apply, and apply must not write
 * outside the page (the guards). */
static void expect_rejected(size_t size, const unsigned char *d, size_t len, int line)
{
    seed(80);
    fill_random(copy, size);
    unsigned char *dst = guarded_page(copy, size);
    long checked = mem_diff_check(d, len, size);
    int rc = mem_diff_apply(dst, size, d, len);
    if (rc != -EINVAL || checked != -EINVAL)
        fprintf(stderr, "expect_rejected from line %d: apply %d check %ld\n", line, rc, checked);
    CHECK_EQ(checked, -EINVAL);
    CHECK_EQ(rc, -EINVAL);
    CHECK(guards_intact(size));
}
#define REJECTED(size, d, len) expect_rejected(size, d, len, __LINE__)

static void test_apply_rejects_malformed_diffs(void)
{
    unsigned char *d = diff2;
    size_t n = 2048, len; /* 8 KiB page */

    /* truncated header */
    put_run(d, 0, 3, 1, 1);
    for (size_t l = 1; l < 4; l++)
        REJECTED(8192, d, l);
    /* truncated words */
    REJECTED(8192, d, 4);
    REJECTED(8192, d, 7);
    len = put_run(d, 0, 3, 100, 100);
    REJECTED(8192, d, len - 1);
    REJECTED(8192, d, len - 4);
    CHECK_EQ(mem_diff_payload(d, len - 1), -EINVAL);
    /* zero-length run */
    len = put_run(d, 0, 3, 0, 0);
    REJECTED(8192, d, len);
    len = put_run(d, put_run(d, 0, 3, 1, 1), 10, 0, 0);
    REJECTED(8192, d, len);
    /* run past the end of the page */
    len = put_run(d, 0, (unsigned)n - 1, 2, 2);
    REJECTED(8192, d, len);
    len = put_run(d, 0, (unsigned)n, 1, 1);
    REJECTED(8192, d, len);
    len = put_run(d, 0, 0, (unsigned)n + 1, (unsigned)n + 1);
    REJECTED(8192, d, len);
    len = put_run(d, 0, 65535, 65535, 0);
    REJECTED(8192, d, len);
    /* fits a 64 KiB page, not an 8 KiB one; payload knows only the max */
    len = put_run(d, 0, 10000, 1, 1);
    REJECTED(8192, d, len);
    CHECK_EQ(mem_diff_payload(d, len), 4);
    /* out of order and overlapping runs */
    len = put_run(d, put_run(d, 0, 10, 1, 1), 5, 1, 1);
    REJECTED(8192, d, len);
    len = put_run(d, put_run(d, 0, 10, 4, 4), 13, 1, 1);
    REJECTED(8192, d, len);
    len = put_run(d, put_run(d, 0, 10, 4, 4), 10, 4, 4);
    REJECTED(8192, d, len);
    /* trailing garbage after a good diff */
    len = put_run(d, 0, 10, 2, 2);
    d[len] = 0x42;
    d[len + 1] = 0x43;
    d[len + 2] = 0x44;
    REJECTED(8192, d, len + 1);
    REJECTED(8192, d, len + 3);
    CHECK_EQ(mem_diff_payload(d, len + 3), -EINVAL);
    len = put_run(d, len, 0, 1, 1); /* a whole run, but going backwards */
    REJECTED(8192, d, len);
    /* a bad run after good runs: apply has written the good ones (and only
     * them); check, the all-or-nothing guard, rejects the whole diff */
    len = put_run(d, put_run(d, put_run(d, 0, 0, 8, 8), 100, 8, 8), 2047, 2, 2);
    REJECTED(8192, d, len);
    unsigned char *dst = guarded_page(twin, 8192);
    CHECK_EQ(mem_diff_apply(dst, 8192, d, len), -EINVAL);
    CHECK(dst[0] == 0x11 && dst[400] == 0x11);
    CHECK(memcmp(dst + 32, twin + 32, 400 - 32) == 0);
    CHECK(memcmp(dst + 432, twin + 432, 8192 - 432) == 0);
    CHECK(guards_intact(8192));

    /* the same shapes, well-formed, are accepted (the checks can pass) */
    len = put_run(d, put_run(d, 0, 10, 4, 4), 14, 1, 1); /* adjacent runs are legal */
    dst = guarded_page(twin, 8192);
    CHECK_EQ(mem_diff_check(d, len, 8192), 20);
    CHECK_EQ(mem_diff_apply(dst, 8192, d, len), 0);
    CHECK(dst[40] == 0x11 && dst[56] == 0x11);
    CHECK(guards_intact(8192));
    len = put_run(d, 0, (unsigned)n - 1, 1, 1);
    CHECK_EQ(mem_diff_apply(dst, 8192, d, len), 0);
    CHECK(dst[8188] == 0x11 && dst[8191] == 0x14);
    CHECK(guards_intact(8192));

    /* masked runs: the mask before the words, (count + 1) / 2 bytes */
    len = put_run(d, 0, 10, 0x8000 | 3, 0); /* header only */
    d[len] = 0x0F; /* word 10 whole, word 11 none */
    d[len + 1] = 0x01; /* word 12: byte 0 */
    memset(d + len + 2, 0x77, 12);
    CHECK_EQ(mem_diff_check(d, len + 14, 8192), 12);
    REJECTED(8192, d, len + 13); /* a word short */
    REJECTED(8192, d, len + 1);  /* the mask short */
    dst = guarded_page(twin, 8192);
    CHECK_EQ(mem_diff_apply(dst, 8192, d, len + 14), 0);
    CHECK(dst[40] == 0x77 && dst[43] == 0x77 && dst[48] == 0x77);
    CHECK(memcmp(dst + 44, twin + 44, 4) == 0 && memcmp(dst + 49, twin + 49, 3) == 0);
    CHECK(guards_intact(8192));
    len = put_run(d, 0, 10, 0x8000, 0); /* masked, empty */
    REJECTED(8192, d, len);
    len = put_run(d, 0, (unsigned)n - 1, 0x8000 | 2, 0); /* masked, past the page */
    memset(d + len, 0xFF, 9);
    REJECTED(8192, d, len + 9);
}

static void test_apply_reads_unaligned_diff(void)
{
    seed(90);
    fill_random(twin, 8192);
    memcpy(page, twin, 8192);
    for (size_t w = 3; w < 2048; w += 5)
        flip_word(page, w);
    long len = mem_diff_create(page, twin, 8192, diff, sizeof diff);
    CHECK(len > 0);
    memmove(diff2 + 1, diff, (size_t)len);
    unsigned char *dst = guarded_page(twin, 8192);
    CHECK_EQ(mem_diff_apply(dst, 8192, diff2 + 1, (size_t)len), 0);
    CHECK(memcmp(dst, page, 8192) == 0);
}

static void test_random_bytes_never_write_outside_page(void)
{
    long accepted = 0, rejected = 0;
    for (uint64_t s = 0; s < 20000; s++) {
        seed(100000 + s);
        size_t size = page_sizes[rng() % NSIZES];
        size_t len = rng() % 64;
        unsigned char *d = diff2;
        unsigned kind = (unsigned)(rng() % 3);
        if (kind == 0) {
            fill_random(d, len); /* pure noise */
        } else if (kind == 1) {
            /* plausible headers with small offsets and counts, random truncation */
            size_t pos = 0;
            while (pos + 4 < 4096) {
                unsigned off = (unsigned)(rng() % (size / 4 + 8)), cnt = (unsigned)(rng() % 40);
                pos = put_run(d, pos, off, cnt, cnt);
                if (rng() % 3 == 0)
                    break;
            }
            len = pos - (rng() % 2 ? rng() % (pos + 1) : 0);
        } else {
            /* a real diff with a few bytes mutated */
            fill_random(twin, size);
            memcpy(page, twin, size);
            for (int c = 0; c < 20; c++) {
                size_t w = rng() % (size / 4);
                set_word(page, w, (uint32_t)rng());
            }
            long l = mem_diff_create(page, twin, size, d, sizeof diff2);
            CHECK(l > 0);
            len = l > 0 ? (size_t)l : 0;
            for (int m = 0; m < 3 && len; m++)
                flip_bit(d, len);
            if (rng() % 2 && len)
                len -= rng() % len;
        }
        unsigned char *dst = guarded_page(twin, size);
        int rc = mem_diff_apply(dst, size, d, len);
        CHECK(rc == 0 || rc == -EINVAL);
        long checked = mem_diff_check(d, len, size);
        long payload = mem_diff_payload(d, len);
        CHECK(payload >= 0 || payload == -EINVAL);
        if (rc == 0) {
            accepted++;
            CHECK(checked >= 0 && checked <= (long)size);
            CHECK_EQ(payload, checked);
        } else {
            rejected++;
            CHECK_EQ(checked, -EINVAL);
        }
        if (!guards_intact(size)) {
            CHECK(guards_intact(size));
            fprintf(stderr, "guard overwritten, seed %llu\n", (unsigned long long)s);
            break;
        }
    }
    /* the fuzz exercised both outcomes */
    CHECK(accepted > 100);
    CHECK(rejected > 100);
}


/* ---- the bytes a diff writes (the sharing profile) ----------------------- */

/* The ranges mem_diff_bytes gives are exactly the bytes that differ, for
 * random changes of whole words and of single bytes; the bitmap says the
 * same. */
static void test_diff_bytes_are_exactly_the_changed_bytes(void)
{
    static uint64_t runs[MAX_PAGE / 2];
    static unsigned char bits[MAX_PAGE / 8];
    for (size_t si = 0; si < NSIZES; si++) {
        size_t size = page_sizes[si];
        for (int round = 0; round < 30; round++) {
            fill_random(twin, size);
            memcpy(page, twin, size);
            int changes = 1 + (int)(rng() % 200);
            for (int c = 0; c < changes; c++) {
                if (rng() % 2)
                    flip_word(page, rng() % (size / 4));
                else
                    page[rng() % size] ^= (unsigned char)(1 + rng() % 255);
            }
            long len = mem_diff_create(page, twin, size, diff, sizeof diff);
            CHECK(len > 0);
            long n = mem_diff_bytes(diff, (size_t)len, size, runs, MAX_PAGE / 2);
            CHECK(n > 0);
            CHECK_EQ(mem_diff_bitmap(diff, (size_t)len, size, bits), 0);
            /* every byte: in a range iff it changed iff its bit is set */
            size_t r = 0, wrong = 0, wrong_bits = 0, prev_end = 0;
            for (long i = 0; i < n; i++) {
                size_t s = runs[i] & 0xFFFFFFFFu, e = runs[i] >> 32;
                if (!(s < e && e <= size && (i == 0 || s > prev_end)))
                    wrong++; /* empty, outside, out of order or touching the last */
                prev_end = e;
            }
            for (size_t b = 0; b < size; b++) {
                while (r < (size_t)n && (runs[r] >> 32) <= b)
                    r++;
                int in = r < (size_t)n && (runs[r] & 0xFFFFFFFFu) <= b;
                int changed = page[b] != twin[b];
                wrong += in != changed;
                wrong_bits += ((bits[b / 8] >> (b % 8)) & 1) != changed;
            }
            CHECK_EQ(wrong, 0);
            CHECK_EQ(wrong_bits, 0);
        }
    }
}

/* Alternating 64-byte blocks are one range each; too many ranges for the
 * room given is -ENOSPC; a malformed diff is -EINVAL; an empty diff has none. */
static void test_diff_bytes_alternating_blocks_and_limits(void)
{
    static uint64_t runs[256];
    size_t size = 8192;
    memset(twin, 0, size);
    memset(page, 0, size);
    for (size_t b = 0; b < size / 64; b += 2)
        memset(page + b * 64, 7, 64);
    long len = mem_diff_create(page, twin, size, diff, sizeof diff);
    CHECK_EQ(mem_diff_bytes(diff, (size_t)len, size, runs, 256), 64);
    CHECK_EQ(runs[0], (uint64_t)0 | (uint64_t)64 << 32);
    CHECK_EQ(runs[1], (uint64_t)128 | (uint64_t)192 << 32);
    CHECK_EQ(mem_diff_bytes(diff, (size_t)len, size, runs, 63), -ENOSPC);
    CHECK_EQ(mem_diff_bytes(diff, 0, size, runs, 256), 0);
    CHECK_EQ(mem_diff_bytes(diff, 3, size, runs, 256), -EINVAL);
    /* one byte changed in the middle of a word: one one-byte range */
    memcpy(page, twin, size);
    page[4097] = 1;
    len = mem_diff_create(page, twin, size, diff, sizeof diff);
    CHECK_EQ(mem_diff_bytes(diff, (size_t)len, size, runs, 256), 1);
    CHECK_EQ(runs[0], (uint64_t)4097 | (uint64_t)4098 << 32);
}

int main(void)
{
    test_twin_copy_is_exact();
    test_unchanged_page_gives_empty_diff();
    test_single_word_at_first_and_last_word();
    test_every_word_changed_is_one_run_at_the_bound();
    test_alternating_words_stay_separate_runs();
    test_unchanged_gap_word_is_not_carried();
    test_random_changes_roundtrip();
    test_two_writers_of_disjoint_words_merge_in_either_order();
    test_byte_changes_carry_a_mask();
    test_masked_runs_across_blocks();
    test_two_writers_of_disjoint_bytes_merge_in_either_order();
    test_page_changed_back_gives_empty_diff();
    test_too_small_buffer_gives_enospc();
    test_invalid_page_size_is_rejected();
    test_apply_rejects_malformed_diffs();
    test_apply_reads_unaligned_diff();
    test_random_bytes_never_write_outside_page();
    test_diff_bytes_are_exactly_the_changed_bytes();
    test_diff_bytes_alternating_blocks_and_limits();
    return check_report("test_diff");
}
