/*
 * written.c — the bytes a node wrote, for the sharing profile (issue 57).
 *
 * A diff carries exactly the bytes its writer changed (diff.c), so two
 * nodes' diffs of one page in one interval tell true sharing (the same
 * bytes) from false (disjoint bytes of the page) with no guess. The
 * profile keeps them as ranges while they are few, else as a bitmap of the
 * page (an eighth of it); in long runs, for a sample of each page's
 * intervals (profile_bytes_wanted), the others' diffs only counted.
 */
#include <errno.h>

#include "base/profile.h"
#include "mem/mem.h"

#define RUNS_MAX 128 /* ranges kept as ranges; beyond, a bitmap (1 KiB for 8 KiB) */

void mem_profile_diff(int how, size_t page, uint32_t stamp, const void *diff, size_t len)
{
    if (!len)
        return;
    if (!profile_bytes_wanted(page, stamp)) { /* counted: not even walked */
        profile_diff_counted((enum profile_diff)how, page, len);
        return;
    }
    long payload = mem_diff_payload(diff, len);
    uint64_t words[MEM_DIFF_MAX_PAGE / 64];
    long n = mem_diff_bytes(diff, len, mem.page_size, words, RUNS_MAX);
    if (n >= 0) {
        profile_written((enum profile_diff)how, page, stamp, len, (uint64_t)payload, words,
                        (size_t)n, false);
    } else if (n == -ENOSPC && mem_diff_bitmap(diff, len, mem.page_size, words) == 0) {
        profile_written((enum profile_diff)how, page, stamp, len, (uint64_t)payload, words,
                        mem.page_size / 64, true);
    }
}

void mem_profile_home_writes(size_t page, const void *now, const void *snapshot, void *scratch)
{
    if (!profile_bytes_wanted(page, 0)) { /* not encoded at all: counted, no bytes known */
        profile_diff_counted(PROF_DIFF_HOME, page, 0);
        return;
    }
    size_t cap = mem_diff_bound(mem.page_size);
    long len = mem_diff_create(now, snapshot, mem.page_size, scratch, cap);
    if (len > 0)
        mem_profile_diff(PROF_DIFF_HOME, page, 0, scratch, (size_t)len);
}
