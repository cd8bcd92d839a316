/*
 * hlrc_batch.h — hlrc's atomic updates sent home in batches
 * (hlrc_batch.c), and what the rest of hlrc calls of it. Private to
 * src/coherence/.
 */
#ifndef DSM_COHERENCE_HLRC_BATCH_H
#define DSM_COHERENCE_HLRC_BATCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coherence/coherence.h"

/* At hlrc's start: registers the messages, and turns batches on for a
 * job of several nodes that does atomics at the home (DSM_ATOMIC_AT_HOME). */
void hlrc_batch_register(void);
void hlrc_batch_start(void);
/* Whether batches are on (one thread a node): then every atomic of this node that may write a
 * page homed elsewhere is done at the home, never on a copy here
 * (hlrc_atomic.c), so that none is lost to a diff. */
bool hlrc_batch_on(void);
/* coherence_ops.atomic_queue and atomic_flush (coherence.h). */
bool hlrc_batch_queue(size_t page, size_t offset, const struct coh_atomic *a);
void hlrc_batch_flush(void);
/* The same flush, by a caller that holds the fault lock. */
void hlrc_batch_flush_locked(void);

/* hlrc_atomic.c: this node's atomic `a` made the page `version` at its
 * home (coherence_ops.atomic_wrote), under the fault lock. */
void hlrc_atomic_wrote_locked(size_t page, size_t offset, const struct coh_atomic *a,
                              uint32_t version);
#endif
