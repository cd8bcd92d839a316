/*
 * migrate.h — homes that move (seed 003 §5 and §6), for the home-based
 * protocols that offer home_ops.give and .take (hlrc, erc).
 *
 * Page migration (§5): a home counts the remote faults it serves for each
 * page (fetches, pulls, read-ahead); a page whose faults come mostly from
 * one node moves its home there. Home migration (§6, Harada): a home counts
 * the bytes each node modifies in each page (diffs applied, its own changes
 * at its releases); a page written mostly by another node moves its home to
 * that node.
 *
 * Moves happen only in a *migration round*: every DSM_MIGRATE_PERIOD-th
 * barrier ends a window, and takes one more round when some node has a
 * page that qualifies (each votes from its own counts as it arrives, and
 * the barrier's messages carry the votes: coherence_ops.barrier_vote and
 * barrier_done, so every node decides alike). Between the two rounds no
 * program runs, every diff has been applied and acknowledged, and every
 * fetch has been answered. Each home decides alone, from its own counts,
 * sends each page it gives away to its new home and waits for the
 * acknowledgement before it arrives at the second round: when the barrier
 * ends every move is complete. The new home tells the page's base node
 * (which then names it) and, for erc, every node holding a copy; any other
 * node that still names the former home is forwarded by it (home_forward,
 * COH_DIFF_FWD): a former home remembers it was one, and its knowledge
 * always names a later home, so forwarding ends at the current one.
 *
 * Gradually, so data and work do not chase each other (seed 003 §4.4):
 * a window moves nothing while a profiled loop has re-partitioned since the
 * last one (its division is not settled yet); a page moves only when one
 * node dominates (3/4 of its remote faults, or twice the modification of
 * everyone else together, as far as a majority vote proves it); a page that moved stays for two windows,
 * four times longer each time it comes back to a node it was taken from
 * (a page that ping-pongs settles), and such a page is judged on the
 * counts of its whole stay, by a majority (it settles at the writer of
 * most phases, not at whichever phase its last window fell in); and a
 * home gives away at most DSM_MIGRATE_MAX pages per window.
 */
#ifndef DSM_COHERENCE_MIGRATE_H
#define DSM_COHERENCE_MIGRATE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct home_ops;

/* Registers the message types; reads the settings (DSM_MIGRATE_PAGES,
 * DSM_MIGRATE_HOMES, DSM_MIGRATE_PERIOD, DSM_MIGRATE_MAX). Migration
 * runs only where `ops` can give and take pages. */
void migrate_start(const struct home_ops *ops);
void migrate_finish(void);


/* Whether migration is on: the protocol then reports its home's own
 * changes (migrate_note_write) — home migration weighs them, and page
 * migration keeps a page the home writes. */
bool migrate_counts_writes(void);
/* Migration rounds this node has run: a home known at a count is the home
 * while the count stays (homes move only in a round). */
uint32_t migrate_rounds(void);

/* At the home: `node` faulted on the page (a fetch it served). */
void migrate_note_fault(size_t page, int node);
/* At the home: `node` (this node for its own writes) modified `bytes` of
 * the page. */
void migrate_note_write(size_t page, int node, size_t bytes);

/* The node this one gave the page to when it was its home, or -1: where
 * a former home forwards what still reaches it. */
int migrate_successor(size_t page);
/* A former home asked for a page whose move is not yet acknowledged keeps
 * the request and forwards it when the acknowledgement comes: true if held. */
bool migrate_hold_request(size_t page, int requester, uint32_t need);

/* At a home giving the page away (home_ops.give, under the lock that
 * orders its serves): records `to` as the page's successor and then as its
 * home here — the one place a home stops being one, in that order — and
 * sends it the page, with the home's state. */
void migrate_send(int to, size_t page, uint32_t version, const uint64_t *set, size_t words,
                  const void *data);

/* coherence_ops.barrier_vote and .barrier_done of the protocols whose
 * homes move: every DSM_MIGRATE_PERIOD-th barrier ends a window, and a
 * node votes for a migration round when a page counted at it qualifies;
 * the round runs when some node voted. */
bool migrate_barrier_vote(void);
bool migrate_barrier_done(uint32_t votes);
/* coherence_ops.join_wants_barrier: a region's join counts in the window
 * as a barrier does, and the join that ends a window is a barrier (which
 * counts itself and votes): back-to-back parallel regions move homes as
 * the loops of one region do, and the joins between cost no message. */
bool migrate_join_wants_barrier(void);

/* ---- the rules, as pure functions (unit-tested) ------------------------- */

/* One page's counts at its home over a window. Each keeps one candidate
 * by a majority vote (Boyer-Moore; weighted by bytes for writes): its lead
 * over all other nodes together. Zeroed: nothing counted. */
struct migrate_counts {
    uint64_t lead_bytes;   /* the write candidate's lead */
    uint64_t remote_bytes; /* bytes modified by nodes other than the home */
    uint64_t home_bytes;   /* bytes modified by the home */
    uint32_t faults;       /* remote faults */
    uint32_t lead_faults;  /* the fault candidate's lead */
    int32_t  fault_cand1;  /* fault candidate plus one; 0: none */
    int32_t  write_cand1;  /* write candidate plus one; 0: none */
};

/* `node` faulted on the page (not the home: its accesses never fault). */
void migrate_count_fault(struct migrate_counts *c, int node);
/* `node` (the home itself when node == home) modified `bytes` of it. */
void migrate_count_write(struct migrate_counts *c, int node, int home, size_t bytes);

enum migrate_reason { MIGRATE_STAY, MIGRATE_FOR_WRITES, MIGRATE_FOR_FAULTS };
/* Where the page homed at `home` should go (-1: stay), and why. A vote's
 * candidate has at least its lead (the votes left unpaired are all its
 * own), every other node together at most the rest; the rules hold on
 * that bound. Home migration (if homes_on) first: a writer that modified at
 * least twice what all others, the home included, did together (lead >=
 * 2/3 of all bytes), and MIGRATE_MIN_BYTES at least. Then page migration
 * (if pages_on): a node with 3/4 of the remote faults (lead >= 3/4 of them;
 * a lone reader's lead is all its faults), MIGRATE_MIN_FAULTS at least,
 * unless the home modified the page (moving it would make the home's
 * writes remote). Counts `over_a_stay` (a page that bounced, judged on
 * its whole stay: migrate.c) move it for writes on a provable majority
 * (lead > 1/2 of all bytes): the stay, many windows long, is the
 * hysteresis, and the writer of most phases is where the page costs
 * fewest diffs. */
int migrate_decide(const struct migrate_counts *c, int home, bool pages_on, bool homes_on,
                   bool over_a_stay, enum migrate_reason *why);

/* Below these a page does not move: one fault or one word is no pattern. */
#define MIGRATE_MIN_FAULTS 2
#define MIGRATE_MIN_BYTES 64
#endif
