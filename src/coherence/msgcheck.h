/*
 * msgcheck.h — the coherence protocols' message bodies, checked before use.
 *
 * Every check here is pure: it reads the bytes it is given and the job's
 * limits, never the runtime's state, so that a fuzz target can call it
 * without a running job (fuzz/fuzz_notices.c, fuzz/fuzz_coh_msg.c). What
 * depends on state (is this reply expected, is this node the page's home)
 * stays with the handler. Each returns NULL when the body is well formed,
 * or a short phrase saying what is wrong, for the handler's fatal error.
 */
#ifndef DSM_COHERENCE_MSGCHECK_H
#define DSM_COHERENCE_MSGCHECK_H
#include <stddef.h>
#include <stdint.h>

#include "coherence/home.h"

/* What a body is checked against: the job's and the region's sizes. */
struct coh_limits {
    int    nodes;     /* nodes in the job */
    int    rank;      /* this node */
    size_t npages;    /* coherence pages in the region */
    size_t page_size; /* bytes of one */
};

/* Pages after the requested one that a page reply may name as having the
 * same home (home.c), and where a request carries that run in its flags. */
#define HOME_RUN_MAX   64
#define HOME_RUN_SHIFT 8

/* Pages in one read-ahead run (hlrc_ahead.c). */
#define HLRC_READ_AHEAD_MAX 16

/* The interval encoding (interval.c). Encoding: u32 count, then per
 * interval a wire_interval, with WIRE_INTERVAL_VT its creator's vector
 * time (nodes u32, entry `node` being `id`), and its `count` notices
 * (struct notice). The vector time travels only under DSM_CHECK, for the
 * receiver's causal checks (base/check.h). */
struct wire_interval {
    uint16_t node, flags;
    uint32_t id, count;
};
#define WIRE_INTERVAL_VT 1u

/* lrc's diff fetch (lrc_fault.c, lrc_handlers.c). */
struct diff_req  { uint32_t page, count; };  /* + count u32 stamps */
struct diff_rep  { uint32_t page, count; };  /* + count {diff_item, diff bytes} */
struct diff_item { uint32_t stamp, len; };
#define LRC_OPEN_STAMP 0 /* a diff of the interval still open: never sent */

/* hlrc's read-ahead (hlrc_ahead.c): the request names the pages and the
 * version each needs (need[count] follows); the reply, their versions
 * (version[count]) and then the pages. */
struct run_req { uint32_t first, count; };
struct run_rep { uint32_t first, count; };

/* Intervals and their write notices, as a lock grant or a barrier release
 * carries them: the layout, nodes and pages in range, no trailing bytes,
 * interval ids from 1, and a node's intervals in increasing order where
 * one message carries several. *notices (may be NULL) gets the notices in all. */
const char *coh_notices_check(const void *data, size_t len, const struct coh_limits *l,
                              uint64_t *notices);

/* A page request (COH_PAGE_REQ). */
const char *coh_page_req_check(const struct page_req *r, const struct coh_limits *l);

/* The head of any page reply (home.c's, sc's): the page, the status, the
 * home named and `data` bytes following (a page for HOME_DATA, none
 * otherwise). */
const char *coh_page_head_check(uint32_t page, uint32_t status, int32_t home, size_t data,
                                const struct coh_limits *l);

/* A page reply (COH_PAGE_REP) from `src` with `data` bytes following:
 * the head, and the run of pages it says share the home. */
const char *coh_page_rep_check(const struct page_rep *r, int src, size_t data,
                               const struct coh_limits *l);

/* A diff's header (COH_DIFF) and the diff (`len` bytes) following it. */
const char *coh_diff_check(const struct diff_hdr *d, const void *diff, size_t len,
                           const struct coh_limits *l);

/* A COH_DIFFS body: at least one struct diffs_item, each followed by its
 * `len` bytes of diff (coh_diff_check's), nothing after the last.
 * *count (may be NULL) gets the diffs. */
const char *coh_diffs_check(const void *body, size_t len, const struct coh_limits *l,
                            uint32_t *count);

/* A COH_DIFF_ACKS body: at least one struct diff_ack, pages in range,
 * `zero` zero, nothing else. */
const char *coh_diff_acks_check(const void *body, size_t len, const struct coh_limits *l);

/* lrc's diff request: its header and `rest` bytes of stamps. */
const char *coh_diff_req_check(const struct diff_req *r, size_t rest, const struct coh_limits *l);

/* lrc's diff reply for `page` (the whole body, `len` bytes): the items
 * fit exactly, no open stamp, and every diff is well formed for a page. */
const char *coh_diff_rep_check(const void *body, size_t len, const struct coh_limits *l);

/* hlrc's read-ahead run (request or reply): its size in pages, or 0 when
 * it is empty, too long or leaves the region. */
size_t coh_run_pages(uint32_t first, uint32_t count, const struct coh_limits *l);
#endif
