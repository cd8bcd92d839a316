/* runtime.h — the runtime's context, reached through rt(); the node's
 * identity and settings are the job's (base/job.h). */
#ifndef DSM_RUNTIME_RUNTIME_H
#define DSM_RUNTIME_RUNTIME_H
#include <stdbool.h>

#include "base/job.h"
#include "parallel/parallel.h"

/* The runtime's message types (numbered on from parallel's; ipc.h). */
enum runtime_type {
    RUNTIME_STATS = PARALLEL_TYPE_NEXT, /* a node's statistics, to node 0 at finish */
    RUNTIME_CREATE,                 /* run a function with the master's globals */
    RUNTIME_CREATE_DONE,            /* it returned; the worker's intervals */
    RUNTIME_EXIT,                   /* fork style is over; leave */
    RUNTIME_GLOBALS,                /* the shared globals' first contents, from the master */
    RUNTIME_PTHREAD_START,          /* start a program's thread placed here (pthreads.c) */
    RUNTIME_SIGACTION,              /* a signal's disposition, the program's on every node (signals.c) */
    RUNTIME_SETTING,                /* a process-wide setting made on every node (libc_settings.c) */
    RUNTIME_SETTING_DONE,           /* made (or the errno why not) */
    RUNTIME_END,                    /* the program called exit there: end, with aux's status (exit.c) */
    RUNTIME_END_SEEN,               /* the answer: this node ends too */
    RUNTIME_HEAP_SIZE,              /* the size of a heap block of the receiver's arena? (heap.c) */
    RUNTIME_HEAP_SIZE_IS,           /* the answer */
    RUNTIME_STREAM_IO,              /* output through a descriptor or stream the receiver opened (streams.c) */
    RUNTIME_STREAM_OWN,             /* a stream claimed at node 0, known elsewhere, or closed */
    RUNTIME_STREAM_DONE,            /* a stream call's result and errno */
    RUNTIME_TYPE_NEXT
};
_Static_assert((int)RUNTIME_TYPE_NEXT <= IPC_TYPE_MAX, "more message types than ipc has slots");
_Static_assert(IPC_TYPE_MAX <= 256, "ipc_hdr's type is one byte");

struct runtime {
    bool              share_globals; /* asked for by dsm_main (dsmcc's programs) */
    bool              master_only;   /* started by dsm_main: workers never run main */
    bool              fork_asked;    /* dsm_startup_fork or dsm_main: fork style to come */
    char             *main_stack;    /* the master's main runs here, in the region */
    size_t            main_stack_len;
};

struct runtime *rt(void);

/* forked.c: fork's child is not a node (pthread_atfork) */
void forked_start(void);

/* heap.c: the program's heap; a block's size is asked of its node. */
void heap_start(void);

/* exit.c: the program's exit, anywhere but main's thread at its
 * ordinary end, ends the job with its status and without dsm_finish;
 * runtime_exit_handlers runs the exit handlers the program registered
 * once the job ran (the job's, in this table: pthreads.c's, under
 * SYNC_PTHREAD_ATEXIT_ID), last first. */
#define PTHREAD_ATEXIT_MAX 1024
struct pthread_atexit {
    uint32_t n;
    uint64_t fn[PTHREAD_ATEXIT_MAX];
};
void exit_start(void);
void runtime_exit_handlers(void);
__attribute__((noreturn)) void runtime_exit(int status);

/* fork.c */
void fork_start(void);
void fork_finish(void);


/* globals.c: every node's globals start as the master's. */
void globals_start(void);
void globals_sync(void);

/* fork.c: fork style begins (the workers wait for creates, never
 * returning); run fn(arg) on one node (PARMACS CREATE). */
void fork_begin(void);
void fork_create_on(int node, void (*fn)(void *), void *arg);
/* fork.c: dsm_create with fn given a copy of the len bytes at arg on
 * every other node (carried in the create; the master's own threads get
 * arg itself). */
void fork_create_copy(void (*fn)(void *), const void *arg, size_t len);

/* pthreads.c: a dsmcc program's threads spread over the nodes; and the
 * time this node ran any of them so far (a worker waiting for the master's
 * work is not idle then). */
void pthreads_start(bool on);
void pthreads_finish(void);
uint64_t pthreads_busy_ns(void);
/* Whether the calling thread is main's, with no other thread of the
 * program left anywhere: its exit is the job's ordinary end. */
bool pthreads_main_alone(void);

/* pthread_key.c: a dsmcc program's thread-specific data keys are the
 * job's, in this table (shared memory, in pthreads.c's thread table,
 * under SYNC_PTHREAD_KEYS_ID). A key is PTHREAD_KEY_TAG | generation << 10
 * | index: never one of the C library's (below 1024), and a key made
 * again at an index holds no value a thread set for the one before. */
#define PTHREAD_KEYS    1024
#define PTHREAD_KEY_TAG 0x40000000u
struct pthread_keys {
    uint32_t key[PTHREAD_KEYS];        /* the live key at each index; 0: free */
    uint32_t gen[PTHREAD_KEYS];        /* the generation of its last key */
    uint64_t destructor[PTHREAD_KEYS];
};
/* The job's table, made on node 0 if need be; NULL where no thread of the
 * program has run (a worker node's own thread). */
struct pthread_keys *pthreads_keys(void);
/* The job's exit handlers (exit.c), the table made on node 0 if `make`;
 * NULL where the program's threads are not spread over the nodes, or no
 * table is known here. */
struct pthread_atexit *pthreads_atexit(bool make);
/* The calling thread's destructors, as the C library runs them at a
 * thread's end (pthread_exit, or its routine's return). */
void pthread_keys_exit(void);

/* libc_rand.c: the C library's random number generators as glibc's,
 * over one state (the job's: in pthreads.c's table, under the dsm lock
 * SYNC_PTHREAD_RAND_ID). All zero is a process's state before any call. */
struct libc_rand48 {
    unsigned short x[3], old_x[3], c, init; /* init: a and c set */
    uint64_t       a;
};
struct libc_rand {
    int32_t  table[32];   /* random's own buffer (glibc's randtbl) */
    int32_t *state;       /* the current buffer's word 1; NULL: as srandom(1) */
    int32_t  type, deg, sep, front, rear; /* front, rear: indices into state */
    struct libc_rand48 r48;
};
int32_t libc_random_next(struct libc_rand *r);
void    libc_random_seed(struct libc_rand *r, unsigned seed);
char   *libc_random_initstate(struct libc_rand *r, unsigned seed, char *buf, size_t n);
char   *libc_random_setstate(struct libc_rand *r, char *buf);
double  libc_erand48(struct libc_rand48 *d, unsigned short xsubi[3]);
long    libc_nrand48(struct libc_rand48 *d, unsigned short xsubi[3]);
long    libc_jrand48(struct libc_rand48 *d, unsigned short xsubi[3]);
void    libc_srand48(struct libc_rand48 *d, long seed);
unsigned short *libc_seed48(struct libc_rand48 *d, const unsigned short seed[3]);
void    libc_lcong48(struct libc_rand48 *d, const unsigned short param[7]);
/* The job's generators' state, made on node 0 if need be; NULL where no
 * thread of the program has run (pthreads_keys). */
struct libc_rand *pthreads_libc_rand(void);

/* signals.c: the program's signal dispositions are the job's. */
void signals_start(void);
/* libc_settings.c: chdir, umask, the environment and the locale are. */
void libc_settings_start(void);

/* streams.c: the program's descriptors and streams are the job's. */
void streams_start(void);
void streams_finish(void);

/* mmap.c: at the job's end, on the master: the program's writable shared
 * file mappings written back; mmap_write_back does it on any node. */
void mmap_finish(void);
void mmap_write_back(void);

/* report.c: statistics gathered at node 0 and printed at dsm_finish. */
void report_start(void);
void report_started(void);
void report_finish(void);
#endif
