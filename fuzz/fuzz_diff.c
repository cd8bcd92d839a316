/*
 * fuzz_diff.c — byte-exact diffs (src/mem/diff.c), which homes and
 * lrc's writers apply from the network.
 *
 * Input: [page size][mode][bytes...]. Mode bit 0 set: the bytes are a diff
 * from the network: mem_diff_check and mem_diff_apply must agree (the
 * check accepts exactly what applies), the payload it reports is what the
 * runs carry, and a rejected diff never writes outside the page (ASan).
 * Otherwise the bytes are a page and its twin: the diff made from them is
 * accepted, fits mem_diff_bound, and applied to the twin gives the page.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mem/diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t ps = (size_t)64 << (data[0] % 5); /* 64 B .. 1 KiB: small pages reach every rule */
    int net = data[1] & 1;
    data += 2, size -= 2;
    unsigned char *page = malloc(ps), *twin = malloc(ps); /* exactly sized for ASan */
    if (net) {
        unsigned char *diff = malloc(size ? size : 1);
        memcpy(diff, data, size);
        memset(page, 0x5a, ps);
        long payload = mem_diff_check(diff, size, ps);
        int rc = mem_diff_apply(page, ps, diff, size);
        if ((payload < 0) != (rc != 0))
            abort(); /* check and apply disagree */
        if (payload >= 0 && (payload % 4 || (size_t)payload > size || (size == 0) != (payload == 0) ||
                             (size && size - (size_t)payload < 4)))
            abort(); /* whole words, under 4-byte headers (and masks) */
        if (payload > (long)ps || (payload >= 0 && mem_diff_payload(diff, size) != payload))
            abort();
        free(diff);
    } else {
        /* page: the bytes, cycled; twin: the page with a third of the
         * words changed where the bytes say, in one byte or in all four */
        for (size_t i = 0; i < ps; i++)
            page[i] = size ? data[i % size] : 0;
        memcpy(twin, page, ps);
        for (size_t w = 0; w < ps / 4; w++)
            if (size && data[w % size] % 3 == 0) {
                unsigned b = data[w % size] % 5; /* byte b, or (4) every byte */
                for (unsigned k = 0; k < 4; k++)
                    if (b == 4 || b == k)
                        twin[w * 4 + k] ^= 1 + (unsigned char)w;
            }
        size_t cap = mem_diff_bound(ps);
        unsigned char *diff = malloc(cap);
        long len = mem_diff_create(page, twin, ps, diff, cap);
        if (len < 0 || mem_diff_check(diff, (size_t)len, ps) < 0)
            abort();
        if (mem_diff_apply(twin, ps, diff, (size_t)len) != 0 || memcmp(twin, page, ps) != 0)
            abort(); /* the twin with the diff is not the page */
        free(diff);
    }
    free(page);
    free(twin);
    return 0;
}
