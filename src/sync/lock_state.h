/*
 * lock_state.h — the distributed locks' shared state and the calls between
 * their files (private to src/sync: lock.c, lock_queue.c, lock_grant.c,
 * lock_releaser.c; the other layers, and the sync layer's other files,
 * take locks through sync.h).
 *
 * One mutex, locks.lock, guards all of it: every lock's state on this node
 * and the releaser's queue. The delivery thread's handlers, the releaser
 * and the program's threads take it; none of them waits while holding it
 * (a release that must run first goes to the releaser, lock_releaser.c).
 */
#ifndef DSM_SYNC_LOCK_STATE_H
#define DSM_SYNC_LOCK_STATE_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sync/sync.h"

/* An atomic riding on a lock request (sync_lock_atomic): the word's
 * page, its offset, the version the requester needs, the operation. */
struct lock_atomic {
    uint32_t page, offset, need;
    uint8_t  op, size;
    uint16_t on; /* 1: an atomic rides on the request; 0: none */
    uint64_t value, expected;
};

/* A grant's fixed head: what became of the atomic that rode on the
 * request (0: none, or not done: the granter is not the page's home). */
enum grant_atomic { GRANT_ATOMIC_NONE, GRANT_ATOMIC_UNCHANGED, GRANT_ATOMIC_CHANGED };
struct grant_head {
    int32_t  id;
    uint32_t atomic;  /* enum grant_atomic */
    uint32_t version; /* GRANT_ATOMIC_CHANGED: the page's at the home after it */
    uint32_t granter; /* plus one, when the home relayed it; 0: the sender */
    uint64_t old;     /* the word before it */
};

/* A request or a try the manager holds back while a try is out
 * (lock_queue.c). */
struct held_request;

struct lock_state {
    bool           owned;       /* the token is here */
    bool           held;        /* the program holds the lock */
    bool           granted;     /* a grant arrived for our request */
    bool           busy;        /* our try was answered busy */
    bool           succ_try;    /* the successor only tried: the manager hears of its grant */
    bool           trying;      /* at the manager: a try is out, requests are held back */
    struct held_request *held_back, **held_tail; /* at the manager, in their order */
    bool           local;       /* the program took it without a message this time */
    int            successor;   /* plus one; 0: none */
    uint32_t      *succ_vt;
    struct lock_atomic succ_atomic; /* riding on the successor's request */
    struct grant_head  grant_head;  /* the grant's, for the program */
    unsigned char *grant;       /* the grant's intervals, applied by the program */
    size_t         grant_len;
    int            grant_from;  /* the node that sent them */
    int            last_owner;  /* at the manager: plus one; 0: never asked for */
    uint64_t       batch;       /* the releaser's batch that will grant it; 0: none */
    uint64_t       ticket;      /* its last unlock's kept release; 0: that unlock released */
};

/* Work waiting for the kept releases (lock_releaser.c). */
struct deferred;

/* The node's locks, and the releaser's queue, under `lock` (lock.c). */
struct lock_table {
    pthread_mutex_t lock;
    struct idmap    map;
    /* The releaser (under lock): locks asked for while their release was
     * pending, to grant once the batch `batch` has run it. */
    struct {
        pthread_t      thread;
        pthread_cond_t cv;
        bool           started, stop;
        int           *ids;
        size_t         n, cap;
        uint64_t       batch;
        /* Work that waits for every release kept before it was queued
         * (sync_after_kept_releases), run with the batch's grants. */
        struct deferred *later;
        size_t         nlater, caplater;
    } rel;
};
extern struct lock_table locks;

/* ---- lock.c: the table, the program's lock and unlock ------------------------ */
/* The state of lock id here, made on first use. Caller holds locks.lock. */
struct lock_state *lock_state_of(int id);

/* ---- lock_queue.c: requests and tries, at the manager and the last owner ---- */
/* At the manager. Caller holds locks.lock. */
void lock_on_request(int id, int requester, const uint32_t *vt, const struct lock_atomic *op);
/* A try, at the manager. Caller holds locks.lock. */
void lock_on_try(int id, int requester, const uint32_t *vt);
/* At the last owner: tells the manager what became of a try. Caller holds
 * locks.lock. */
void lock_tried(int id, int requester, bool taken);
/* A request (to the manager) or its forward (to the last owner). */
void lock_send_request(int to, enum sync_type type, int id, int requester, const uint32_t *vt,
                       const struct lock_atomic *op);
void lock_on_acq(int src, const void *msg, size_t len);
void lock_on_fwd(int src, const void *msg, size_t len);
void lock_on_try_msg(int src, const void *msg, size_t len);
void lock_on_try_fwd(int src, const void *msg, size_t len);
void lock_on_tried_msg(int src, const void *msg, size_t len);
void lock_on_busy(int src, const void *msg, size_t len);

/* ---- lock_grant.c: the lock handed on, with the atomic riding on it ---------- */
/* Whether an atomic riding on a request or a relayed grant is not one a
 * node of this job can have sent. */
bool lock_atomic_malformed(const struct lock_atomic *op);
/* Sends the lock, with the intervals `to` lacks. Caller holds locks.lock. */
void lock_grant_to(int id, int to, const uint32_t *vt, const struct lock_atomic *op);
/* Grants the lock to the successor recorded (owned, not held here).
 * Caller holds locks.lock. */
void lock_grant_successor(int id, struct lock_state *l);
void lock_on_relay(int src, const void *msg, size_t len);
void lock_on_grant(int src, const void *msg, size_t len);

/* ---- lock_releaser.c: kept releases, run aside --------------------------------- */
/* The program's own lock or unlock runs the queued batch's release itself;
 * when it began, 0 when nothing was queued. Caller holds locks.lock;
 * released and taken again. */
uint64_t lock_batch_help(void);
/* Queues a lock for the releaser. Caller holds locks.lock. */
void lock_releaser_queue(int id, struct lock_state *l);

#endif
