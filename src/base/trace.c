/*
 * trace.c — per-thread append buffers for the event trace, and the file.
 *
 * A thread's first record registers its buffer (the one lock, once per
 * thread); after that a record is a bounds check and a 32-byte store.
 * Buffers grow by chunks from mmap, not malloc: faults are recorded inside
 * the SIGSEGV handler, where malloc may not be called.
 *
 * The file: struct trace_file_hdr, then for each thread a struct
 * trace_file_thread and its records in the order it made them.
 */
#include "base/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"

#define CHUNK_RECS 32768 /* 1 MiB */

struct chunk {
    struct chunk    *next;
    uint32_t         used;
    struct trace_rec recs[CHUNK_RECS];
};

struct thread_buf {
    struct thread_buf *next;  /* all threads' buffers */
    struct chunk      *first, *cur;
    uint32_t           index;
    uint32_t           role;  /* thread_role() */
};

#define TRACE_MAGIC "DSMTRACE"
#define TRACE_VERSION 1
#define TRACE_NAME 24

struct trace_file_hdr {
    char     magic[8];
    uint32_t version, rank, nodes, nthreads;
    uint32_t page_size, datagram;
    uint64_t delay_ns;
    char     protocol[16];
    uint32_t ntypes, name_len;
    char     names[TRACE_TYPES][TRACE_NAME];
};

struct trace_file_thread {
    uint32_t index, role;
    uint64_t count;
};

DSM_STATE bool trace_enabled;

static DSM_STATE struct {
    pthread_mutex_t    lock;
    struct thread_buf *threads;
    uint32_t           nthreads;
    char              *path;
    struct trace_info  info;
    char               protocol[16];
} tr = {.lock = PTHREAD_MUTEX_INITIALIZER};

static __thread struct thread_buf *mine;

static struct chunk *chunk_new(void)
{
    void *p = mmap(NULL, sizeof(struct chunk), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    struct chunk *c = p; /* zeroed by the kernel */
    return c;
}

/* A thread's first record. It takes a lock, so it must not run in the
 * SIGSEGV handler: faults happen on the application thread, which
 * trace_start registers before any can be recorded. */
static struct thread_buf *register_thread(uint32_t role)
{
    struct chunk *c = chunk_new();
    struct thread_buf *b = c ? mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (b == MAP_FAILED)
        log_fatal("out of memory for the trace (DSM_TRACE)");
    b->first = b->cur = c;
    b->role = role;
    pthread_mutex_lock(&tr.lock);
    b->index = tr.nthreads++;
    b->next = tr.threads;
    tr.threads = b;
    pthread_mutex_unlock(&tr.lock);
    return b;
}

/* A thread's role in the file: 0 the node's first application thread (the
 * one that started the trace), 1 a thread of dsm's own (the service
 * thread), 1 + N application thread N >= 1 (dsmrun --threads, OpenMP's
 * team, the program's pthreads): dsm-trace names their tracks by it. */
static uint32_t thread_role(void)
{
    if (!smp_is_application())
        return 1;
    return smp_index() > 0 ? 1u + (uint32_t)smp_index() : 0;
}

void trace_put(enum trace_kind kind, unsigned sub, int peer, uint64_t arg, uint64_t t0,
               uint64_t t1, uint64_t t2)
{
    struct thread_buf *b = mine;
    if (!b)
        b = mine = register_thread(thread_role());
    struct chunk *c = b->cur;
    if (c->used == CHUNK_RECS) {
        struct chunk *n = chunk_new();
        if (!n)
            log_fatal("out of memory for the trace (DSM_TRACE)");
        c->next = n;
        b->cur = c = n;
    }
    c->recs[c->used++] = (struct trace_rec){.kind = (uint8_t)kind, .sub = (uint8_t)sub,
                                            .peer = (uint16_t)peer, .arg = (uint32_t)arg,
                                            .t0 = t0, .t1 = t1, .t2 = t2};
}

int trace_start(const char *path, const struct trace_info *info)
{
    size_t n = strlen(path) + 16;
    tr.path = malloc(n);
    if (!tr.path)
        return -ENOMEM;
    snprintf(tr.path, n, "%s.%d", path, info->rank);
    tr.info = *info;
    snprintf(tr.protocol, sizeof tr.protocol, "%s", info->protocol ? info->protocol : "");
    tr.info.protocol = tr.protocol;
    /* Fail now, not after the run, if the file cannot be written. */
    FILE *f = fopen(tr.path, "w");
    if (!f)
        return -errno;
    fclose(f);
    mine = register_thread(0);
    trace_enabled = true;
    trace_mark(TRACE_MARK_START);
    return 0;
}

static uint64_t count_of(const struct thread_buf *b)
{
    uint64_t n = 0;
    for (const struct chunk *c = b->first; c; c = c->next)
        n += c->used;
    return n;
}

int trace_finish(const char *(*type_name)(unsigned type))
{
    if (!trace_enabled)
        return 0;
    trace_mark(TRACE_MARK_FINISH);
    trace_enabled = false;
    struct trace_file_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, TRACE_MAGIC, 8);
    h.version = TRACE_VERSION;
    h.rank = (uint32_t)tr.info.rank;
    h.nodes = (uint32_t)tr.info.nodes;
    h.nthreads = tr.nthreads;
    h.page_size = tr.info.page_size;
    h.datagram = tr.info.datagram;
    h.delay_ns = tr.info.delay_ns;
    memcpy(h.protocol, tr.protocol, sizeof h.protocol);
    h.ntypes = TRACE_TYPES;
    h.name_len = TRACE_NAME;
    for (unsigned t = 0; t < TRACE_TYPES; t++) {
        const char *name = type_name ? type_name(t) : NULL;
        if (name)
            snprintf(h.names[t], TRACE_NAME, "%s", name);
    }
    int rc = 0;
    FILE *f = fopen(tr.path, "w");
    if (!f)
        return -errno;
    if (fwrite(&h, sizeof h, 1, f) != 1)
        rc = -EIO;
    /* In the order the threads began recording: the application's first. */
    for (uint32_t i = 0; i < tr.nthreads && !rc; i++) {
        struct thread_buf *b = tr.threads;
        while (b && b->index != i)
            b = b->next;
        struct trace_file_thread th = {.index = b->index, .role = b->role, .count = count_of(b)};
        if (fwrite(&th, sizeof th, 1, f) != 1)
            rc = -EIO;
        for (struct chunk *c = b->first; c && !rc; c = c->next)
            if (c->used && fwrite(c->recs, sizeof c->recs[0], c->used, f) != c->used)
                rc = -EIO;
    }
    if (fclose(f) && !rc)
        rc = -errno;
    for (struct thread_buf *b = tr.threads, *next; b; b = next) {
        next = b->next;
        for (struct chunk *c = b->first, *cn; c; c = cn) {
            cn = c->next;
            munmap(c, sizeof *c);
        }
        munmap(b, sizeof *b);
    }
    tr.threads = NULL;
    tr.nthreads = 0;
    mine = NULL;
    free(tr.path);
    tr.path = NULL;
    return rc;
}
