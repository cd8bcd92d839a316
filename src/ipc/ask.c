/*
 * ask.c — a question sent to another node's handler and the answer its
 * node sends back, matched by a token.
 *
 * The layers above ask a node what only it knows, or to do what only it
 * can, and wait: the size of a heap block of its arena (runtime/heap.c),
 * a write through a descriptor or stream it opened (runtime/streams.c).
 * Each sends its own message types through ipc_send with the token in
 * the body; the handler of the answer's type hands the answer here
 * (ipc_question_answered), which copies it into the asker's buffer and
 * wakes it. A question lives on its asker's stack from ipc_question_open
 * to the end of ipc_question_wait.
 */
#include <pthread.h>
#include <string.h>

#include "base/log.h"
#include "base/state.h"
#include "ipc/ipc.h"

static DSM_STATE struct {
    pthread_mutex_t      lock;
    struct ipc_question *open; /* asked and not yet waited out */
    uint64_t             next_token;
} ask = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t ipc_question_open(struct ipc_question *q, void *answer, size_t cap)
{
    *q = (struct ipc_question){.answer = answer, .cap = cap};
    pthread_mutex_lock(&ask.lock);
    q->token = ++ask.next_token;
    q->next = ask.open;
    ask.open = q;
    pthread_mutex_unlock(&ask.lock);
    return q->token;
}

static bool answered(void *arg)
{
    struct ipc_question *q = arg;
    pthread_mutex_lock(&ask.lock);
    bool done = q->done;
    pthread_mutex_unlock(&ask.lock);
    return done;
}

void ipc_question_wait(struct ipc_question *q)
{
    ipc_wait(answered, q, 0);
    pthread_mutex_lock(&ask.lock);
    for (struct ipc_question **pp = &ask.open; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            break;
        }
    pthread_mutex_unlock(&ask.lock);
}

bool ipc_question_answered(uint64_t token, const void *answer, size_t len)
{
    pthread_mutex_lock(&ask.lock);
    struct ipc_question *q = ask.open;
    while (q && (q->token != token || q->done))
        q = q->next;
    if (q) {
        memcpy(q->answer, answer, len < q->cap ? len : q->cap);
        q->done = true;
    }
    pthread_mutex_unlock(&ask.lock);
    if (q)
        ipc_notify();
    return q != NULL;
}
