/*
 * ucx_rma.c — one-sided reads of peers' memory over UCX (net_expose,
 * net_get): the network copies, the peer's CPU does nothing.
 *
 * Before the start the layers above ask for ranges of memory (hlrc: a word
 * per page, and a pool of published pages; coherence/oneside.c). At the
 * start ucx_start.c has each range allocated here by UCX itself (ucp_mem_map
 * with UCP_MEM_MAP_ALLOCATE: sysv or posix shared memory first, which
 * UCX's shared-memory transports read with a plain copy in the reader's
 * process, and which RDMA transports register) and its remote key packed
 * (ucp_rkey_pack) into the message that carries the worker address to
 * every node; each node unpacks its peers' keys once its endpoints exist
 * (ucp_ep_rkey_unpack). Memory dsm already has (the region's frames, a
 * memfd) is not what UCX 1.13 reads one-sided on one host: its shared-
 * memory transports reach only what they allocated, and a get of other
 * memory is emulated with active messages the peer's worker serves
 * (measured: 52 µs a read fault, against 15 over UDP). A range UCX cannot
 * provide is left out, and reads of it are refused (-ENOTSUP): the caller
 * asks with a message instead.
 *
 * Which peers are read one-sided (DSM_NET_ONE_SIDED): on this host UCX
 * copies from the peer's shared memory (no system call, no wake-up of the
 * peer); between hosts it is RDMA on InfiniBand or RoCE, but over tcp
 * UCX 1.13 emulates a get with active messages, three of which (a page
 * and its word twice) cost more than dsm's own request and reply. UCX does
 * not say which it chose, so `auto` reads co-located peers alone, and of
 * those only the ones whose memory UCX maps here (shared memory), and `on`
 * every peer, for a user who knows the network does RDMA.
 *
 * A get waits for its completion, progressing the worker under ucx.c's
 * lock, released between rounds so that the service thread and senders
 * go on. A peer that fails meanwhile, or stays silent past
 * DSM_PEER_TIMEOUT with the get unanswered, ends the job naming it.
 */
#include "net/ucx.h"

#include <errno.h>
#include <sys/mman.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/state.h"

static DSM_STATE struct {
    struct { void *base; size_t len; } range[NET_EXPOSE_MAX]; /* base: once allocated */
    int  nranges;
    int  one_sided; /* enum net_one_sided */
} rma_want;

int ucx_rma_expose(size_t len)
{
    if (rma_want.nranges == NET_EXPOSE_MAX || !len)
        return -EINVAL;
    rma_want.range[rma_want.nranges].len = len;
    return rma_want.nranges++;
}

void *ucx_rma_exposed(int range)
{
    return range >= 0 && range < rma_want.nranges ? rma_want.range[range].base : NULL;
}

void ucx_rma_configure(int one_sided) { rma_want.one_sided = one_sided; }

bool ucx_rma_wanted(void) { return rma_want.nranges && rma_want.one_sided != NET_ONE_SIDED_OFF; }

#ifndef DSM_HAVE_UCX

bool ucx_rma_one_sided(int peer)
{
    (void)peer;
    return false;
}

int ucx_rma_get(int peer, int range, size_t offset, void *dst, size_t len)
{
    (void)peer, (void)range, (void)offset, (void)dst, (void)len;
    return -ENOTSUP;
}

#else /* DSM_HAVE_UCX */

#include <dlfcn.h>

/* libucp is loaded already (ucx.c, RTLD_GLOBAL): these are looked up in it. */
static DSM_STATE struct {
    ucs_status_t (*mem_map)(ucp_context_h, const ucp_mem_map_params_t *, ucp_mem_h *);
    ucs_status_t (*mem_query)(const ucp_mem_h, ucp_mem_attr_t *);
    ucs_status_t (*rkey_pack)(ucp_context_h, ucp_mem_h, void **, size_t *);
    void (*rkey_buffer_release)(void *);
    ucs_status_t (*ep_rkey_unpack)(ucp_ep_h, const void *, ucp_rkey_h *);
    ucs_status_t (*rkey_ptr)(ucp_rkey_h, uint64_t, void **);
    ucs_status_ptr_t (*get_nbx)(ucp_ep_h, void *, size_t, uint64_t, ucp_rkey_h,
                                const ucp_request_param_t *);
    unsigned (*worker_progress)(ucp_worker_h);
    ucs_status_t (*request_check_status)(void *);
    void (*request_free)(void *);
} ur;

/* A peer's range, as its start message described it. */
struct remote_range {
    uint64_t   base, len;
    ucp_rkey_h rkey;  /* NULL: not readable */
    const char *here; /* the range mapped here (ucp_rkey_ptr: shared memory), or NULL */
    uint8_t    *mapped; /* of `here`, per MAP_CHUNK: its page-table entries made */
};

/* A range mapped here gets its page-table entries a chunk at a time: the
 * first read of an OS page of another process's shared memory is a page
 * fault, 1-1.5 µs here (each exits to the hypervisor), twice for a page of
 * 8 KiB — half of a one-sided read fault. One MADV_POPULATE_READ makes a
 * chunk's entries at once, its later pages then costing nothing (the
 * pool's slots are handed out from the bottom, so a chunk read once is
 * read again). The pages the peer has not written yet are allocated
 * (shared memory: zeroes) by it: at most a chunk ahead. */
#define MAP_CHUNK (256u << 10)

static DSM_STATE struct {
    bool                 loaded;
    bool                *readable;  /* per peer: one-sided reads allowed */
    struct remote_range *peer;      /* nodes x NET_EXPOSE_MAX */
} rma;

/* A range's entry in the start message: where it lies at its node, and
 * its packed key (key_len bytes follow). */
struct packed_range {
    uint64_t base, len;
    uint32_t key_len, pad;
};

static bool load_symbols(void)
{
#define SYM(field, name)                                   \
    do {                                                   \
        *(void **)&ur.field = dlsym(RTLD_DEFAULT, name);   \
        if (!ur.field)                                     \
            return false;                                  \
    } while (0)
    SYM(mem_map, "ucp_mem_map");
    SYM(mem_query, "ucp_mem_query");
    SYM(rkey_pack, "ucp_rkey_pack");
    SYM(rkey_buffer_release, "ucp_rkey_buffer_release");
    SYM(ep_rkey_unpack, "ucp_ep_rkey_unpack");
    SYM(rkey_ptr, "ucp_rkey_ptr");
    SYM(get_nbx, "ucp_get_nbx");
    SYM(worker_progress, "ucp_worker_progress");
    SYM(request_check_status, "ucp_request_check_status");
    SYM(request_free, "ucp_request_free");
#undef SYM
    return true;
}

size_t ucx_rma_pack(ucp_context_h ctx, void **blob)
{
    *blob = NULL;
    if (!ucx_rma_wanted())
        return 0;
    if (!load_symbols()) {
        log_warn("DSM_NET_ONE_SIDED: this libucp lacks the RMA calls; page fetches stay messages");
        return 0;
    }
    rma.loaded = true;
    size_t len = sizeof(uint32_t);
    unsigned char *out = malloc(len);
    if (!out)
        log_fatal("out of memory starting the UCX transport");
    uint32_t n = (uint32_t)rma_want.nranges;
    memcpy(out, &n, sizeof n);
    for (int i = 0; i < rma_want.nranges; i++) {
        ucp_mem_map_params_t mp = {
            .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                          UCP_MEM_MAP_PARAM_FIELD_FLAGS,
            .address = NULL,
            .length = rma_want.range[i].len,
            .flags = UCP_MEM_MAP_ALLOCATE,
        };
        ucp_mem_h memh;
        ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH};
        void *key = NULL;
        size_t key_len = 0;
        /* Allocated for the job's life: the process ends with it. */
        ucs_status_t st = ur.mem_map(ctx, &mp, &memh);
        if (st == UCS_OK)
            st = ur.mem_query(memh, &attr);
        if (st == UCS_OK && attr.length < rma_want.range[i].len)
            st = UCS_ERR_NO_MEMORY;
        if (st == UCS_OK)
            st = ur.rkey_pack(ctx, memh, &key, &key_len);
        if (st != UCS_OK) {
            log_warn("DSM_NET_ONE_SIDED: UCX cannot provide %zu MiB of memory for one-sided "
                     "reads (%s); page fetches from this node stay messages",
                     rma_want.range[i].len >> 20, ucx_status_string(st));
            key_len = 0;
        } else {
            rma_want.range[i].base = attr.address;
        }
        struct packed_range pr = {.base = (uintptr_t)attr.address,
                                  .len = rma_want.range[i].len, .key_len = (uint32_t)key_len};
        unsigned char *grown = realloc(out, len + sizeof pr + key_len);
        if (!grown)
            log_fatal("out of memory starting the UCX transport");
        out = grown;
        memcpy(out + len, &pr, sizeof pr);
        if (key_len)
            memcpy(out + len + sizeof pr, key, key_len);
        len += sizeof pr + key_len;
        if (key)
            ur.rkey_buffer_release(key);
    }
    *blob = out;
    return len;
}

void ucx_rma_unpack(int peer, bool here, ucp_ep_h ep, const void *blob, size_t len)
{
    int nodes = job()->nodes;
    if (!rma.peer) {
        rma.peer = calloc((size_t)nodes * NET_EXPOSE_MAX, sizeof *rma.peer);
        rma.readable = calloc((size_t)nodes, sizeof *rma.readable);
        if (!rma.peer || !rma.readable)
            log_fatal("out of memory starting the UCX transport");
    }
    if (!rma.loaded || !len)
        return; /* nothing of ours to read with, or nothing of theirs to read */
    const unsigned char *p = blob, *end = p + len;
    uint32_t n;
    if (len < sizeof n)
        log_fatal("node %d sent malformed memory keys at start; protocol error", peer);
    memcpy(&n, p, sizeof n);
    p += sizeof n;
    if (n > NET_EXPOSE_MAX)
        log_fatal("node %d sent malformed memory keys at start; protocol error", peer);
    bool all_mapped = true; /* every range with a key is mapped here */
    for (uint32_t i = 0; i < n; i++) {
        struct packed_range pr;
        if ((size_t)(end - p) < sizeof pr)
            log_fatal("node %d sent malformed memory keys at start; protocol error", peer);
        memcpy(&pr, p, sizeof pr);
        p += sizeof pr;
        if ((size_t)(end - p) < pr.key_len || pr.pad || pr.base + pr.len < pr.base)
            log_fatal("node %d sent malformed memory keys at start; protocol error", peer);
        struct remote_range *r = &rma.peer[(size_t)peer * NET_EXPOSE_MAX + i];
        r->base = pr.base;
        r->len = pr.len;
        if (pr.key_len && ur.ep_rkey_unpack(ep, p, &r->rkey) != UCS_OK)
            r->rkey = NULL; /* no transport to it can read this range: messages */
        /* Shared memory that UCX can map here (sysv, posix, xpmem) is read
         * with plain loads, as UCX's own get would copy it, without a
         * request and its progress; RDMA has no such pointer. */
        void *ptr;
        if (r->rkey && ur.rkey_ptr(r->rkey, pr.base, &ptr) == UCS_OK) {
            r->mapped = calloc(pr.len / MAP_CHUNK + 1, 1);
            r->here = r->mapped ? ptr : NULL;
        }
        if (r->rkey && !r->here)
            all_mapped = false;
        p += pr.key_len;
    }
    if (p != end)
        log_fatal("node %d sent malformed memory keys at start; protocol error", peer);
    /* `auto`: a co-located peer whose memory UCX maps here. Sharing the
     * host is not enough: where UCX reaches it over tcp alone (UCX_TLS
     * without shared memory; network namespaces, which share the host's
     * name and boot id), a get is emulated with active messages, and LU
     * 2560 between two namespaces ran 3x as long as with messages. */
    rma.readable[peer] = rma_want.one_sided == NET_ONE_SIDED_ON ||
                         (rma_want.one_sided == NET_ONE_SIDED_AUTO && here && all_mapped);
}

bool ucx_rma_one_sided(int peer)
{
    return rma.readable && peer >= 0 && peer < job()->nodes && rma.readable[peer];
}

int ucx_rma_get(int peer, int range, size_t offset, void *dst, size_t len)
{
    if (!ucx_rma_one_sided(peer) || range < 0 || range >= NET_EXPOSE_MAX)
        return -ENOTSUP;
    struct remote_range *r = &rma.peer[(size_t)peer * NET_EXPOSE_MAX + range];
    if (!r->rkey)
        return -ENOTSUP;
    if (offset > r->len || len > r->len - offset)
        return -EINVAL;
    if (r->here) {
        /* The peer's memory mapped here: the copy is the get. The fences
         * keep the caller's reads in the order it made them (oneside.c's
         * word, page, word). */
        for (size_t c = offset / MAP_CHUNK; c <= (offset + len - 1) / MAP_CHUNK; c++)
            if (!r->mapped[c]) {
                size_t end = (c + 1) * (size_t)MAP_CHUNK;
                /* A kernel without it (before 5.14) faults page by page. */
                madvise((void *)(r->here + c * (size_t)MAP_CHUNK),
                        (end < r->len ? end : r->len) - c * (size_t)MAP_CHUNK, MADV_POPULATE_READ);
                r->mapped[c] = 1;
            }
        atomic_thread_fence(memory_order_acquire);
        memcpy(dst, r->here + offset, len);
        atomic_thread_fence(memory_order_acquire);
        return 0;
    }
    ucp_request_param_t prm = {.op_attr_mask = 0};
    ucp_worker_h w = ucx_worker_lock();
    ucs_status_ptr_t req = ur.get_nbx(ucx_ep(peer), dst, len, r->base + offset,
                                      r->rkey, &prm);
    ucs_status_t st = UCS_OK;
    uint64_t start = clock_ns(), spins = 0;
    if (UCS_PTR_IS_ERR(req)) {
        st = UCS_PTR_STATUS(req);
    } else if (req) {
        while ((st = ur.request_check_status(req)) == UCS_INPROGRESS) {
            if (ur.worker_progress(w))
                continue;
            /* Nothing moved: let the service thread and senders in, and
             * look at the peer and the time now and then. */
            ucx_worker_unlock();
            if (++spins % 64 == 0) {
                int failed = ucx_peer_failed(peer);
                if (failed)
                    ucx_peer_lost(peer, failed, " during a one-sided read");
                if (clock_ns() - start > ucx_peer_timeout_ns())
                    log_fatal("peer %d did not answer a one-sided read for %.1f s over UCX; "
                              "ending the job", peer, (double)(clock_ns() - start) / 1e9);
            }
            w = ucx_worker_lock();
        }
        ur.request_free(req);
    }
    ucx_worker_unlock();
    if (st != UCS_OK)
        ucx_peer_lost(peer, st, " during a one-sided read");
    return 0;
}

#endif /* DSM_HAVE_UCX */
