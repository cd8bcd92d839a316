/*
 * ucx.h — the second transport: net.h's messages as UCX active messages
 * (ucx.c). Private to src/net: net.h's functions turn here when the job
 * chose DSM_NET=ucx, and UDP's otherwise.
 */
#ifndef DSM_NET_UCX_H
#define DSM_NET_UCX_H

#include "net/net.h"

#ifdef DSM_HAVE_UCX
#include <ucp/api/ucp.h> /* before the pragma: UCX's (and libc's) declarations keep their visibility */
#endif

#pragma GCC visibility push(hidden)

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
/* net_send_witness over UCX (UCX_LOOK, UCX_SEEN). */
void ucx_send_witness(int to, bool question, const void *line, size_t len);

/* ---- the UCX settings dsm chooses (ucx_settings.c) ---- */

/* One setting, as ucp_config_modify takes it: the name without "UCX_". */
#define UCX_SETTINGS_MAX 4
struct ucx_setting {
    const char *name;
    char        value[512];
};
/* The settings dsm chooses for this job's UCX transport (p: its peers'
 * addresses; page_size: the coherence unit), leaving out any the user's
 * environment sets. Returns how many went into out. */
int ucx_choose_settings(const struct net_params *p, size_t page_size,
                        struct ucx_setting out[UCX_SETTINGS_MAX]);

/* ---- one-sided access (ucx_rma.c), over ucx.c's worker ---- */

/* Before the start (net_expose): ranges to register; the options. */
int  ucx_rma_expose(size_t len);
void *ucx_rma_exposed(int range);
void ucx_rma_configure(int one_sided);
bool ucx_rma_wanted(void);
/* Without UCX in the build, or over UDP: nothing is readable. */
bool ucx_rma_one_sided(int peer);
int  ucx_rma_get(int peer, int range, size_t offset, void *dst, size_t len);

#ifdef DSM_HAVE_UCX
/* At start, in ucx_start.c: allocates the exposed ranges and packs their
 * keys into *blob (malloc'ed; its length returned, 0 and NULL when none);
 * then, with every endpoint made, unpacks each peer's (`here`: on this
 * host). */
size_t ucx_rma_pack(ucp_context_h ctx, void **blob);
void   ucx_rma_unpack(int peer, bool here, ucp_ep_h ep, const void *blob, size_t len);
/* ucx.c's worker for a caller outside it: under its lock (every call into
 * UCP), released with ucx_worker_unlock, which also wakes the service
 * thread for messages that progress made arrive. */
ucp_worker_h ucx_worker_lock(void);
void         ucx_worker_unlock(void);
/* A peer's endpoint failure (a ucs_status_t; 0: none), and its name. */
int          ucx_peer_failed(int peer);
/* Ends the job for peer's failure (status, found `during` what: "" or
 * " during ..."), once its launcher has had the time to name the cause
 * (ucx_end.c, verdict_due); a launcher's SIGTERM ends it sooner. */
__attribute__((noreturn)) void ucx_peer_lost(int peer, int status, const char *during);
ucp_ep_h     ucx_ep(int peer);
const char  *ucx_status_string(int status);
uint64_t     ucx_peer_timeout_ns(void);

/* ---- UCX's log, through dsm's (ucx_log.c) ---- */

/* Before libucp is loaded: UCX's log level, unless the user set it. */
void   ucx_log_before_load(void);
/* Once loaded (lib: dlopen's handle): UCX's log lines come to dsm. */
void   ucx_log_attach(void *lib);
/* The first error UCX logged, made fit for a terminal, into out (size >
 * 0); its length, 0 when none. */
size_t ucx_log_first_error(char *out, size_t size);
#endif

/* The UDP transport's own start (transport.c). */
int  udp_start(const struct net_params *p, const struct net_rx_ops *ops, void *ctx);

#pragma GCC visibility pop
#endif
