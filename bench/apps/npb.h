/*
 * npb.h — what the NAS kernels (cg.c, ep.c) share: their options, which
 * name NPB's problem classes S, W and A the same way, and their usage.
 */
#ifndef NPB_H
#define NPB_H
#include "par.h"

/* Parses --size test|quick|full (classes S, W, A) and -c S|W|A (either
 * case), a later one winning, into *cls: 0, 1 or 2 for S, W or A; A
 * unless one is given. Returns what par_parse_args does. */
int npb_class_args(int argc, char **argv, void (*usage)(FILE *f), int *cls);

/* The usage text of kernel `app` on f: what it computes (`what`), and what
 * --size's words stand for (`sizes`, after "test = "). */
void npb_usage(FILE *f, const char *app, const char *what, const char *sizes);
#endif
