/*
 * witness.c — a silent peer on another host, looked at by a node of the
 * job on that host (its host mate), asked over the job's own network.
 *
 * Where no launcher's agent runs on the peer's host (mpirun, srun: PMIx
 * startup), a node of the same job on the peer's host is the only thing
 * outside the peer that can read its process in /proc. liveness.c asks one
 * such host mate, in turn, "look RANK" (the arbiter's lines,
 * peer_process.h) in an authenticated message of the transport
 * (net_send_witness: WIRE_LOOK, or UCX_LOOK over UCX; nothing new
 * listens); the mate looks at its sibling as it looks at its own host's
 * peers and answers "seen RANK STATE CPU_NS PROCESS_CPU_NS" (WIRE_SEEN,
 * UCX_SEEN), which liveness.c takes as a look of its own. A mate that does not answer (starved too,
 * or its host lost) is no answer: the peer gets the longer silence of a
 * peer nobody could look at (liveness.c).
 *
 * Hosts are told apart by the address each node published at startup (the
 * bootstrap's, under every launcher and transport): the nodes of one host
 * publish one address, those of another host another.
 */
#include "supervise/supervise.h"

#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/launch.h"
#include "base/state.h"
#include "supervise/peer_process.h"
#include "supervise/watch.h"

static DSM_STATE struct {
    in_addr_t *host;   /* job()->nodes of them: each node's published address */
    int       *mates;  /* how many nodes share each node's host, itself left out;
                          0 for this host's (looked at here) */
} wit;

/* The lines travel through the agents and through the transport alike. */
_Static_assert(BOOT_ARBITER_LINE_MAX <= NET_WITNESS_LINE_MAX,
               "a witness's line must fit the transport's");

/* Whether a and b, two nodes, run on one host. */
static bool host_mates(int a, int b)
{
    return wit.host && wit.host[a] == wit.host[b];
}

void witness_start(const struct sockaddr_in *peers)
{
    int n = job()->nodes;
    free(wit.host);
    free(wit.mates);
    wit.host = calloc((size_t)n, sizeof *wit.host);
    wit.mates = calloc((size_t)n, sizeof *wit.mates);
    if (!wit.host || !wit.mates) { /* no witnesses: silence alone judges */
        free(wit.host);
        wit.host = NULL;
        return;
    }
    for (int i = 0; i < n; i++)
        wit.host[i] = peers[i].sin_addr.s_addr;
    /* Counted once: the question is asked of every silent peer, often. */
    for (int p = 0; p < n; p++)
        for (int i = 0; i < n && !host_mates(job()->rank, p); i++)
            wit.mates[p] += i != p && host_mates(i, p);
}

bool witness_can_ask(int peer)
{
    return wit.host && wit.mates[peer] > 0;
}

void witness_ask(int peer, unsigned *turn)
{
    int mates = wit.host ? wit.mates[peer] : 0;
    if (!mates)
        return;
    /* The (turn mod mates)-th mate: each question goes to the next, so
     * that one mate held up does not silence the rest. */
    int k = (int)(*turn % (unsigned)mates), to = -1;
    for (int i = 0; i < job()->nodes && to < 0; i++)
        if (i != peer && host_mates(i, peer) && k-- == 0)
            to = i;
    (*turn)++;
    char q[BOOT_ARBITER_LINE_MAX + 1];
    int len = process_look_format(q, sizeof q, peer);
    net_send_witness(to, true, q, (size_t)len);
}

size_t witness_answer(int from, const void *line, size_t len, char *reply, size_t size)
{
    char q[BOOT_ARBITER_LINE_MAX + 1];
    if (len >= sizeof q)
        return 0;
    memcpy(q, line, len);
    q[len] = 0;
    int rank = strlen(q) == len ? process_look_parse(q, job()->nodes) : -1;
    /* Only about a node of this host, asked by a node of another. */
    if (rank < 0 || rank == job()->rank || rank == from || !host_mates(rank, job()->rank) ||
        host_mates(from, job()->rank))
        return 0;
    struct process_sight s;
    if (!liveness_look_here(rank, &s))
        return 0; /* not found here: the asker goes by the silence */
    int n = process_seen_format(reply, size, rank, &s);
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

void witness_heard(int from, const void *line, size_t len)
{
    char a[BOOT_ARBITER_LINE_MAX + 1];
    if (len >= sizeof a)
        return;
    memcpy(a, line, len);
    a[len] = 0;
    struct process_sight s;
    int rank = strlen(a) == len ? process_seen_parse(a, job()->nodes, &s) : -1;
    /* A look counts from a node of the peer's host alone. */
    if (rank < 0 || rank == job()->rank || rank == from || !host_mates(rank, from))
        return;
    liveness_seen(rank, &s);
}
