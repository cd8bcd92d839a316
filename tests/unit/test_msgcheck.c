/*
 * test_msgcheck.c — the coherence protocols' message bodies
 * (src/coherence/msgcheck.c): well-formed bodies pass, each kind of
 * malformed one is refused with a reason.
 */
#include "check.h"
#include "coherence/coherence.h"
#include "coherence/msgcheck.h"
#include "mem/diff.h"

#include <string.h>

static const struct coh_limits L = {.nodes = 4, .rank = 1, .npages = 100, .page_size = 4096};

static unsigned char buf[4096];
static size_t at;

static void put(const void *p, size_t n)
{
    memcpy(buf + at, p, n);
    at += n;
}

/* count, then (node, id, pages...) intervals */
static void intervals(uint32_t count)
{
    at = 0;
    put(&count, sizeof count);
}

static void interval(uint16_t node, uint32_t id, uint32_t npages, const uint32_t *pages)
{
    struct wire_interval w = {.node = node, .id = id, .count = npages};
    put(&w, sizeof w);
    for (uint32_t i = 0; i < npages; i++) {
        struct notice n = {.page = pages[i], .version = i + 1};
        put(&n, sizeof n);
    }
}

static void test_well_formed_intervals_pass_and_count_their_notices(void)
{
    uint32_t p[] = {0, 99, 7};
    intervals(3);
    interval(0, 1, 3, p);
    interval(0, 2, 0, NULL);
    interval(3, 5, 1, p);
    uint64_t n = 0;
    CHECK(coh_notices_check(buf, at, &L, &n) == NULL);
    CHECK_EQ(n, 4);
    intervals(0);
    CHECK(coh_notices_check(buf, at, &L, &n) == NULL);
    CHECK_EQ(n, 0);
}

static void test_malformed_intervals_are_refused(void)
{
    uint32_t p[] = {0, 100};
    intervals(1);
    interval(0, 1, 2, p); /* page 100 of 100 */
    CHECK(coh_notices_check(buf, at, &L, NULL) != NULL);
    intervals(1);
    interval(4, 1, 1, p); /* node 4 of 4 */
    CHECK(coh_notices_check(buf, at, &L, NULL) != NULL);
    intervals(1);
    interval(0, 0, 1, p); /* id 0 */
    CHECK(coh_notices_check(buf, at, &L, NULL) != NULL);
    intervals(2);
    interval(2, 5, 1, p);
    interval(2, 5, 1, p); /* the same interval twice */
    CHECK(coh_notices_check(buf, at, &L, NULL) != NULL);
    intervals(1);
    interval(0, 1, 1, p);
    CHECK(coh_notices_check(buf, at - 1, &L, NULL) != NULL); /* truncated */
    buf[at] = 0;
    CHECK(coh_notices_check(buf, at + 1, &L, NULL) != NULL); /* trailing byte */
    intervals(1000000); /* more than the bytes can hold */
    CHECK(coh_notices_check(buf, at, &L, NULL) != NULL);
    CHECK(coh_notices_check(buf, 3, &L, NULL) != NULL); /* no count */
    intervals(1);
    interval(0, 1, 1, p);
    buf[sizeof(uint32_t) + 2] = 2; /* a flag nobody defined */
    CHECK(coh_notices_check(buf, at, &L, NULL) != NULL);
}

/* Under DSM_CHECK an interval carries its creator's vector time, whose own
 * entry is the interval's id. */
static void test_intervals_with_vector_times_are_walked_and_checked(void)
{
    uint32_t p[] = {3, 4};
    struct wire_interval w = {.node = 1, .flags = WIRE_INTERVAL_VT, .id = 2, .count = 2};
    uint32_t vt[4] = {5, 2, 0, 7};
    intervals(1);
    put(&w, sizeof w);
    put(vt, sizeof vt);
    for (uint32_t i = 0; i < 2; i++) {
        struct notice n = {.page = p[i], .version = 1};
        put(&n, sizeof n);
    }
    uint64_t n = 0;
    CHECK(coh_notices_check(buf, at, &L, &n) == NULL);
    CHECK_EQ(n, 2);
    CHECK(coh_notices_check(buf, at - sizeof(struct notice), &L, NULL) != NULL);
    w.count = 0;
    intervals(1);
    put(&w, sizeof w);
    put(vt, sizeof vt);
    CHECK(coh_notices_check(buf, at, &L, NULL) == NULL);
    vt[1] = 3; /* names interval 3 of its creator, not 2 */
    intervals(1);
    put(&w, sizeof w);
    put(vt, sizeof vt);
    CHECK(coh_notices_check(buf, at, &L, NULL) != NULL);
    vt[1] = 2; /* one cut inside its vector time */
    intervals(1);
    put(&w, sizeof w);
    put(vt, sizeof vt - 1);
    CHECK(coh_notices_check(buf, at, &L, NULL) != NULL);
}

static void test_page_requests_and_replies_are_bounded(void)
{
    struct page_req rq = {.page = 5, .requester = 2, .flags = 0};
    CHECK(coh_page_req_check(&rq, &L) == NULL);
    rq.flags = HOME_FROM_BASE | 64u << HOME_RUN_SHIFT;
    CHECK(coh_page_req_check(&rq, &L) == NULL);
    rq.flags = 3u << HOME_RUN_SHIFT; /* a run not from the base */
    CHECK(coh_page_req_check(&rq, &L) != NULL);
    rq.flags = HOME_FROM_BASE | 65u << HOME_RUN_SHIFT;
    CHECK(coh_page_req_check(&rq, &L) != NULL);
    rq.flags = 2;
    CHECK(coh_page_req_check(&rq, &L) != NULL);
    rq.flags = 0, rq.requester = 1; /* this node */
    CHECK(coh_page_req_check(&rq, &L) != NULL);
    rq.requester = 2, rq.page = 100;
    CHECK(coh_page_req_check(&rq, &L) != NULL);

    struct page_rep r = {.page = 97, .home = 2, .status = HOME_DATA, .run = 2};
    CHECK(coh_page_rep_check(&r, 2, 4096, &L) == NULL);
    CHECK(coh_page_rep_check(&r, 3, 4096, &L) != NULL); /* data from another node */
    CHECK(coh_page_rep_check(&r, 2, 4095, &L) != NULL);
    r.run = 3; /* 97 + 3 is past the region */
    CHECK(coh_page_rep_check(&r, 2, 4096, &L) != NULL);
    r.run = 0, r.status = HOME_YOU_ARE_HOME, r.home = 1;
    CHECK(coh_page_rep_check(&r, 2, 0, &L) == NULL);
    r.home = 2;
    CHECK(coh_page_rep_check(&r, 2, 0, &L) != NULL);
    r.status = HOME_UNALLOCATED, r.home = -1;
    CHECK(coh_page_rep_check(&r, 2, 0, &L) == NULL);
    r.run = 1;
    CHECK(coh_page_rep_check(&r, 2, 0, &L) != NULL);
    r.run = 0, r.status = 3;
    CHECK(coh_page_rep_check(&r, 2, 0, &L) != NULL);
}

static void test_diffs_and_lrc_diff_replies_are_checked_whole(void)
{
    static unsigned char page[4096], twin[4096];
    unsigned char diff[64];
    page[100] = page[2000] = 1;
    long dl = mem_diff_create(page, twin, 4096, diff, sizeof diff);
    CHECK(dl > 0);
    struct diff_hdr d = {.page = 3};
    CHECK(coh_diff_check(&d, diff, (size_t)dl, &L) == NULL);
    CHECK(coh_diff_check(&d, diff, (size_t)dl - 1, &L) != NULL);
    d.page = 100;
    CHECK(coh_diff_check(&d, diff, (size_t)dl, &L) != NULL);

    struct diff_req q = {.page = 3, .count = 2};
    CHECK(coh_diff_req_check(&q, 8, &L) == NULL);
    CHECK(coh_diff_req_check(&q, 12, &L) != NULL);
    q.count = 0;
    CHECK(coh_diff_req_check(&q, 0, &L) != NULL);

    struct diff_rep h = {.page = 3, .count = 2};
    struct diff_item it = {.stamp = 4, .len = (uint32_t)dl};
    at = 0;
    put(&h, sizeof h);
    put(&it, sizeof it);
    put(diff, (size_t)dl);
    it.stamp = 6;
    put(&it, sizeof it);
    put(diff, (size_t)dl);
    CHECK(coh_diff_rep_check(buf, at, &L) == NULL);
    CHECK(coh_diff_rep_check(buf, at - 1, &L) != NULL);
    buf[at] = 0;
    CHECK(coh_diff_rep_check(buf, at + 1, &L) != NULL);
    /* the second diff's first run moved past the page: refused before any
     * diff is applied */
    size_t second = sizeof h + 2 * sizeof it + (size_t)dl;
    buf[second] = 0xff, buf[second + 1] = 0xff;
    CHECK(coh_diff_rep_check(buf, at, &L) != NULL);
    it.stamp = LRC_OPEN_STAMP;
    at = 0;
    h.count = 1;
    put(&h, sizeof h);
    put(&it, sizeof it);
    put(diff, (size_t)dl);
    CHECK(coh_diff_rep_check(buf, at, &L) != NULL);
}

static void test_read_ahead_runs_stay_in_the_region(void)
{
    CHECK_EQ(coh_run_pages(0, 16, &L), 16);
    CHECK_EQ(coh_run_pages(84, 16, &L), 16);
    CHECK_EQ(coh_run_pages(85, 16, &L), 0);
    CHECK_EQ(coh_run_pages(0, 17, &L), 0);
    CHECK_EQ(coh_run_pages(0, 0, &L), 0);
    CHECK_EQ(coh_run_pages(UINT32_MAX, 2, &L), 0);
}

int main(void)
{
    test_well_formed_intervals_pass_and_count_their_notices();
    test_malformed_intervals_are_refused();
    test_intervals_with_vector_times_are_walked_and_checked();
    test_page_requests_and_replies_are_bounded();
    test_diffs_and_lrc_diff_replies_are_checked_whole();
    test_read_ahead_runs_stay_in_the_region();
    return check_report("test_msgcheck");
}
