/*
 * dir.c — what this node knows of ports by uid: one here (its slot), one
 * that moved on (where to: this node forwards what still reaches it), one
 * destroyed (its late messages' senders are told). An open-addressing
 * table that only grows: a record outlives its port, since a message sent
 * to the port before its move or death may still come.
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "ipc/ipc_state.h"

static uint32_t slot_of(uint64_t uid, uint32_t cap)
{
    return (uint32_t)((uid * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

struct dir_rec *dir_find(uint64_t uid)
{
    if (!ipc.dir_cap)
        return NULL;
    for (uint32_t i = slot_of(uid, ipc.dir_cap);; i = (i + 1) & (ipc.dir_cap - 1)) {
        struct dir_rec *r = &ipc.dir[i];
        if (r->uid == uid)
            return r;
        if (!r->uid)
            return NULL;
    }
}

static void grow(void)
{
    uint32_t cap = ipc.dir_cap ? ipc.dir_cap * 2 : 256;
    struct dir_rec *t = calloc(cap, sizeof *t);
    if (!t)
        log_fatal("out of memory growing the port directory to %u ports", cap);
    for (uint32_t i = 0; i < ipc.dir_cap; i++) {
        if (!ipc.dir[i].uid)
            continue;
        uint32_t j = slot_of(ipc.dir[i].uid, cap);
        while (t[j].uid)
            j = (j + 1) & (cap - 1);
        t[j] = ipc.dir[i];
    }
    free(ipc.dir);
    ipc.dir = t;
    ipc.dir_cap = cap;
}

struct dir_rec *dir_put(uint64_t uid, enum dir_state state, int node, uint32_t slot,
                        uint64_t epoch)
{
    struct dir_rec *r = dir_find(uid);
    if (!r) {
        if ((ipc.dir_used + 1) * 4 > ipc.dir_cap * 3)
            grow();
        uint32_t i = slot_of(uid, ipc.dir_cap);
        while (ipc.dir[i].uid)
            i = (i + 1) & (ipc.dir_cap - 1);
        r = &ipc.dir[i];
        memset(r, 0, sizeof *r);
        r->uid = uid;
        ipc.dir_used++;
    }
    r->state = (uint8_t)state;
    r->node = node;
    r->slot = slot;
    r->epoch = epoch;
    memset(r->told, 0, sizeof r->told);
    return r;
}
