/*
 * conf_threads_main.c — the main of a conformance program built to run
 * with every thread of every node as a participant (<prog>_thr;
 * conf_threads.h says how): starts the job fork style, hands argc and argv
 * to every thread of every node through shared memory, runs the program's
 * own main (conf_spmd_main) on each — the master's caller too — and ends
 * the job once every one has returned. A program whose main returns
 * nonzero fails the job: that thread exits with 1, saying so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm.h"

int conf_spmd_main(int argc, char **argv);

/* argc and argv in shared memory: the master's stack and its globals after
 * the create are not the other nodes'. */
struct conf_args {
    int    argc;
    size_t len;    /* bytes of text */
    char   text[]; /* argv[0] '\0' argv[1] '\0' ... */
};

static void run(void *arg)
{
    const struct conf_args *a = arg;
    /* The thread's own copy, which the program may change as a main may. */
    char **argv = calloc((size_t)a->argc + 1, sizeof *argv);
    char *text = malloc(a->len);
    if (!argv || !text) {
        fprintf(stderr, "node %d thread %d: out of memory for argv\n", dsm_rank(), dsm_thread_id());
        exit(1);
    }
    memcpy(text, a->text, a->len);
    char *p = text;
    for (int i = 0; i < a->argc; i++) {
        argv[i] = p;
        p += strlen(p) + 1;
    }
    int rc = conf_spmd_main(a->argc, argv);
    if (rc != 0) {
        fprintf(stderr, "node %d thread %d: %s returned %d\n", dsm_rank(), dsm_thread_id(),
                argv[0], rc);
        exit(1);
    }
    free(text);
    free(argv);
}

int main(int argc, char **argv)
{
    dsm_startup_fork(&argc, &argv);
    size_t len = 0;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    struct conf_args *a = dsm_malloc(sizeof *a + len);
    a->argc = argc;
    a->len = len;
    char *p = a->text;
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]) + 1;
        memcpy(p, argv[i], n);
        p += n;
    }
    dsm_create(run, a);
    run(a);
    dsm_wait_for_end();
    dsm_free(a);
    dsm_finish();
    return 0;
}
