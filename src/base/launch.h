/*
 * launch.h — what dsmrun hands each node (the launcher's contract with
 * a node, below every layer: the transport's supervision reads it too).
 *
 * dsmrun binds one UDP socket per node itself (port 0: the kernel picks, so
 * two jobs on one machine never collide), so every node knows every peer's
 * address before it starts and no rendezvous is needed. The socket is
 * inherited; the job key travels through a pipe, never the environment
 * (another user could read /proc/PID/environ of a setuid child; a pipe is
 * private to the process).
 */
#ifndef DSM_BASE_LAUNCH_H
#define DSM_BASE_LAUNCH_H

#define BOOT_ENV_RANK    "DSM_RANK"     /* decimal rank, 0 .. nodes-1 */
#define BOOT_ENV_NODES   "DSM_NODES"    /* decimal node count */
#define BOOT_ENV_JOB     "DSM_JOB_ID"   /* 16 hex digits, random per job */
#define BOOT_ENV_SOCK_FD "DSM_SOCK_FD"  /* inherited, bound UDP socket */
#define BOOT_ENV_KEY_FD  "DSM_KEY_FD"   /* pipe: BOOT_KEY_BYTES of key, then EOF */
#define BOOT_ENV_PEERS   "DSM_PEERS"    /* "a.b.c.d:port,..." in rank order */
#define BOOT_ENV_LAUNCH  "DSM_LAUNCH_NS" /* optional: CLOCK_REALTIME ns when the
                                            launcher started, for the startup time */

#define BOOT_ENV_LIFE_FD "DSM_LIFE_FD"  /* optional: pipe to the launcher; the
                                            node writes BOOT_LIFE_STARTED when it
                                            joins the job, BOOT_LIFE_FINISHED at
                                            dsm_finish, so that the launcher knows
                                            an exit before dsm_finish at once */
#define BOOT_LIFE_STARTED  'S'
#define BOOT_LIFE_FINISHED 'F'
/* The node printed the line that says its failure: the launcher adds none. */
#define BOOT_LIFE_SAID     'E'
/* The node ends because a peer failed: the rest, to a newline, is the line
 * that says so, which the launcher prints only if no node said its own. */
#define BOOT_LIFE_RELAYED  'R'
/* Optional, a multi-host job's only: a SOCK_SEQPACKET socket to the
 * launcher's agent on this host, through which the node asks how a silent
 * peer on another host is (supervise/liveness.c, tools/arbiter.c): it sends
 * "look RANK"; it is sent "seen RANK STATE CPU_NS PROCESS_CPU_NS" for peers
 * of other hosts, STATE one of supervise/peer_process.h's. */
#define BOOT_ENV_ARBITER_FD "DSM_ARBITER_FD"
#define BOOT_ARBITER_LINE_MAX 96
#define BOOT_KEY_BYTES   32
#define BOOT_MAX_NODES   256

#endif
