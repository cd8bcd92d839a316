/*
 * args.h — the benchmarks' one command-line parser, driven by a table.
 *
 * A program lists its options in a table ended by an empty row, and
 * args_read() reads argv against it, left to right:
 *
 *   static const char *const lock_words[] = {"block", "mol", NULL};
 *   struct arg_option options[] = {
 *       {"-n", ARG_INT, &n, "a whole number 1..8192", .lo = 1, .hi = 8192},
 *       {"-l", ARG_WORD, &mode, "block or mol", .words = lock_words},
 *       {0}};
 *
 * Every option takes the next argument as its value, but ARG_SET, which
 * takes none. An option may have several rows, one for each variable it
 * sets (--size sets both N and the steps): all rows of its name apply, in
 * table order. Options apply in the order given, so a later one overrides
 * an earlier one that sets the same variable; but rows marked `overrides`
 * apply after all others, wherever they stand (-n over --size's N). -h and
 * --help ask for the usage text.
 *
 * A bad option, a missing or bad value ends the parse with one line that
 * says which and what was wanted (the row's `want`), then the usage text,
 * on stderr; a program's checks across options (-n a multiple of -b) end it
 * the same way through args_bad().
 */
#ifndef DSM_BENCH_ARGS_H
#define DSM_BENCH_ARGS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum arg_type {
    ARG_INT,          /* a whole number in lo..hi, and valid() if given: int */
    ARG_DOUBLE,       /* a number in lo..hi: double */
    ARG_WORD,         /* one of words: int, values[k] for words[k] (k without values) */
    ARG_WORD_ANYCASE, /* the same, letter case ignored */
    ARG_SET,          /* no value: int, set to `value` */
    ARG_CUSTOM,       /* parse(text, dest) says 0 (taken) or -1 (bad) */
};

struct arg_option {
    const char   *name; /* "-n", "--size"; NULL ends the table */
    enum arg_type type;
    void         *dest;
    const char   *want; /* what a good value is, for the error line */
    bool          overrides; /* applies after the rows without it */
    double        lo, hi;
    bool        (*valid)(long v);
    const char *const *words; /* ended by NULL */
    const int    *values;
    int           value;
    int         (*parse)(const char *text, void *dest);
};

/* args_read's answers, which double as the exit status after the last two. */
enum { ARGS_RUN = -1, ARGS_HELP = 0, ARGS_BAD = 2 };

/* The parse alone, printing nothing: ARGS_RUN, ARGS_HELP, or ARGS_BAD with
 * the reason (one line, no newline) in why[len]. */
int args_parse(int argc, char *const argv[], const struct arg_option *table, char *why,
               size_t len);

/* args_parse, then, where `speak` (one process of a job speaks for all:
 * each parses the same argv and so decides the same), the usage text on
 * stdout after -h, or the reason and the usage text on stderr after a bad
 * option. Returns ARGS_RUN, or the status to end with: ARGS_HELP (0) or
 * ARGS_BAD (2). */
int args_read(int argc, char *const argv[], const struct arg_option *table,
              void (*usage)(FILE *f), bool speak);

/* For a program's own checks after args_read: where `speak`, the reason
 * and the usage text on stderr. Returns ARGS_BAD. */
__attribute__((format(printf, 3, 4))) int args_bad(void (*usage)(FILE *f), bool speak,
                                                   const char *fmt, ...);
#endif
