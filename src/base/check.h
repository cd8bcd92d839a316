/*
 * check.h — the protocols' invariant checks (DSM_CHECK=1).
 *
 * A run that happens to print the right answer may still have broken the
 * consistency model on the way (an interval applied before one it depends
 * on, two nodes that both believe they are a page's home). With DSM_CHECK=1
 * each protocol tests its invariants where it acts, and the first violation
 * ends the job with one line naming the invariant, the page and the nodes,
 * so a passing run that broke causality fails. Off by default: users' runs
 * pay one predictable branch per check site. `make test` turns it on.
 */
#ifndef DSM_BASE_CHECK_H
#define DSM_BASE_CHECK_H

#include "base/job.h"

#include <stdbool.h>

static inline bool check_on(void) { return job()->cfg.check != 0; }

/* Ends the job: "dsm: node R: invariant violated: <invariant>: <detail>". */
__attribute__((noreturn, format(printf, 2, 3)))
void check_violated(const char *invariant, const char *fmt, ...);
#endif
