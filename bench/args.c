/*
 * args.c — the benchmarks' table-driven command-line parser (args.h).
 */
#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The row's value from text: 0, or -1 when the text is not a value the
 * row takes. Stored in the row's destination where `store`; ARG_CUSTOM's
 * parse stores as it checks, so it is called only then. */
static int take(const struct arg_option *o, const char *text, bool store)
{
    char *end;
    errno = 0;
    switch (o->type) {
    case ARG_INT: {
        long v = strtol(text, &end, 10);
        if (errno || end == text || *end || v < o->lo || v > o->hi || (o->valid && !o->valid(v)))
            return -1;
        if (store)
            *(int *)o->dest = (int)v;
        return 0;
    }
    case ARG_DOUBLE: {
        double v = strtod(text, &end);
        if (errno || end == text || *end || !(v >= o->lo && v <= o->hi)) /* NaN too */
            return -1;
        if (store)
            *(double *)o->dest = v;
        return 0;
    }
    case ARG_WORD:
    case ARG_WORD_ANYCASE:
        for (int k = 0; o->words[k]; k++)
            if (o->type == ARG_WORD ? !strcmp(text, o->words[k])
                                    : !strcasecmp(text, o->words[k])) {
                if (store)
                    *(int *)o->dest = o->values ? o->values[k] : k;
                return 0;
            }
        return -1;
    case ARG_SET:
        if (store)
            *(int *)o->dest = o->value;
        return 0;
    case ARG_CUSTOM:
        return store && o->parse(text, o->dest) ? -1 : 0;
    }
    return -1;
}

static const struct arg_option *find(const struct arg_option *table, const char *name)
{
    for (; table->name; table++)
        if (!strcmp(table->name, name))
            return table;
    return NULL;
}

/* One pass over argv. Pass 0 checks every option and stores the rows
 * without `overrides`; pass 1 stores the rows with it. */
static int parse_pass(int pass, int argc, char *const argv[], const struct arg_option *table,
                      char *why, size_t len)
{
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (!strcmp(name, "-h") || !strcmp(name, "--help"))
            return ARGS_HELP;
        const struct arg_option *o = find(table, name);
        if (!o) {
            snprintf(why, len, "unknown option '%s'", name);
            return ARGS_BAD;
        }
        const char *text = NULL;
        if (o->type != ARG_SET) {
            if (i + 1 >= argc) {
                snprintf(why, len, "%s wants a value: %s", name, o->want);
                return ARGS_BAD;
            }
            text = argv[++i];
        }
        /* Every row of this name, from the first (find's) on. */
        for (; o->name; o++)
            if (!strcmp(o->name, name) && take(o, text, o->overrides == (pass == 1))) {
                snprintf(why, len, "%s: bad value '%s'; want %s", name, text, o->want);
                return ARGS_BAD;
            }
    }
    return ARGS_RUN;
}

int args_parse(int argc, char *const argv[], const struct arg_option *table, char *why,
               size_t len)
{
    int rc = parse_pass(0, argc, argv, table, why, len);
    return rc == ARGS_RUN ? parse_pass(1, argc, argv, table, why, len) : rc;
}

static void say_bad(void (*usage)(FILE *f), const char *why)
{
    fprintf(stderr, "%s: %s\n", program_invocation_short_name, why);
    usage(stderr);
}

int args_read(int argc, char *const argv[], const struct arg_option *table,
              void (*usage)(FILE *f), bool speak)
{
    char why[256];
    int rc = args_parse(argc, argv, table, why, sizeof why);
    if (speak && rc == ARGS_HELP)
        usage(stdout);
    else if (speak && rc == ARGS_BAD)
        say_bad(usage, why);
    return rc;
}

int args_bad(void (*usage)(FILE *f), bool speak, const char *fmt, ...)
{
    if (speak) {
        char why[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        say_bad(usage, why);
    }
    return ARGS_BAD;
}
