/*
 * inject.h — loss, duplication, reordering and delay for tests.
 *
 * The kernel here has no netem, so loss, duplication and reordering are
 * injected by the sender, on every datagram it puts on the wire (data, acks
 * and retransmissions alike), and delay by the receiver, on every datagram
 * it reads (inject.c). Decisions come from a seeded xorshift generator, so
 * a failing run can be replayed with the same DSM_NET_SEED.
 */
#ifndef DSM_NET_INJECT_H
#define DSM_NET_INJECT_H
#include <stdbool.h>
#include <stdint.h>

struct inject {
    double   loss, dup, reorder;
    uint64_t delay_ns;
    uint64_t rng;
};

enum inject_action {
    INJECT_SEND,      /* send it now */
    INJECT_DROP,      /* pretend it was lost */
    INJECT_DUPLICATE, /* send it twice */
    INJECT_HOLD,      /* hold it back; send it after the next one */
};

void inject_init(struct inject *in, double loss, double dup, double reorder,
                 uint64_t delay_us, uint64_t seed);
bool inject_active(const struct inject *in);
enum inject_action inject_decide(struct inject *in);
#endif
