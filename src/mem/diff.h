/*
 * diff.h — twins and byte-exact run-length diffs.
 *
 * Multiple-writer protocols (TreadMarks LRC, HLRC, SCASH ERC) let several
 * nodes write disjoint bytes of one page between synchronisations. A writer
 * keeps a *twin* (pristine copy) of the page taken at its first write; at
 * release it encodes a *diff*, the runs of 32-bit words where the page now
 * differs from its twin, with a byte mask for runs whose words changed only
 * in part, and ships it to the page's home, which applies it to its copy. A
 * diff writes exactly the bytes its writer changed, never an unchanged
 * neighbour (not even a byte of the same word: in C11 every byte is a
 * memory location of its own), so diffs of disjoint bytes merge in any
 * order.
 *
 * The encoding is described at the top of diff.c. In short: a sequence of
 * runs, each a 4-byte little-endian header {u16 word offset, u16 word count
 * with a mask flag}, the mask if flagged (4 bits a word), then the words;
 * an unchanged page has the empty diff (0 bytes).
 *
 * Page sizes: a multiple of 64 bytes, at most MEM_DIFF_MAX_PAGE (64 KiB).
 * Nothing here allocates; both are safe to call from the
 * service thread. Pointers need no particular alignment.
 *
 * (Internal; to be folded into the layer header src/mem/mem.h.)
 */
#ifndef DSM_MEM_DIFF_H
#define DSM_MEM_DIFF_H

#include <stddef.h>
#include <stdint.h>

/* Largest coherence unit a diff can describe (word offsets are 16-bit). */
#define MEM_DIFF_MAX_PAGE ((size_t)64 * 1024)

/* Upper bound of an encoded diff for a page of `page_size` bytes: a buffer
 * this large never makes mem_diff_create fail with -ENOSPC. */
size_t mem_diff_bound(size_t page_size);

/* Encodes the bytes where `page` differs from `twin` into `out` (capacity
 * `cap` bytes). Returns the encoded length (0 when the page is unchanged),
 * -ENOSPC when `cap` is too small (out's contents are then unspecified), or
 * -EINVAL when page_size is not a multiple of 64 in 64 .. MEM_DIFF_MAX_PAGE. */
long mem_diff_create(const void *page, const void *twin, size_t page_size,
                     void *out, size_t cap);

/* Applies an encoded diff of `len` bytes onto `dst` (a page of `page_size`
 * bytes). The diff is untrusted (it comes off the network) and every run is
 * checked before it is copied. Returns 0, or -EINVAL if the diff is malformed
 * (truncated header, mask or words, zero-length run, run outside the page, runs out
 * of order or overlapping) or page_size is invalid. On -EINVAL the runs
 * before the bad one have been applied: dst may be partly written, never
 * outside its page_size bytes. Callers that need all or nothing check first
 * with mem_diff_check. */
int mem_diff_apply(void *dst, size_t page_size, const void *diff, size_t len);

/* Checks an untrusted diff against every rule mem_diff_apply enforces for a
 * page of `page_size` bytes, writing nothing. Returns the payload (bytes of
 * page data carried), or -EINVAL exactly when mem_diff_apply would fail. */
long mem_diff_check(const void *diff, size_t len, size_t page_size);

/* Number of bytes of page data the diff carries (its runs' words, for
 * statistics), or
 * -EINVAL if it is malformed for any page size up to MEM_DIFF_MAX_PAGE. */
long mem_diff_payload(const void *diff, size_t len);

/* The bytes an encoded diff writes, for the sharing profile: as ranges
 * [start, end) of the page, each maximal (neighbouring bytes make one), in
 * order, as start | end << 32 into runs (room for max). Returns how many,
 * -ENOSPC when there are more than max, or -EINVAL for a malformed diff. */
long mem_diff_bytes(const void *diff, size_t len, size_t page_size, uint64_t *runs, size_t max);
/* The same as a bitmap of page_size / 8 bytes (bit b % 8 of byte b / 8:
 * byte b is written). Returns 0 or -EINVAL (bits then unspecified). */
int mem_diff_bitmap(const void *diff, size_t len, size_t page_size, void *bits);

/* Makes a twin: a copy of `page` (page_size bytes) into `twin`. */
void mem_twin_copy(void *twin, const void *page, size_t page_size);

#endif /* DSM_MEM_DIFF_H */
