#include "net/inject.h"

void inject_init(struct inject *in, double loss, double dup, double reorder,
                 uint64_t delay_us, uint64_t seed)
{
    in->loss = loss;
    in->dup = dup;
    in->reorder = reorder;
    in->delay_ns = delay_us * 1000;
    in->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
}

bool inject_active(const struct inject *in)
{
    return in->loss > 0 || in->dup > 0 || in->reorder > 0 || in->delay_ns > 0;
}

static double next_unit(struct inject *in)
{
    uint64_t x = in->rng; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    in->rng = x;
    return (double)((x * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

enum inject_action inject_decide(struct inject *in)
{
    if (in->loss > 0 && next_unit(in) < in->loss)
        return INJECT_DROP;
    if (in->dup > 0 && next_unit(in) < in->dup)
        return INJECT_DUPLICATE;
    if (in->reorder > 0 && next_unit(in) < in->reorder)
        return INJECT_HOLD;
    return INJECT_SEND;
}
