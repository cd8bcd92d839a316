/*
 * ucx.h — the second transport: net.h's messages as UCX active messages
 * (ucx.c). Private to src/net: net.h's functions turn here when the job
 * chose DSM_NET=ucx, and UDP's otherwise.
 */
#ifndef DSM_NET_UCX_H
#define DSM_NET_UCX_H

#include "net/net.h"

#pragma GCC visibility push(hidden)

/* Set once the UCX transport has started: net.h's calls go to ucx_*. */
extern bool net_over_ucx;

/* Starts the UDP transport for the job's start alone (the worker
 * addresses travel over it, authenticated with the job key), finishes it,
 * and from then on carries every message over UCX. 0 or -errno; a
 * failure that has a reason of its own (no UCX in this build, no libucp)
 * ends the job with one line saying so. */
int  ucx_start(const struct net_params *p, const struct net_rx_ops *ops, void *ctx);
int  ucx_send_ref(int peer, const struct iovec *iov, int iovcnt, const void *lent,
                  size_t lent_len, struct net_ref *ref);
int  ucx_wait(bool (*done)(void *), void *arg, uint64_t deadline_ns);
void ucx_notify(void);
void ucx_timer_at(uint64_t t);
void ucx_finish(void);
void ucx_abort_peers(const char *reason);

/* The UDP transport's own start (transport.c). */
int  udp_start(const struct net_params *p, const struct net_rx_ops *ops, void *ctx);

#pragma GCC visibility pop
#endif
