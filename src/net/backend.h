/*
 * backend.h — what a transport does for net.h: the calls whose work
 * differs between UDP (transport.c, service.c, window.c, udp.c) and UCX
 * (ucx*.c). net.h's functions turn to the backend the job started
 * (net_backend); nothing else in src/net asks which one it is, as the
 * coherence layer never asks which protocol runs (coherence_ops).
 *
 * What both transports share stays out of the table: what they ask of
 * supervision (supervisor.c), the settings, the service plan, the
 * emulated link.
 */
#ifndef DSM_NET_BACKEND_H
#define DSM_NET_BACKEND_H

#include "net/net.h"

#pragma GCC visibility push(hidden)

struct net_backend {
    const char *name; /* as DSM_NET spells it */
    /* net_send_ref, its checks of a forked child done. */
    int  (*send_ref)(int peer, const struct iovec *iov, int iovcnt, const void *lent,
                     size_t lent_len, struct net_ref *ref);
    int  (*wait)(bool (*done)(void *), void *arg, uint64_t deadline_ns);
    void (*notify)(void);
    void (*timer_at)(uint64_t t);
    /* Sends held back and then sent together; NULL: each goes at once
     * (UCX's shared-memory transports cost no system call a send). */
    void (*batch_begin)(void);
    void (*batch_end)(void);
    void (*send_witness)(int to, bool question, const void *line, size_t len);
    void (*finish)(void);
    /* Best effort, from any thread, the caller maybe holding the
     * transport's locks: the job is ending. */
    void (*abort_peers)(const char *reason);
    /* One-sided access; NULL: none (every peer's pages come by message). */
    void *(*exposed)(int range);
    bool (*one_sided)(int peer);
    int  (*get)(int peer, int range, size_t offset, void *dst, size_t len);
};

extern const struct net_backend udp_backend, ucx_backend;

/* The job's transport: UDP's until ucx_start has carried the job over
 * (it starts on UDP, which exchanges the UCX addresses). */
extern const struct net_backend *net_backend;

#pragma GCC visibility pop
#endif
