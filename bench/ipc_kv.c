/*
 * ipc_kv.c — a key-value store served over ports, reachable only through
 * rights its servers hand out (seed 004 §2: an OS server distributed over
 * nodes, safely). An example of the rights API (docs/api.md) as much as a
 * benchmark.
 *
 *   dsmrun -n N build/bench/ipc_kv [--ops N] [--move-at N]
 *
 * Shards on the first ceil(N/2) nodes. A shard's request port is named
 * nowhere (dsm_port_allocate): nobody can look it up. Every node runs a
 * client and registers an inbox with its node's name server; each shard
 * sends every inbox a send right to its request port (MAKE_SEND), and
 * that right is the only way in. A request carries a send-once right to
 * the client's own reply port (MAKE_SEND_ONCE), through which the shard
 * answers: Mach's RPC. Each shard asks for a no-senders notification on
 * its request port, to the port itself: when the last client gives its
 * right back, the shard's loop ends, with no stop message.
 *
 * Rebalancing: after --move-at requests, shard 0 moves its request port
 * to the last node, its table as an out-of-line region in the same
 * message (MOVE_RECEIVE): clients go on sending through the rights they
 * have, queued requests move with the port, the no-senders request too.
 *
 * Every client PUTs, then GETs, keys of its own (checking each value),
 * then, after a barrier, reads the next client's keys. Node 0 prints the
 * operations a second and "ok"; any wrong answer ends the job (status 1).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "dsm.h"

#define KEY_MAX   24
#define VAL_MAX   48
#define TABLE     4096 /* slots a shard holds */
#define KEYS      64   /* distinct keys a client uses */
#define TIMEOUT   120.0

enum op { OP_PUT = 1, OP_GET = 2 };

struct request { uint32_t op, vlen; char key[KEY_MAX]; char val[VAL_MAX]; };
struct reply   { int32_t status; uint32_t vlen; char val[VAL_MAX]; };
struct slot    { char key[KEY_MAX]; uint32_t vlen; char val[VAL_MAX]; };
struct handover { uint32_t shard; uint32_t served; };

static int me, nodes, shards, ops = 400, move_at = 150;

#define FAIL(...) do { fprintf(stderr, "ipc_kv: node %d: ", me); fprintf(stderr, __VA_ARGS__); \
                       fputc('\n', stderr); exit(1); } while (0)

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void key_of(char *key, int client, int i) { snprintf(key, KEY_MAX, "c%d-k%d", client, i % KEYS); }

/* The value client's i-th PUT writes (the last PUT of a key wins). */
static uint32_t val_of(char *val, int client, int i)
{
    return (uint32_t)snprintf(val, VAL_MAX, "v%d.%d.%s", client, i, i % 3 ? "x" : "longer-value");
}

static struct slot *find(struct slot *table, const char *key, bool insert)
{
    for (uint32_t i = hash(key) % TABLE, n = 0; n < TABLE; i = (i + 1) % TABLE, n++) {
        if (!strcmp(table[i].key, key))
            return &table[i];
        if (!table[i].key[0])
            return insert ? &table[i] : NULL;
    }
    FAIL("a shard's table is full");
}

/* ---- the shard ------------------------------------------------------------ */

struct shard {
    uint32_t     id;
    dsm_port_ref recv;     /* its request port */
    struct slot *table;    /* page-aligned: it moves as an out-of-line region */
    uint32_t     served;
};

/* Serves until the port has no senders; true when it moved the port away
 * (after --move-at requests, shard 0 on a job of 2 or more nodes). */
static bool serve(struct shard *s)
{
    for (;;) {
        struct dsm_msg m;
        int rc = dsm_msg_recv(s->recv.port, &m, TIMEOUT);
        if (rc)
            FAIL("shard %u: receive: %s", s->id, strerror(-rc));
        if (m.notification == DSM_NOTIFY_NO_SENDERS) {
            dsm_msg_free(&m);
            return false;
        }
        struct request rq;
        if (m.len != sizeof rq || m.nrights != 1 || m.rights[0].kind != DSM_RIGHT_SEND_ONCE)
            FAIL("shard %u: a malformed request from node %d", s->id, m.src_node);
        memcpy(&rq, m.data, sizeof rq);
        rq.key[KEY_MAX - 1] = 0;
        struct reply rp = {0};
        struct slot *e = find(s->table, rq.key, rq.op == OP_PUT);
        if (rq.op == OP_PUT && rq.vlen <= VAL_MAX) {
            strcpy(e->key, rq.key);
            e->vlen = rq.vlen;
            memcpy(e->val, rq.val, rq.vlen);
        } else if (rq.op == OP_GET && e) {
            rp.vlen = e->vlen;
            memcpy(rp.val, e->val, e->vlen);
        } else {
            rp.status = -ENOENT;
        }
        /* The answer goes through the send-once right the request carried. */
        rc = dsm_msg_send(&m.rights[0], &rp, sizeof rp, NULL, 0, TIMEOUT, NULL);
        if (rc)
            FAIL("shard %u: reply: %s", s->id, strerror(-rc));
        dsm_msg_free(&m);
        if (++s->served == (uint32_t)move_at && s->id == 0 && nodes > 1 && me != nodes - 1) {
            dsm_port_ref spare;
            if (dsm_port_lookup(nodes - 1, "kv-spare", TIMEOUT, &spare))
                FAIL("no spare node");
            struct handover h = {.shard = 0, .served = s->served};
            struct dsm_ool table = {.addr = s->table, .len = TABLE * sizeof *s->table};
            struct dsm_msg_right go = {.right = &s->recv, .disposition = DSM_MOVE_RECEIVE};
            rc = dsm_msg_send_rights(&spare, &h, sizeof h, &table, 1, &go, 1, TIMEOUT, NULL);
            if (rc)
                FAIL("moving shard 0: %s", strerror(-rc));
            dsm_port_release(&spare);
            return true;
        }
    }
}

static void *shard_main(void *arg)
{
    struct shard *s = arg;
    serve(s);
    return NULL;
}

/* The spare node: shard 0 may come, with its table; or not. */
static void *spare_main(void *arg)
{
    int port = *(int *)arg;
    struct dsm_msg m;
    if (dsm_msg_recv(port, &m, TIMEOUT))
        FAIL("the spare waited in vain");
    struct handover h;
    if (m.len != sizeof h)
        FAIL("a malformed hand-over");
    memcpy(&h, m.data, sizeof h);
    if (m.nrights == 0) { /* shard 0 finished first */
        dsm_msg_free(&m);
        return NULL;
    }
    struct shard s = {.id = h.shard, .recv = m.rights[0], .served = h.served};
    if (m.nool != 1 || m.ool[0].len != TABLE * sizeof *s.table || s.recv.kind != DSM_RIGHT_RECEIVE)
        FAIL("a hand-over without its port or table");
    s.table = m.ool[0].addr; /* owned by the message: served from there */
    serve(&s);
    printf("ipc_kv: shard 0 moved to node %d after %d requests, served %u in all\n", me,
           move_at, s.served);
    dsm_msg_free(&m);
    return NULL;
}

/* ---- the client ------------------------------------------------------------ */

struct client {
    dsm_port_ref shard[256];
    dsm_port_ref reply;
};

static struct reply call(struct client *c, uint32_t op, const char *key, const char *val,
                         uint32_t vlen)
{
    struct request rq = {.op = op, .vlen = vlen};
    strcpy(rq.key, key);
    memcpy(rq.val, val, vlen);
    struct dsm_msg_right r = {.right = &c->reply, .disposition = DSM_MAKE_SEND_ONCE};
    int rc = dsm_msg_send_rights(&c->shard[hash(key) % (uint32_t)shards], &rq, sizeof rq, NULL, 0,
                                 &r, 1, TIMEOUT, NULL);
    if (rc)
        FAIL("request: %s", strerror(-rc));
    struct dsm_msg m;
    if ((rc = dsm_msg_recv(c->reply.port, &m, TIMEOUT)))
        FAIL("reply: %s", strerror(-rc));
    struct reply rp;
    if (m.len != sizeof rp || m.notification || m.seq != 0)
        FAIL("a malformed reply");
    memcpy(&rp, m.data, sizeof rp);
    dsm_msg_free(&m);
    return rp;
}

static void expect(struct client *c, int client, int i)
{
    char key[KEY_MAX], val[VAL_MAX];
    key_of(key, client, i);
    uint32_t vlen = val_of(val, client, i);
    struct reply rp = call(c, OP_GET, key, NULL, 0);
    if (rp.status || rp.vlen != vlen || memcmp(rp.val, val, vlen))
        FAIL("GET %s: status %d, %u bytes, expected \"%.*s\"", key, rp.status, rp.vlen, (int)vlen,
             val);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n N ipc_kv [--ops N] [--move-at N]\n"
               "  --ops N      PUTs a client makes (and as many GETs; default 400)\n"
               "  --move-at N  requests shard 0 serves before it moves to the last node (150)\n");
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    me = dsm_rank();
    nodes = dsm_nodes();
    struct arg_option options[] = {
        {"--ops", ARG_INT, &ops, "a count 1..1000000", .lo = 1, .hi = 1000000},
        {"--move-at", ARG_INT, &move_at, "a count 1..1000000", .lo = 1, .hi = 1000000},
        {0}};
    int status = args_read(argc, argv, options, usage, me == 0);
    if (status != ARGS_RUN)
        return status;
    shards = (nodes + 1) / 2;
    if (shards > 256)
        shards = 256;

    int inbox = dsm_port_create("kv-inbox", 256);
    int spare_port = me == nodes - 1 && nodes > 1 ? dsm_port_create("kv-spare", 1) : -1;
    if (inbox < 0 || (me == nodes - 1 && nodes > 1 && spare_port < 0))
        FAIL("cannot create the inbox");
    pthread_t server, spare;
    struct shard s = {.id = (uint32_t)me};
    if (me < shards) {
        s.table = aligned_alloc(4096, TABLE * sizeof *s.table);
        memset(s.table, 0, TABLE * sizeof *s.table);
        if (dsm_port_allocate(64, &s.recv))
            FAIL("cannot allocate the request port");
        /* Its own no-senders notification ends its loop. */
        if (dsm_port_request_notification(&s.recv, DSM_NOTIFY_NO_SENDERS, &s.recv, s.id))
            FAIL("cannot ask for no-senders");
        for (int k = 0; k < nodes; k++) {
            dsm_port_ref to;
            if (dsm_port_lookup(k, "kv-inbox", TIMEOUT, &to))
                FAIL("no inbox on node %d", k);
            struct dsm_msg_right give = {.right = &s.recv, .disposition = DSM_MAKE_SEND};
            if (dsm_msg_send_rights(&to, &s.id, sizeof s.id, NULL, 0, &give, 1, TIMEOUT, NULL))
                FAIL("cannot give node %d its right", k);
            dsm_port_release(&to);
        }
        pthread_create(&server, NULL, shard_main, &s);
    }
    if (spare_port >= 0)
        pthread_create(&spare, NULL, spare_main, &spare_port);

    /* The client: a right to every shard, and a reply port of its own. */
    struct client c;
    for (int k = 0; k < shards; k++) {
        struct dsm_msg m;
        uint32_t id;
        if (dsm_msg_recv(inbox, &m, TIMEOUT) || m.len != sizeof id || m.nrights != 1)
            FAIL("no shard right");
        memcpy(&id, m.data, sizeof id);
        c.shard[id] = m.rights[0];
        dsm_msg_free(&m);
    }
    if (dsm_port_allocate(1, &c.reply))
        FAIL("cannot allocate the reply port");
    dsm_barrier();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < ops; i++) {
        char key[KEY_MAX], val[VAL_MAX];
        key_of(key, me, i);
        uint32_t vlen = val_of(val, me, i);
        struct reply rp = call(&c, OP_PUT, key, val, vlen);
        if (rp.status)
            FAIL("PUT %s: %d", key, rp.status);
        expect(&c, me, i);
    }
    dsm_barrier();
    /* The next client's keys, as its last PUTs left them. */
    int next = (me + 1) % nodes;
    for (int i = ops - KEYS > 0 ? ops - KEYS : 0; i < ops; i++)
        expect(&c, next, i);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    dsm_barrier();
    double s_el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    /* Give the rights back: each shard's loop ends with its no-senders. */
    for (int k = 0; k < shards; k++)
        dsm_port_release(&c.shard[k]);
    if (me < shards) {
        pthread_join(server, NULL);
        free(s.table); /* shard 0's went with it: its copy here is the old one */
    }
    /* Shard 0 that never moved tells the spare not to wait. */
    if (me == 0 && nodes > 1 && me != nodes - 1 && s.served < (uint32_t)move_at) {
        dsm_port_ref spare_ref;
        struct handover h = {0};
        if (dsm_port_lookup(nodes - 1, "kv-spare", TIMEOUT, &spare_ref) ||
            dsm_msg_send(&spare_ref, &h, sizeof h, NULL, 0, TIMEOUT, NULL))
            FAIL("cannot tell the spare");
    }
    if (spare_port >= 0)
        pthread_join(spare, NULL);
    if (me == 0)
        printf("ipc_kv: %d nodes, %d shards, %d clients x %d PUT+GET and %d cross GETs: "
               "%.0f requests/s, ok\n", nodes, shards, nodes, ops, ops < KEYS ? ops : KEYS,
               (double)nodes * (2.0 * ops + (ops < KEYS ? ops : KEYS)) / s_el);
    dsm_finish();
    return 0;
}
