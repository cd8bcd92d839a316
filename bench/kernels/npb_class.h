/*
 * npb_class.h — the NAS kernels' class option as the standalone OpenMP
 * programs read it (bench/omp/cg.c and ep.c): `--size test|quick|full`
 * and `-c S|W|A` (either case) name NPB's classes S, W and A, the words
 * their bench/apps versions take through npb.c and par.h's parser.
 *
 * Header-only and C library only, so that each OpenMP program stays one
 * standalone source that includes it by a relative path.
 */
#ifndef NPB_CLASS_H
#define NPB_CLASS_H
#include <stdio.h>
#include <string.h>

#define NPB_RUN (-1)

/* Reads argv into *k: 0, 1 or 2 for S, W or A (the order of every class
 * table, which is --size's: test, quick, full), a later option winning, A
 * unless one is given. Returns NPB_RUN, or after -h or --help the usage on
 * stdout and 0, after a bad option the usage on stderr and 2: the status
 * main returns. */
static inline int npb_class_option(int argc, char **argv, void (*usage)(FILE *f), int *k)
{
    static const char *const sizes[] = {"test", "quick", "full"};
    static const char names[] = "SWA";
    *k = 2;
    for (int i = 1; i < argc; i += 2) { /* an option and its word */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int found = 3;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--size") && v) {
            found = 0;
            while (found < 3 && strcmp(v, sizes[found]))
                found++;
        } else if (!strcmp(argv[i], "-c") && v && strlen(v) == 1) {
            found = 0;
            while (found < 3 && names[found] != (v[0] & ~0x20))
                found++;
        }
        if (found == 3) {
            usage(stderr);
            return 2;
        }
        *k = found;
    }
    return NPB_RUN;
}
#endif
