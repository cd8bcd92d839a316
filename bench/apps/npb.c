/*
 * npb.c — the NAS kernels' class options (npb.h).
 */
#include "npb.h"

int npb_class_args(int argc, char **argv, void (*usage)(FILE *f), int *cls)
{
    static const char *const class_words[] = {"S", "W", "A", NULL};
    *cls = 2;
    struct arg_option options[] = {
        {"--size", ARG_WORD, cls, PAR_SIZE_WANT, .words = par_size_words},
        {"-c", ARG_WORD_ANYCASE, cls, "S, W or A", .words = class_words},
        {0}};
    return par_parse_args(argc, argv, options, usage);
}

void npb_usage(FILE *f, const char *app, const char *what, const char *sizes)
{
    fprintf(f,
            "usage: %s [--size test|quick|full] [-c S|W|A]\n"
            "  %s\n"
            "  --size  test = %s\n"
            "  -c      NPB class S, W or A\n",
            app, what, sizes);
}
