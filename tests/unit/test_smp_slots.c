/*
 * test_smp_slots.c — a node's run slots (base/smp.c, issue 55): however
 * many threads take turns, no more than the slots run at once; a thread
 * waiting off its slot (smp_wait_begin/end, nested) lets another run, so
 * threads that wait on each other never deadlock; the turns go first come
 * first served (a yield lets every waiter run first); a thread outside the
 * turns is never held up.
 */
#include "check.h"
#include "base/smp.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

enum { SLOTS = 2, THREADS = 9, ROUNDS = 300 };

static atomic_int running, most, passes, off_wrong;

static void enter(void)
{
    int now = atomic_fetch_add(&running, 1) + 1;
    int m = atomic_load(&most);
    while (now > m && !atomic_compare_exchange_weak(&most, &m, now))
        ;
}

static void leave(void) { atomic_fetch_sub(&running, 1); }

/* A baton passed round the threads in order: each waits (off its slot)
 * for its turn, so with fewer slots than threads the holders must give
 * their slots up for the baton to go round. */
static pthread_mutex_t baton_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t baton_moved = PTHREAD_COND_INITIALIZER;
static int baton;

static void *taker(void *arg)
{
    int me = (int)(intptr_t)arg;
    smp_slot_take();
    for (int r = 0; r < ROUNDS; r++) {
        enter();
        sched_yield();
        leave();
        smp_wait_begin();
        smp_wait_begin(); /* nested: the outer one gives and takes */
        pthread_mutex_lock(&baton_lock);
        while (baton % THREADS != me)
            pthread_cond_wait(&baton_moved, &baton_lock);
        pthread_mutex_unlock(&baton_lock);
        smp_wait_end();
        if (!smp_off_slot()) /* still inside the outer wait */
            atomic_fetch_add(&off_wrong, 1);
        smp_wait_end();
        if (smp_off_slot())
            atomic_fetch_add(&off_wrong, 1);
        enter();
        pthread_mutex_lock(&baton_lock);
        baton++;
        pthread_cond_broadcast(&baton_moved);
        pthread_mutex_unlock(&baton_lock);
        atomic_fetch_add(&passes, 1);
        leave();
        if (r % 16 == 0)
            smp_yield();
    }
    smp_slot_give();
    return NULL;
}

static void test_at_most_the_slots_run_and_waits_give_them_up(void)
{
    smp_slots_enable(SLOTS);
    CHECK(smp_threaded());
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, taker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&passes), THREADS * ROUNDS); /* the baton went round: no deadlock */
    CHECK(atomic_load(&most) <= SLOTS);
    CHECK(atomic_load(&most) >= 1);
    CHECK_EQ(smp_slot_waiters(), 0);
    CHECK_EQ(atomic_load(&off_wrong), 0);
}

static void test_a_thread_outside_the_turns_is_never_held(void)
{
    /* Not a holder: waits and yields do nothing, and it may spin. */
    smp_wait_begin();
    CHECK(!smp_off_slot());
    CHECK(smp_may_spin());
    smp_wait_end();
    smp_yield();
    smp_slot_give(); /* a thread that never took one gives nothing */
}

int main(void)
{
    test_a_thread_outside_the_turns_is_never_held();
    test_at_most_the_slots_run_and_waits_give_them_up();
    return check_report("smp_slots");
}
