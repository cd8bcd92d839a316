/*
 * test_ipc_blocks.c — the large-message buffer cache: reuse by exact
 * page-rounded size, the bound on what is kept, the idle trim.
 */
#include "check.h"
#include "base/clock.h"
#include "ipc/blocks.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define MIB (1ull << 20)

static size_t kept(void) { return ipc_blocks_kept(NULL); }

static void test_sizes_round_to_pages(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    CHECK_EQ(ipc_block_bytes(0), pg);
    CHECK_EQ(ipc_block_bytes(1), pg);
    CHECK_EQ(ipc_block_bytes(pg), pg);
    CHECK_EQ(ipc_block_bytes(pg + 1), 2 * pg);
}

static void test_a_freed_buffer_serves_the_next_of_its_size(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *a = ipc_block_get(MIB + 8);
    unsigned char *b = ipc_block_get(MIB + 8);
    CHECK(a != b);
    CHECK_EQ((uintptr_t)a % pg, 0);
    memset(a, 1, MIB + 8); /* whole, writable */
    memset(b, 2, MIB + 8);
    ipc_block_put(a, MIB + 8);
    ipc_block_put(b, MIB + 8);
    CHECK_EQ(kept(), 2 * (MIB + pg));
    /* Any length that rounds to the same pages takes one, the warmest first. */
    CHECK(ipc_block_get(MIB + 100) == b);
    CHECK(ipc_block_get(MIB + 1) == a);
    CHECK_EQ(kept(), 0);
    ipc_block_put(a, MIB + 8);
    ipc_block_put(b, MIB + 8);
}

static void test_another_size_is_not_served_from_the_cache(void)
{
    ipc_blocks_release();
    void *a = ipc_block_get(MIB);
    ipc_block_put(a, MIB);
    void *b = ipc_block_get(2 * MIB);
    CHECK(b != a);
    CHECK_EQ(kept(), MIB);
    ipc_block_put(b, 2 * MIB);
    CHECK_EQ(kept(), 3 * MIB);
    ipc_blocks_release();
    CHECK_EQ(kept(), 0);
}

static void test_small_and_huge_buffers_are_not_kept(void)
{
    ipc_blocks_release();
    void *small = ipc_block_get(IPC_BLOCK_MIN - 4096);
    memset(small, 3, IPC_BLOCK_MIN - 4096);
    ipc_block_put(small, IPC_BLOCK_MIN - 4096);
    CHECK_EQ(kept(), 0);
    size_t huge = IPC_BLOCKS_KEPT_MAX / 4 + 4096;
    void *h = ipc_block_get(huge);
    ipc_block_put(h, huge);
    CHECK_EQ(kept(), 0);
    ipc_block_put(NULL, MIB); /* harmless */
}

static void test_what_is_kept_is_bounded_and_the_oldest_goes(void)
{
    ipc_blocks_release();
    enum { N = (int)(IPC_BLOCKS_KEPT_MAX / (4 * MIB)) + 8 };
    void *p[N];
    for (int i = 0; i < N; i++)
        p[i] = ipc_block_get(4 * MIB);
    for (int i = 0; i < N; i++)
        ipc_block_put(p[i], 4 * MIB);
    unsigned count = 0;
    CHECK_EQ(ipc_blocks_kept(&count), IPC_BLOCKS_KEPT_MAX);
    CHECK_EQ(count, IPC_BLOCKS_KEPT_MAX / (4 * MIB));
    /* The newest are kept: taking every kept one returns exactly them. */
    void *got[N];
    for (unsigned i = 0; i < count; i++)
        got[i] = ipc_block_get(4 * MIB);
    CHECK_EQ(kept(), 0);
    for (int j = 0; j < N; j++) {
        bool returned = false;
        for (unsigned i = 0; i < count; i++)
            returned |= got[i] == p[j];
        CHECK(returned == (j >= N - (int)count));
    }
    for (unsigned i = 0; i < count; i++)
        ipc_block_put(got[i], 4 * MIB);
    ipc_blocks_release();
}

static void test_idle_buffers_are_trimmed(void)
{
    ipc_blocks_release();
    void *a = ipc_block_get(MIB);
    uint64_t before = clock_ns();
    ipc_block_put(a, MIB);
    ipc_blocks_trim(before); /* a trim that started earlier leaves it */
    CHECK_EQ(kept(), MIB);
    ipc_blocks_trim(clock_ns() + IPC_BLOCKS_IDLE_NS / 2);
    CHECK_EQ(kept(), MIB);
    ipc_blocks_trim(clock_ns() + IPC_BLOCKS_IDLE_NS + 1);
    CHECK_EQ(kept(), 0);
}

int main(void)
{
    test_sizes_round_to_pages();
    test_a_freed_buffer_serves_the_next_of_its_size();
    test_another_size_is_not_served_from_the_cache();
    test_small_and_huge_buffers_are_not_kept();
    test_what_is_kept_is_bounded_and_the_oldest_goes();
    test_idle_buffers_are_trimmed();
    return check_report("test_ipc_blocks");
}
