/*
 * globals.c — the start of shared globals (mem/globals.c maps them): every
 * node's copy of the globals' pages begins as the master's.
 *
 * The protocols assume what a fresh allocation gives them: a page's content
 * is the same on every node until someone writes it (lrc, homeless, fetches
 * nothing for a page nobody wrote). For the globals that first content is
 * the master's values at startup, not zeros, so the master sends its
 * non-zero pages to every node once, before anything else it sends; a
 * worker writes them into its system view and returns from dsm_startup
 * only then. A worker's later messages about those pages all come after
 * (per-peer order), and no other worker can touch them before its own
 * startup is over.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "coherence/coherence.h"
#include "ipc/ipc.h"
#include "mem/mem.h"
#include "runtime/runtime.h"

static DSM_STATE struct {
    pthread_mutex_t lock;
    bool            arrived;
} first = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool page_is_zero(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i += sizeof(uint64_t))
        if (*(const uint64_t *)(p + i))
            return false;
    return true;
}

/* At a worker: u32 count, count u32 page numbers, then their contents. */
static void on_globals(int src, const void *msg, size_t len)
{
    if (src != 0 || job()->rank == 0)
        log_fatal("node %d sent the globals' first contents; only the master may", src);
    uint32_t count;
    const unsigned char *p = ipc_body(src, msg, len, &count, sizeof count, &len, "globals message");
    p -= sizeof count; /* p and len: the whole body */
    len += sizeof count;
    /* The master's pre-start blocks (mem/prestart.c) follow the globals
     * and may take more pages than this node's did: its arena bounds them. */
    if (count > mem.arena_pages || len != sizeof count + (size_t)count * (sizeof(uint32_t) + mem.page_size))
        log_fatal("the master's globals differ in size from this node's: is every node running "
                  "the same executable?");
    const unsigned char *data = p + sizeof count + (size_t)count * sizeof(uint32_t);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t page;
        memcpy(&page, p + sizeof count + i * sizeof page, sizeof page);
        if (page >= mem.arena_pages)
            log_fatal("the master sent globals page %u, beyond its arena of %zu pages", page,
                      mem.arena_pages);
        if (page >= mem.gpages + mem.epages) /* opened with the globals after the job */
            mem.epages = page + 1 - mem.gpages;
        memcpy(mem_sys_fill(page, 1), data + (size_t)i * mem.page_size, mem.page_size);
    }
    pthread_mutex_lock(&first.lock);
    first.arrived = true;
    pthread_mutex_unlock(&first.lock);
    ipc_notify();
}

static bool arrived(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&first.lock);
    bool ok = first.arrived;
    pthread_mutex_unlock(&first.lock);
    return ok;
}

void globals_start(void)
{
    ipc_register(RUNTIME_GLOBALS, "GLOBALS", on_globals, NULL);
}

void globals_sync(void)
{
    if (!mem.gpages || job()->nodes == 1)
        return;
    if (job()->rank != 0) {
        ipc_wait(arrived, NULL, 0);
        return;
    }
    struct buf b = {0};
    uint32_t count = 0;
    buf_put(&b, &count, sizeof count);
    for (uint32_t page = 0; page < mem.gpages + mem.epages; page++)
        if (!page_is_zero(mem_sys(page), mem.page_size)) {
            buf_put(&b, &page, sizeof page);
            count++;
        }
    memcpy(b.p, &count, sizeof count);
    for (uint32_t page = 0; page < mem.gpages + mem.epages; page++)
        if (!page_is_zero(mem_sys(page), mem.page_size))
            buf_put(&b, mem_sys(page), mem.page_size);
    for (int node = 1; node < job()->nodes; node++)
        ipc_send(node, RUNTIME_GLOBALS, 0, b.p, b.len);
    buf_free(&b);
}
