/*
 * names.c — each node's name server: names under which it hands out send
 * rights to whoever asks (dsm_port_lookup).
 *
 * The server holds a send right of its own per name (a reference of this
 * node's SEND entry for the port) and gives each asker a copy of it, as
 * any holder copies a right into a message (carry.c): the port learns of
 * the copy, the asker claims it. So a registered port, wherever it has
 * moved since, gives send rights to anyone; a port never registered gives
 * none: it is reached only through a right its holders chose to send.
 * dsm_port_create registers the port it makes on its own node, which is
 * what dsm_port_lookup always found before rights.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "ipc/ipc_state.h"

static struct name_rec *find_name(const char *name)
{
    for (struct name_rec *n = ipc.names; n; n = n->next)
        if (!strcmp(n->name, name))
            return n;
    return NULL;
}

static bool name_ok(const char *name)
{
    return name && name[0] && strlen(name) <= DSM_PORT_NAME_MAX;
}

void names_forget_dead(void)
{
    for (struct name_rec **pp = &ipc.names; *pp;) {
        struct name_rec *n = *pp;
        if (ipc.links[right_at(n->entry)->link].dead) {
            *pp = n->next;
            right_send_unref(n->entry);
            free(n);
        } else {
            pp = &n->next;
        }
    }
}

int dsm_port_register(const dsm_port_ref *right, const char *name)
{
    if (!job()->nodes)
        log_fatal("dsm_startup must be called before using ports");
    if (!name_ok(name))
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    names_forget_dead();
    struct right *e;
    int rc = right_get(right, 1u << DSM_RIGHT_RECEIVE | 1u << DSM_RIGHT_SEND, &e);
    if (!rc && find_name(name))
        rc = -EEXIST;
    if (!rc && ipc.links[e->link].dead)
        rc = -EPIPE;
    struct name_rec *n = rc ? NULL : calloc(1, sizeof *n);
    if (!rc && !n)
        rc = -ENOMEM;
    if (rc) {
        pthread_mutex_unlock(&ipc.lock);
        return rc;
    }
    strcpy(n->name, name);
    if (e->kind == DSM_RIGHT_SEND) {
        e->urefs++;
        n->entry = right->name;
    } else {
        pthread_mutex_unlock(&ipc.lock);
        dsm_port_ref send;
        rc = dsm_port_make_send(right, &send);
        pthread_mutex_lock(&ipc.lock);
        if (rc || find_name(name)) { /* released or registered meanwhile */
            if (!rc)
                right_send_unref(send.name);
            free(n);
            pthread_mutex_unlock(&ipc.lock);
            return rc ? rc : -EEXIST;
        }
        n->entry = send.name;
    }
    n->next = ipc.names;
    ipc.names = n;
    pthread_mutex_unlock(&ipc.lock);
    return 0;
}

int dsm_port_unregister(const char *name)
{
    if (!job()->nodes)
        log_fatal("dsm_startup must be called before using ports");
    if (!name_ok(name))
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    int rc = -ENOENT;
    for (struct name_rec **pp = &ipc.names; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->name, name)) {
            struct name_rec *n = *pp;
            *pp = n->next;
            right_send_unref(n->entry);
            free(n);
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&ipc.lock);
    return rc;
}

void names_on_lookup_req(int src, const struct ipc_lookup_req *b)
{
    names_forget_dead();
    struct name_rec *n = find_name(b->name);
    struct ipc_lookup_rep rep = {.token = b->token, .status = -ENOENT};
    if (!n) {
        ipc_send(src, IPC_LOOKUP_REP, 0, &rep, sizeof rep);
        return;
    }
    rep.status = 0;
    dsm_port_ref h;
    right_handle(n->entry, &h);
    struct dsm_msg_right copy = {.right = &h, .disposition = DSM_COPY_SEND};
    struct ipc_wire_right w;
    uint32_t after[1];
    carry_out(&copy, 1, &w, after);
    ipc_send3(src, IPC_LOOKUP_REP, 0, &rep, sizeof rep, &w, sizeof w);
}

void names_on_lookup_rep(int src, const struct ipc_lookup_rep *b, const void *rest, size_t len)
{
    (void)len;
    struct pending_lookup *l = ipc.lookups;
    while (l && l->token != b->token)
        l = l->next;
    struct ipc_wire_right w;
    if (!b->status)
        memcpy(&w, rest, sizeof w);
    if (!l || l->done) {
        /* The asker left (timed out): the copy it was given is destroyed. */
        if (!b->status)
            carry_destroy(&w, 1);
        return;
    }
    (void)src;
    l->status = b->status;
    if (!b->status) {
        dsm_port_ref h;
        carry_in(&w, 1, &h);
        l->entry = h.name;
    }
    l->done = true;
    ipc_notify();
}

static bool lookup_done(void *arg)
{
    struct pending_lookup *l = arg;
    pthread_mutex_lock(&ipc.lock);
    bool d = l->done;
    pthread_mutex_unlock(&ipc.lock);
    return d;
}

int dsm_port_lookup(int node, const char *name, double timeout, dsm_port_ref *out)
{
    if (!job()->nodes)
        log_fatal("dsm_startup must be called before using ports");
    if (node < 0 || node >= job()->nodes || !name_ok(name) || !out)
        return -EINVAL;
    uint64_t deadline = clock_deadline(timeout);
    for (;;) {
        struct pending_lookup l = {0};
        struct ipc_lookup_req req = {0};
        strcpy(req.name, name);
        pthread_mutex_lock(&ipc.lock);
        l.token = req.token = ipc_nonce();
        l.next = ipc.lookups;
        ipc.lookups = &l;
        ipc_send(node, IPC_LOOKUP_REQ, 0, &req, sizeof req);
        pthread_mutex_unlock(&ipc.lock);

        int rc = ipc_wait(lookup_done, &l, deadline);
        pthread_mutex_lock(&ipc.lock);
        for (struct pending_lookup **pp = &ipc.lookups; *pp; pp = &(*pp)->next)
            if (*pp == &l) {
                *pp = l.next;
                break;
            }
        if (l.done && l.status == 0) {
            right_handle(l.entry, out);
            pthread_mutex_unlock(&ipc.lock);
            return 0;
        }
        pthread_mutex_unlock(&ipc.lock);
        if (rc || (deadline && clock_ns() >= deadline))
            return -ENOENT;
        /* Not registered yet: ask again shortly. */
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}
