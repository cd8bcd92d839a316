/*
 * arbiter.c — how a node of another host is, for a node that finds it
 * silent (src/supervise/liveness.c).
 *
 * A node starved of CPU is slow, not dead, but from another host it looks
 * silent like a stopped one. Its agent (dsmrun --agent, its parent) can
 * look at its process, so a node asks: "look RANK" on its socket to its
 * own agent (BOOT_ENV_ARBITER_FD); the agent passes it up to dsmrun, dsmrun
 * down to the agent of RANK's host, which looks at that node's process
 * (supervise/peer_process.h) and answers "seen RANK STATE CPU_NS PROCESS_CPU_NS"
 * up to dsmrun, which passes it to every other agent, which passes it to
 * each of its nodes. The node judges by the answers as it would by its own
 * look at a peer on its host.
 *
 * All of it travels on what the launch made: the nodes' sockets are
 * socketpairs their agent handed them, the agents' channels are their ssh
 * connections (remote.h); nothing listens. What arrives is parsed to the
 * character and formatted anew before it goes on; a line that does not
 * parse, or an agent answering for a node not of its host, ends the job
 * as any garbled line of an agent does (hosts.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launcher.h"
#include "supervise/peer_process.h"

enum {
    DUE_ASK    = 1,  /* a node of this host asked about this rank: ask dsmrun */
    DUE_ANSWER = 2,  /* dsmrun asked about this rank, a node of this host: look */
};

/* Questions about one rank go up at most this often, however many of this
 * host's nodes ask (each asks 8 times a timeout, at most every 100 ms). */
#define ASK_UP_EVERY_S 0.05

/* A "seen" line exactly as formatted (peer_process.h), formatted anew into
 * out from the values parsed: what goes on is never the bytes that came. */
static int parse_seen(const char *line, int nodes, char *out, size_t len)
{
    struct process_sight s;
    int rank = process_seen_parse(line, nodes, &s);
    if (rank >= 0)
        process_seen_format(out, len, rank, &s);
    return rank;
}

static bool arbiter_ready(struct launcher *l)
{
    if (!l->arbiter_due)
        l->arbiter_due = calloc((size_t)l->opt.nodes, 1);
    if (!l->arbiter_asked)
        l->arbiter_asked = calloc((size_t)l->opt.nodes, sizeof *l->arbiter_asked);
    return l->arbiter_due && l->arbiter_asked;   /* out of memory: nobody is asked */
}

static struct node *our_node(struct launcher *l, int rank)
{
    for (int i = 0; i < l->count; i++)
        if (l->nodes[i].rank == rank)
            return &l->nodes[i];
    return NULL;
}

/* ---- on an agent ---- */

/* A node's socket is readable: its questions, or its end. */
void arbiter_question(struct launcher *l, int fd)
{
    struct node *n = NULL;
    for (int i = 0; i < l->count && !n; i++)
        if (l->nodes[i].arbiter == fd)
            n = &l->nodes[i];
    if (!n)
        return;
    char line[BOOT_ARBITER_LINE_MAX + 1];
    ssize_t got;
    while ((got = recv(fd, line, sizeof line - 1, MSG_DONTWAIT)) > 0) {
        line[got] = 0;
        int rank = process_look_parse(line, l->opt.nodes);
        if (rank < 0 || !arbiter_ready(l))
            continue;      /* the node is ours; a bad question is dropped */
        l->arbiter_due[rank] |= our_node(l, rank) ? DUE_ANSWER : DUE_ASK;
    }
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        close(fd);         /* the node has ended */
        n->arbiter = -1;
    }
}

/* A line from dsmrun that is the arbiter's: "look RANK" about a node of
 * this host, "seen ..." about one of another, which goes to every node
 * here. Returns false for any other line. */
bool arbiter_order(struct launcher *l, const char *line)
{
    if (!strncmp(line, "look ", 5)) {
        int rank = process_look_parse(line, l->opt.nodes);
        if (rank >= 0 && our_node(l, rank) && arbiter_ready(l))
            l->arbiter_due[rank] |= DUE_ANSWER;
        return true;
    }
    if (!strncmp(line, "seen ", 5)) {
        char seen[BOOT_ARBITER_LINE_MAX + 1];
        int rank = parse_seen(line, l->opt.nodes, seen, sizeof seen);
        if (rank < 0 || our_node(l, rank))
            return true;
        for (int i = 0; i < l->count; i++)
            if (l->nodes[i].arbiter >= 0 &&
                send(l->nodes[i].arbiter, seen, strlen(seen), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
                /* a node that reads slowly asks again */
            }
        return true;
    }
    return false;
}

/* From the agent's loop, between frames: the questions to pass up and the
 * answers owed. */
void arbiter_serve(struct launcher *l)
{
    if (!l->arbiter_due || !l->arbiter_asked || l->phase != JOB_RUNNING || l->launcher_lost)
        return;
    double now = now_s();
    for (int rank = 0; rank < l->opt.nodes; rank++) {
        unsigned char due = l->arbiter_due[rank];
        if (!due)
            continue;
        char line[BOOT_ARBITER_LINE_MAX + 2];
        int len = 0;
        if (due & DUE_ANSWER) {
            struct node *n = our_node(l, rank);
            struct process_sight s = {.state = 'X'};
            if (n && n->pid > 0)   /* not reaped: the pid is still its */
                process_look(n->pid, 0, &s);
            len = process_seen_format(line, sizeof line - 1, rank, &s);
            line[len++] = '\n';
        } else if (now - l->arbiter_asked[rank] >= ASK_UP_EVERY_S) {
            len = process_look_format(line, sizeof line - 1, rank);
            line[len++] = '\n';
            l->arbiter_asked[rank] = now;
        }
        l->arbiter_due[rank] = 0;
        if (len > 0)
            send_up(l, line, (size_t)len);
    }
}

/* ---- on dsmrun ---- */

static struct node *host_of(struct launcher *l, int rank)
{
    for (int i = 0; i < l->count; i++)
        if (rank >= l->nodes[i].rank && rank < l->nodes[i].rank + l->nodes[i].ranks)
            return &l->nodes[i];
    return NULL;
}

/* A short line to an agent's stdin: whole or not at all (a pipe takes up
 * to PIPE_BUF bytes at once), never waiting; a full pipe means the agent
 * has plenty unread, and its node asks again. */
static void tell_agent(struct node *h, const char *line, size_t len)
{
    int fd = h->ctl;
    if (fd >= 0 && write(fd, line, len) < 0) {
        /* see above */
    }
}

/* A line from agent h that is the arbiter's: passed on. Returns false for
 * any other line, and for a question or answer that does not parse or an
 * answer about a node not of h's host (the caller ends the job). */
bool arbiter_relay(struct launcher *l, struct node *h, const char *line)
{
    int nodes = l->opt.nodes;
    char out[BOOT_ARBITER_LINE_MAX + 2];
    if (!strncmp(line, "look ", 5)) {
        int rank = process_look_parse(line, nodes);
        struct node *to = rank < 0 ? NULL : host_of(l, rank);
        if (!to || to == h)
            return false;
        if (l->phase == JOB_RUNNING) {
            int len = process_look_format(out, sizeof out - 1, rank);
            out[len++] = '\n';
            tell_agent(to, out, (size_t)len);
        }
        return true;
    }
    if (!strncmp(line, "seen ", 5)) {
        int rank = parse_seen(line, nodes, out, sizeof out - 1);
        if (rank < 0 || host_of(l, rank) != h)
            return false;
        if (l->phase == JOB_RUNNING) {
            strcat(out, "\n");
            for (int i = 0; i < l->count; i++)
                if (&l->nodes[i] != h)
                    tell_agent(&l->nodes[i], out, strlen(out));
        }
        return true;
    }
    return false;
}
