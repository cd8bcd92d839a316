/*
 * oneside.h — one-sided page fetch (DSM_NET=ucx): a node reads a page
 * from its home's memory with the network's get, without the home's CPU
 * (oneside.c; the design and why it is correct: docs/protocols.md,
 * "One-sided page fetch").
 *
 * A home *publishes* a page it would serve: a copy of what a request
 * would get (hlrc: the snapshot, or the page), at its version, in a slot
 * of a pool its peers can read, named by the page's *word*, whose sequence
 * number is odd while the home changes the word or the slot (a seqlock).
 * A reader takes the word, the slot, and the word again, and keeps the
 * page only if both words are the same, even and name a slot. Anything
 * else is a request to the home, as without UCX.
 */
#ifndef DSM_COHERENCE_ONESIDE_H
#define DSM_COHERENCE_ONESIDE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At the protocol's start, before the transport runs: asks for the words
 * and the pool when the job may use them (DSM_NET=ucx, DSM_NET_ONE_SIDED
 * not off, more than one node). */
void oneside_start(void);
/* Whether this node reads others' pages one-sided (and publishes its own
 * where the transport gave it the memory). */
bool oneside_on(void);

/* At the home, under the lock that orders the protocol's serves: `content`
 * is what a fetch of the page gets now, at `version`; NULL: nothing may be
 * read (a request is needed). A page that finds no free slot is not
 * published. */
void oneside_publish(size_t page, uint32_t version, const void *content);

/* At a reader: the page from `home` into its frame (system view), at a
 * version of at least `need`. True with *version set; false when it must
 * be asked for (not readable, not published, changing, older than need). */
bool oneside_fetch(size_t page, int home, uint32_t need, uint32_t *version);
#endif
