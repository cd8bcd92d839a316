/*
 * fuzz_seqwin.c — the receive window, acknowledgement coverage and the
 * freshness window (src/net/seqwin.c), driven by any sequence of arrivals
 * and checked against models that remember everything.
 *
 * Input: a start sequence number, then arrivals of 3 bytes each (a signed
 * offset from the window's next expected seq, and a freshness counter
 * step). Each datagram must be delivered exactly once, in order; a counter
 * must be accepted at most once, and always when it is new and close
 * enough to the highest seen.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/seqwin.h"

#define SPAN 4096 /* arrivals reach this far around the start */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t start;
    memcpy(&start, data, 4);
    data += 4;
    size -= 4;
    struct rx_window w = {.expected = start, .held = 0};
    static unsigned char held[SPAN], delivered[SPAN];
    memset(held, 0, sizeof held);
    memset(delivered, 0, sizeof delivered);
    uint32_t next_deliver = 0; /* offset from start of the next in-order datagram */

    struct fresh_window fw = {0};
    static unsigned char fseen[SPAN * 2];
    memset(fseen, 0, sizeof fseen);
    uint64_t ftop = 0, fctr = 0;

    for (size_t i = 0; i + 3 <= size; i += 3) {
        int d = (int8_t)data[i];
        uint32_t off = next_deliver + (uint32_t)(d < 0 ? 0 : d);
        if (d < 0 && next_deliver >= (uint32_t)-d)
            off = next_deliver - (uint32_t)-d;
        if (off >= SPAN)
            continue;
        uint32_t seq = start + off;
        enum rx_verdict v = rxwin_classify(&w, seq);
        int32_t ahead = (int32_t)(off - next_deliver);
        /* the model's verdict */
        enum rx_verdict want = ahead < 0               ? RX_DUPLICATE
                               : ahead == 0            ? RX_IN_ORDER
                               : ahead > SEQWIN_MAX    ? RX_BEYOND
                               : held[off]             ? RX_DUPLICATE
                                                       : RX_HOLD;
        if (v != want)
            abort();
        if (v == RX_HOLD) {
            rxwin_hold(&w, seq);
            held[off] = 1;
        } else if (v == RX_IN_ORDER) {
            for (;;) {
                if (delivered[next_deliver])
                    abort();
                delivered[next_deliver] = 1;
                next_deliver++;
                bool more = rxwin_advance(&w);
                if (more != (next_deliver < SPAN && held[next_deliver]))
                    abort();
                if (!more)
                    break;
            }
        }
        if (w.expected != start + next_deliver)
            abort();
        /* the acknowledgement the receiver would send covers exactly what
         * it has: everything before expected, and the held ones */
        static const int probes[] = {-2, -1, 0, 1, 2, 3, 31, 32, 33, 63, 64, 65, 66};
        for (size_t j = 0; j < sizeof probes / sizeof probes[0] + 1; j++) {
            /* fixed edges, and one place the input picks */
            int k = j < sizeof probes / sizeof probes[0] ? probes[j] : data[i + 2] % 70 - 2;
            uint32_t o = next_deliver + (uint32_t)k;
            bool have = k < 0 || (k >= 1 && k <= SEQWIN_MAX && o < SPAN && held[o]);
            if (ack_covers(w.expected, w.held, start + o) != have)
                abort();
        }
        uint32_t hi = ack_highest(w.expected, w.held);
        if (w.held == 0 ? hi != w.expected - 1 : !ack_covers(w.expected, w.held, hi))
            abort();

        /* freshness: counters wander forward with some going back */
        int step = (int8_t)data[i + 1];
        if (step >= 0 || fctr >= (uint64_t)-step)
            fctr = step >= 0 ? fctr + (uint64_t)step : fctr - (uint64_t)-step;
        if (data[i + 2] & 1)
            fctr += 60; /* jumps near the window's edge */
        if (fctr >= sizeof fseen)
            continue;
        bool fwant = fctr != 0 && !fseen[fctr] && (fctr > ftop || ftop - fctr < 64);
        if (fresh_accept(&fw, fctr) != fwant)
            abort();
        if (fwant) {
            fseen[fctr] = 1;
            if (fctr > ftop)
                ftop = fctr;
        }
    }
    return 0;
}
