/*
 * par.h — one parallel kernel, three builds.
 *
 * An application is written once, as an SPMD body `par_main` that every
 * process (or thread) runs, against the handful of calls below: in the
 * spirit of SPLASH's PARMACS macros. CMake builds each application three
 * times from the same source:
 *
 *   <app>      PAR_DSM:     one process per node under dsmrun; shared data
 *                           in the DSM (dsm_malloc, dsm_barrier, dsm_lock);
 *   <app>_thr  PAR_THREADS: one process, `-p P` POSIX threads sharing its
 *                           memory: the hardware-shared-memory limit;
 *   <app>_seq  PAR_SEQ:     one process, one thread, no DSM: the baseline
 *                           that speedups are measured against.
 *
 * Rules for kernels, so the three builds mean the same thing:
 *   - data every process sees lives in memory from par_alloc (or is handed
 *     out with par_bcast); globals are for constants only, since threads
 *     share them and DSM nodes do not;
 *   - the timed section is bracketed by par_timer_start/par_timer_stop,
 *     which every process calls (they include a barrier); only it counts;
 *   - par_report prints one RESULT line (process 0) that bench/run parses,
 *     and exits non-zero on every process when the self-check failed.
 */
#ifndef PAR_H
#define PAR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "args.h"
#include "../kernels/fnv1a.h"

/* Where an allocation's pages live; meaningful only under PAR_DSM. */
enum par_home { PAR_HOME_DEFAULT, PAR_HOME_BLOCK, PAR_HOME_CYCLIC, PAR_HOME_FIRST_TOUCH };

/* The application: run by every process (thread). argv has had the
 * harness's own options (-p P under PAR_THREADS) removed. Returns the
 * process's exit status. */
int par_main(int argc, char **argv);

int  par_id(void);   /* 0 .. par_n()-1 */
int  par_n(void);    /* processes (nodes or threads) */
const char *par_mode(void); /* "dsm", "threads" or "seq" */

/* Collective: every process calls it with the same size; all get the same
 * zeroed, page-aligned block. */
void *par_alloc(size_t size);
void *par_alloc_home(size_t size, enum par_home home);
/* Collective: process `root`'s len bytes at buf are copied to buf on all. */
void par_bcast(void *buf, size_t len, int root);
void par_barrier(void);
void par_lock(int id);   /* id >= 0 */
void par_unlock(int id);

double par_now(void);    /* seconds, monotonic */

/* Collective. Start: a barrier, then this process's DSM statistics are
 * reset so they cover the timed section alone. Stop: a barrier, the
 * statistics are frozen for the report (dsmrun --stats); returns the
 * section's seconds (as process 0 measured them) on every process. */
void   par_timer_start(void);
double par_timer_stop(void);

/* Collective. Process 0 prints
 *   RESULT app=<app> mode=<mode> procs=<n> size=<size> time=<s> check=ok|FAIL [extra]
 * `ok` is combined over all processes (any false fails all). Returns the
 * exit status par_main should return: 0, or 1 after a failed check. */
int par_report(const char *app, const char *size, double seconds, bool ok, const char *extra);

/* The checksums of results that RESULT lines carry: fnv1a(h, p, n), h
 * FNV1A_START for the first (../kernels/fnv1a.h, the OpenMP programs'
 * too). */

/* Ends the whole job at once with a message: for bad options and broken
 * invariants. */
__attribute__((noreturn, format(printf, 1, 2))) void par_die(const char *fmt, ...);

/* Options (args.h): every process parses the same argv against the
 * application's table; process 0 prints the usage or the error. Returns
 * ARGS_RUN, or the status par_main should return at once. par_bad_args is
 * for the application's own checks across options, after par_parse_args. */
int par_parse_args(int argc, char **argv, const struct arg_option *table, void (*usage)(FILE *f));
__attribute__((format(printf, 2, 3))) int par_bad_args(void (*usage)(FILE *f), const char *fmt,
                                                       ...);

/* The words of every application's `--size test|quick|full`, in that order
 * (ARG_WORD's words), and what they are. */
extern const char *const par_size_words[];
#define PAR_SIZE_WANT "test, quick or full"
/* The same and `large`: for the applications whose `quick` run takes less
 * than the half second on 2 threads that issue 27 measures at (fft, fft3d). */
extern const char *const par_size_words_large[];
#define PAR_SIZE_WANT_LARGE "test, quick, full or large"
#endif
