/*
 * blocks.h — page-aligned buffers for large messages, kept for reuse
 * (blocks.c says why).
 */
#ifndef DSM_IPC_BLOCKS_H
#define DSM_IPC_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

/* Smaller buffers come from malloc's heap, which already reuses them. */
#define IPC_BLOCK_MIN (64u << 10)

/* What is kept: at most this many bytes (no single buffer above a quarter
 * of it), each for at most IPC_BLOCKS_IDLE_NS unused. */
#define IPC_BLOCKS_KEPT_MAX (128ull << 20)
#define IPC_BLOCKS_IDLE_NS  (10ull * 1000000000)

/* len rounded up to whole pages (one page for 0). */
size_t ipc_block_bytes(size_t len);

/* A page-aligned buffer of at least len bytes; ends the job when memory is
 * out. Give it back with ipc_block_put and the same len. */
void *ipc_block_get(size_t len);
void  ipc_block_put(void *p, size_t len);

/* Gives back kept buffers idle for a while (from the service thread). */
void  ipc_blocks_trim(uint64_t now_ns);

/* Bytes kept now, and how many buffers (count may be NULL). */
size_t ipc_blocks_kept(unsigned *count);

/* Gives back every kept buffer (at finish). */
void  ipc_blocks_release(void);

#endif
