/*
 * bootstrap.h — how a node learns who it is, the job's key and its peers.
 *
 * Three ways, chosen by the environment the process starts in:
 *   dsmrun (DSM_RANK set): the contract of base/launch.h — an inherited socket,
 *     the key through a pipe (boot_env.c);
 *   PMIx (PMIX_RANK and PMIX_NAMESPACE set: srun, mpirun): rank and size
 *     from the PMIx server, addresses and the key exchanged through it
 *     (boot_pmix.c);
 *   neither: a 1-node job on a socket of its own (boot_env.c).
 * Each fills rank, nodes, fd, peers, job_id and key of a net_params; any
 * failure ends the process with one line saying what and where.
 */
#ifndef DSM_RUNTIME_BOOTSTRAP_H
#define DSM_RUNTIME_BOOTSTRAP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net.h"
#include "base/config.h"

/* Joins the job. *np->peers is malloc'd: boot_done frees it. */
void boot_join(struct net_params *np, const struct dsm_config *cfg, int *argc, char ***argv);
void boot_done(struct net_params *np);

/* Nanoseconds from the job's launch (dsmrun's start, or this process's
 * start under PMIx) to now. */
uint64_t boot_since_launch_ns(void);

/* The datagram payload for the socket's interface: its MTU less the IP,
 * UDP and dsm headers; 61440 on the loopback. */
size_t boot_datagram(int fd);

/* boot_env.c */
int  boot_env_present(void);
void boot_env(struct net_params *np);
void boot_solo(struct net_params *np);
/* Tells the launcher BOOT_LIFE_STARTED or BOOT_LIFE_FINISHED (base/launch.h),
 * where it gave this node a life pipe. */
void boot_tell_launcher(char what);
/* The socket to the launcher's agent (BOOT_ENV_ARBITER_FD); -1: none. */
int  boot_arbiter_fd(void);

/* boot_pmix.c */
int  boot_pmix_present(void);
void boot_pmix(struct net_params *np, const struct dsm_config *cfg, int *argc, char ***argv);

/* boot_net.c: a UDP socket bound to addr (port 0), with large buffers;
 * returns the fd and fills *bound, or -errno. */
int  boot_bind(struct in_addr addr, struct sockaddr_in *bound);
/* The address to bind under PMIx: DSM_NET_BIND (an address or an interface
 * name), else the loopback when all nodes share this host, else the
 * address toward the launch host where Slurm names it, else the address
 * of the interface holding the default route, else that of the first
 * interface that is up. 0 or -errno; err says why. */
int  boot_pick_addr(const char *want, int all_local, struct in_addr *out, char *err, size_t errlen);
#endif
