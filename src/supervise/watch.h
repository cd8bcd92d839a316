/*
 * watch.h — the calls between liveness.c (the watch over silent peers) and
 * witness.c (their host mates). Private to src/supervise.
 */
#ifndef DSM_SUPERVISE_WATCH_H
#define DSM_SUPERVISE_WATCH_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

struct process_sight;

/* ---- the watch (liveness.c) ---- */

/* Before the service starts: the socket to ask dsmrun's agent on (-1: none). */
void liveness_start(int agent_fd);
/* A look at `rank`, a peer of this host, taken now (for a witness's answer);
 * false if its process is not found here. */
bool liveness_look_here(int rank, struct process_sight *s);
/* A host mate's look at `rank`, a silent peer of another host: taken as
 * one of ours while we ask about it. */
void liveness_seen(int rank, const struct process_sight *s);

/* ---- a silent peer's host mates (witness.c) ---- */

/* Records which nodes share a host: those that published one address. */
void witness_start(const struct sockaddr_in *peers);
/* Whether peer, a node of another host, has host mates to look at it. */
bool witness_can_ask(int peer);
/* Asks the next of peer's host mates (*turn counts the questions) to look
 * at it (net_send_witness: from within the transport's peer_silent). */
void witness_ask(int peer, unsigned *turn);
/* A question from `from`: the answer to send it (a line of at most
 * size - 1 bytes) and its length; 0: none to send. */
size_t witness_answer(int from, const void *line, size_t len, char *reply, size_t size);
/* An answer from `from`. */
void witness_heard(int from, const void *line, size_t len);

#endif
