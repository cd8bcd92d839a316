/*
 * fuzz_arbiter_lines.c — the arbiter's lines (src/supervise/peer_process.c),
 * which travel between hosts through dsmrun and its agents to the nodes:
 * any bytes as a "look" or a "seen" line, against a job size from the
 * input. A line is refused, or taken with a rank inside the job and a
 * state of the four, and then is exactly what formatting its values gives
 * back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervise/peer_process.h"
#include "base/launch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int nodes = data[0] % BOOT_MAX_NODES + 1;
    char *line = malloc(size); /* the rest, terminated: as the parsers get it */
    memcpy(line, data + 1, size - 1);
    line[size - 1] = 0;
    char again[BOOT_ARBITER_LINE_MAX + 1];

    int rank = process_look_parse(line, nodes);
    if (rank >= nodes || rank < -1)
        abort();
    if (rank >= 0 && (process_look_format(again, sizeof again, rank) < 0 || strcmp(again, line)))
        abort();

    struct process_sight s = {.state = 'Z'};
    rank = process_seen_parse(line, nodes, &s);
    if (rank >= nodes || rank < -1)
        abort();
    if (rank < 0 && s.state != 'Z')
        abort(); /* a refused line leaves the sight as it was */
    if (rank >= 0 && (!strchr("XTSR", s.state) || !s.state ||
                      process_seen_format(again, sizeof again, rank, &s) > BOOT_ARBITER_LINE_MAX ||
                      strcmp(again, line)))
        abort();
    free(line);
    return 0;
}
