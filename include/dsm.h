/*
 * dsm.h — the public API of dsm, a page-based software distributed shared
 * memory for clusters.
 *
 * A job is N processes ("nodes") started by `dsmrun -n N prog args`.
 * Errors inside calls that can fail return a negative errno value; fatal
 * conditions (a dead peer, bad configuration) end the whole job with one
 * line on stderr naming the node and the cause.
 */
#ifndef DSM_H
#define DSM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Runtime ------------------------------------------------------------ */

/* Joins the job this process belongs to (SPMD: returns on every node).
 * Removes dsm's own options from argc/argv, if any. Without dsmrun, the
 * program runs as a 1-node job. Returns 0. */
int dsm_startup(int *argc, char ***argv);

/* This node's rank, 0 .. dsm_nodes()-1. Node 0 is the master. */
int dsm_rank(void);

/* Number of nodes in the job. */
int dsm_nodes(void);

/* SMP nodes (dsmrun --threads T, DSM_THREADS; hlrc only): a node is one
 * process with T application threads that share its pages in hardware.
 * They run fork style's functions: dsm_create(fn, arg) runs fn on T
 * threads of every other node and on T - 1 threads of the master beside
 * its caller (who runs fn too, as with one thread per node), and
 * dsm_wait_for_end waits for them all. dsm_barrier is then met by every
 * thread of every node; a lock is held by one thread (the one that took
 * it must release it) and passes between a node's threads without a
 * message, and dsm_cond_wait gives up and takes again the caller's hold;
 * dsm_bcast is collective over every thread, its root a thread id (the
 * root thread's buffer goes to every other thread's). dsm_rank and
 * dsm_nodes still name nodes; dsm_thread_id is the
 * calling thread's id in the job, node-major (node r's threads are
 * r*T .. r*T+T-1; the master's caller is 0), of dsm_thread_count = N*T;
 * dsm_node_threads is T. With T = 1 they equal dsm_rank and dsm_nodes.
 * SPMD programs, OpenMP, PARMACS, dsm_loop and dsm_flush run one thread
 * per node and are refused, each in one line, with T > 1. */
int dsm_thread_id(void);
int dsm_thread_count(void);
int dsm_node_threads(void);

/* Leaves the job: waits until every node has called dsm_finish, so no node
 * goes away while another may still need it, then releases everything. */
void dsm_finish(void);

/* Fork style: returns only on the master (node 0). The other nodes wait to
 * run what dsm_create hands them, and exit when the master calls
 * dsm_finish. Returns 0 on the master. */
int dsm_startup_fork(int *argc, char ***argv);

/* Fork style, master only: runs fn(arg) on every other node — one call
 * starts all N-1 workers, not one (unlike pthread_create or PARMACS
 * CREATE(fn)). With private
 * globals each starts from a copy of the master's global variables (.data
 * and .bss) as they are at this call — fork semantics; with shared globals
 * (dsm_main below) nothing is copied: they are shared memory, and the
 * master's writes before the call are visible to fn. `arg` must be
 * meaningful on the other nodes: a pointer into shared memory, into the
 * globals, or (dsm_main) into main's frame. Returns at once; the master
 * runs no fn itself (call fn(arg) there too for N-way work).
 * One dsm_create per dsm_wait_for_end: a second call before the wait (the
 * workers would each run fn again, doubling the work of a program that
 * creates once per worker) ends the job with one line saying so. */
void dsm_create(void (*fn)(void *), void *arg);

/* Fork style, master only: waits until every fn started by dsm_create has
 * returned. */
void dsm_wait_for_end(void);

/* The program's heap in the shared-memory model. dsmcc links programs with
 * -Wl,--wrap=malloc (and calloc, realloc, free, posix_memalign,
 * aligned_alloc, memalign): the program's own calls — not those of the
 * libraries it uses — come here once the job has started, so a block the
 * master mallocs and hands to workers (through a global, a local of main, an
 * OpenMP shared variable) is shared memory, as it is under threads. Blocks
 * are dsm_malloc'ed (from the calling node's arena, no communication) and
 * zeroed. realloc of a block another node allocated ends the job with a
 * message (only its allocating node knows its size). */
void *dsm_heap_alloc(size_t size, size_t align);
void  dsm_heap_free(void *p);
void *dsm_heap_realloc(void *p, size_t size);
/* The bytes p's block holds, at least what was asked for; any node's
 * block, asked of any node (malloc_usable_size). */
size_t dsm_heap_usable_size(void *p);
/* Whether p is a block dsm_heap_alloc returned (else: the C library's). */
int   dsm_heap_owns(const void *p);
/* Whether the job has yet to start: the program's allocations until then —
 * its static initializers', C++ or C constructors' — come from a heap at
 * the same addresses on every node, which the start makes shared memory
 * holding the master's contents (docs/design.md). A block allocated then
 * is never given back. */
int   dsm_heap_prestart(void);

/* dsmcc links with -Wl,--wrap=pthread_create too (dsm/pthread.h): a
 * pthreads program's threads are placed on the nodes. Where they are not
 * (an OpenMP program, whose runtime owns the nodes) they run where they
 * are created, and pthread_create calls this first: a program that starts
 * threads on the master before any node has been given work runs on node
 * 0 alone, and in a job of two or more nodes the first such call prints
 * one line saying so. */
void  dsm_program_thread_created(void);

/* Master-only start, with shared globals — the shared-memory model of
 * PARMACS (SPLASH-2/3), OpenMP and pthreads programs. A program built with
 * `dsmcc` gets it without a source change: dsmcc links with
 * -Wl,--wrap=main, and the __wrap_main of libdsm-start.a calls
 * dsm_main(argc, argv, envp, main) before anything of main runs.
 *
 * On every node dsm_main joins the job (dsm_startup) with shared globals
 * (below). The other nodes then only wait for work (dsm_create) from the
 * first instant, and never run main: code before the first create —
 * reading input, printing a header, dsm_malloc — runs once. The master
 * runs main on a stack allocated in the shared region, so the address of
 * a local variable of main is valid on every node. The job ends when main
 * returns or the master calls exit: the program's exit handlers run first,
 * with shared memory still coherent, then the job ends on every node
 * (dsm_finish) and the exit status is main's. The program's own
 * dsm_startup / dsm_startup_fork calls return at once. dsm_barrier is for
 * the functions created on every node: main alone has no one to meet.
 *
 * Shared globals: the executable's .data and .bss (from __data_start to
 * _end) are shared memory, coherent under every protocol like dsm_malloc'ed
 * memory and homed on the master; their first contents are the master's
 * values when the job starts. The program's own malloc and friends are
 * shared too when dsmcc wraps them (dsm_heap_alloc above). Private on
 * every node: thread-locals, what shared libraries allocate for themselves
 * (the C library's own mallocs, libdsm's), every shared library's data
 * (libc's stdout, errno, environ; libm; libdsm itself), the stacks of
 * other threads, and everything after dsm_finish (exit handlers see the
 * node's last copy).
 * Copy relocations — a non-PIC executable's copies of library variables
 * such as stdout or optind — are refused at startup with a message naming
 * them (dsmcc compiles with -fPIC, which makes none). A program not built
 * with dsmcc may share its globals too (DSM_SHARED_GLOBALS=1, dsmrun
 * --shared-globals, or DSM_SHARED_GLOBALS; at file scope) if it links
 * libdsm as a shared library and its globals are page-aligned (dsmcc's
 * linker script); SPMD programs keep private, per-node globals unless they
 * ask. Release consistency applies to globals as to all shared memory:
 * racy flags (written and polled without a lock or barrier) need
 * dsm_flush on both sides, or `--protocol sc`.
 *
 * Returns only on the master, never: it exits with main's status. */
int dsm_main(int argc, char **argv, char **envp, int (*main_fn)(int, char **, char **));

/* At file scope in a program: asks for shared globals at link time. */
#define DSM_SHARED_GLOBALS const int dsm_shared_globals_requested = 1

/* ---- Shared memory -------------------------------------------------------
 *
 * One region at the same address on every node. Consistency is release
 * consistency: a program whose conflicting accesses are ordered by
 * dsm_barrier / dsm_lock / dsm_unlock (data-race-free) sees sequentially
 * consistent memory.
 */

/* Where an allocation's pages live (their home node). */
enum dsm_home {
    DSM_HOME_DEFAULT = 0,  /* the DSM_HOME setting (default: local) */
    DSM_HOME_LOCAL,        /* the allocating node */
    DSM_HOME_CYCLIC,       /* page i on node i mod N */
    DSM_HOME_BLOCK,        /* the pages split into N contiguous blocks, in node order */
    DSM_HOME_FIRST_TOUCH,  /* the first node to touch a page */
};

/* Allocates shared memory, callable on any node at any time, with no
 * communication; the pointer is valid on every node. Memory is zeroed.
 * Allocations of a page or more are page-aligned; smaller ones come from
 * size classes a quarter apart (at most a fifth of a block wasted beyond
 * 128 bytes), several to a page, each at least 16-byte aligned (malloc's
 * max_align_t). Exhausting the region ends
 * the job with a message saying so (DSM_REGION_SIZE sets it). */
void *dsm_malloc(size_t size);
/* The coherence unit in bytes (DSM_PAGE_SIZE): allocations of this size or
 * more are aligned to it, and it is what a fault fetches. */
size_t dsm_page_size(void);
void *dsm_malloc_home(size_t size, enum dsm_home home);
void  dsm_free(void *p);

/* Node `root` sends len bytes at buf; every node receives them at buf.
 * Every node must call it, in the same order (collective). */
void dsm_bcast(void *buf, size_t len, int root);

/* Waits until every node has arrived (collective). */
void dsm_barrier(void);

/* Locks: any int id from 0 to 0x5fffffff. Ids above are dsm's own, for
 * its OpenMP runtime: a call with one (or a negative id) ends the job with
 * a message naming the call and the id. A program that also uses shared
 * pthreads objects or the PARMACS lock macros leaves their ids to them
 * (0x20000000-0x3fffffff and 0x40000000-0x5fffffff) and keeps its own
 * below 0x20000000. A lock passes directly from its
 * releaser to the next waiter; the writes made before the release are
 * visible after the acquire. */
void dsm_lock(int id);
void dsm_unlock(int id);

/* A flush (OpenMP's): this node's writes become visible to the other
 * nodes' next flush, lock or barrier, and the writes the other nodes made
 * visible before it began (a flush, an unlock, a barrier) become visible
 * here. A flag written then flushed on one node, and polled with a flush
 * on another, is seen there under every protocol. Costs a round trip to
 * every other node under hlrc and lrc; nothing when never called. */
void dsm_flush(void);
/* A flush of the object [p, p + n): what OpenMP says an access to a
 * volatile object implies (a read as if preceded by a flush of it, a
 * write as if followed by one). Nothing when the object is not in shared
 * memory (or on one node); else a dsm_flush, which flushes more than the
 * object, as OpenMP lets a flush do. Safe before the job starts. */
void dsm_flush_object(const void *p, size_t n);

/* Condition variables (seed 001). dsm_cond_wait must be called holding
 * `lock`: it releases it, waits for a signal, and re-acquires it.
 * Condition ids, like lock ids, run from 0 to 0x5fffffff. */
void dsm_cond_wait(int cond, int lock);
void dsm_cond_signal(int cond);
void dsm_cond_broadcast(int cond);

/* ---- Loops across nodes (SPMD) ---------------------------------------------
 *
 * Divides the iterations [lo, hi) among the nodes. Every node calls it with
 * the same arguments, in the same order (collective where the schedule
 * needs it); it runs body(from, to, arg) for each range [from, to) of
 * iterations this node gets, and returns when this node's share is done
 * (no barrier: call dsm_barrier before reading what others computed).
 * `schedule` takes OMP_SCHEDULE's form: "static[,chunk]", "dynamic[,chunk]",
 * "guided[,chunk]", or seed 003's "profiled[,chunk[,eval_size[,eval_skip]]]",
 * which times the loop on every node and re-partitions it by the nodes'
 * measured speeds; NULL or "" is "static". `site` names the loop across its
 * executions (profiled state lives with it): an address the same on every
 * node, such as a string literal or a function. A bad schedule ends the job
 * with a message naming it. */
void dsm_loop(const void *site, long lo, long hi, const char *schedule,
              void (*body)(long from, long to, void *arg), void *arg);

/* The same as a pair, for a loop written in place (one at a time per node):
 *     dsm_loop_begin(site, lo, hi, schedule);
 *     for (long from, to; dsm_loop_next(&from, &to);)
 *         for (long i = from; i < to; i++) ...
 * dsm_loop_next returns 1 with the next range, then 0 once this node's
 * share is done (which ends the loop). */
void dsm_loop_begin(const void *site, long lo, long hi, const char *schedule);
int  dsm_loop_next(long *from, long *to);

/* ---- Statistics ---------------------------------------------------------- */

/* Zeroes this node's statistics (dsmrun --stats, --stats-json), so the
 * report covers only what follows: call it on every node, after a barrier,
 * to measure a program's parallel section without its set-up. */
void dsm_stats_reset(void);

/* Takes this node's statistics as they are now for the report, which then
 * leaves out what follows (a program's checks after its timed section);
 * dsm_stats_reset starts counting again. */
void dsm_stats_freeze(void);

/* ---- Ports and messages (seed 004, NORMA IPC/DE semantics) --------------
 *
 * A port is a message queue. Any number of nodes may send to it at once. A
 * message has inline data, optional out-of-line (OOL) regions, and may
 * carry port rights. Before any large transfer the receiver reserves all
 * the memory the message needs (request -> grant), so no transfer stalls
 * half-way; OOL pages then travel in windows straight into the reserved
 * buffers. Small inline-only messages take a one-message path.
 *
 * Flow control: a port has a queue limit. A message counts against it from
 * the moment it is sent until the receiving program takes it (dsm_msg_recv),
 * at which point a message-accept notification goes back to the sender. A
 * sender whose unaccepted messages to a port reach the limit blocks, or gets
 * -ETIMEDOUT when its timeout passes.
 *
 * Rights (Mach's): only a node that holds a right to a port may use it.
 * The receive right (one holder: the node whose program takes the
 * messages), send rights (any number of holders, counted), send-once
 * rights (consumed by the one message sent through them: the natural
 * reply right). A right belongs to a node and any of its threads may use
 * it; the program names it by a handle, a dsm_port_ref, that means nothing
 * on another node and cannot be made up: a handle the program forged, or
 * one whose right is gone (released, moved away in a message), is refused
 * with -EPERM. Rights travel in messages (dsm_msg_send_rights); moving a
 * receive right moves the port, its queued messages with it, while its
 * senders' rights keep working. A port registered under a name on a node
 * (dsm_port_create, dsm_port_register) gives a send right to whoever looks
 * it up there; any other port is reached only through a right someone
 * sent you. docs/api.md has the whole model.
 *
 * Timeouts are in seconds; DSM_FOREVER waits without limit.
 */
#define DSM_FOREVER (-1.0)
#define DSM_PORT_NAME_MAX 31

/* Kinds of right. */
#define DSM_RIGHT_RECEIVE   1
#define DSM_RIGHT_SEND      2
#define DSM_RIGHT_SEND_ONCE 3

/* A handle: this node's name for a right it holds. Copy it freely within
 * the node; only `name` and `nonce` count when it is used, and they are
 * checked against the node's table at every use. */
typedef struct dsm_port_ref {
    int32_t  node;        /* where the port lived when the handle was made (ports move) */
    int32_t  port;        /* a receive right's port number (dsm_msg_recv); else -1 */
    uint32_t queue_limit; /* the port's queue limit */
    uint32_t kind;        /* DSM_RIGHT_* */
    uint64_t id;          /* the port's identity, the same on every node: names no right */
    uint32_t name;        /* the right's entry on this node */
    uint32_t reserved_;
    uint64_t nonce;       /* the handle's secret */
} dsm_port_ref;

/* What a message does with a right it carries (Mach's dispositions). A
 * right moved leaves this node (its handle is revoked); one copied or
 * made stays. */
enum dsm_disposition {
    DSM_MOVE_RECEIVE = 1, /* the receive right, and with it the port */
    DSM_MOVE_SEND,        /* one reference of a send right */
    DSM_MOVE_SEND_ONCE,
    DSM_COPY_SEND,        /* a new send right from a send right */
    DSM_MAKE_SEND,        /* a new send right from the receive right */
    DSM_MAKE_SEND_ONCE,   /* a new send-once right from the receive right */
};

struct dsm_msg_right {
    const dsm_port_ref *right;
    int                 disposition; /* enum dsm_disposition */
};

struct dsm_ool {
    void  *addr;          /* page-aligned (sysconf(_SC_PAGESIZE)) */
    size_t len;           /* bytes; the last page may be partial */
};

struct dsm_msg {
    int             src_node;   /* sender */
    uint64_t        seq;        /* its number among the sender's messages to the port (0: sent
                                   through a send-once right) */
    void           *data;       /* inline data (owned by the message) */
    size_t          len;
    struct dsm_ool *ool;        /* received OOL regions (page-aligned, owned) */
    int             nool;
    uint64_t        reply_token;/* nonzero when the sender waits for a reply */
    dsm_port_ref   *rights;     /* the rights it carried, now this node's (handles) */
    int             nrights;
    int             notification; /* DSM_NOTIFY_* for a notification (data: struct dsm_notification) */
    void           *internal_;  /* owned by dsm */
};

/* Notifications, sent as messages through a send-once right: the program
 * asks for no-senders and dead-name ones (dsm_port_request_notification);
 * a send-once notification goes to a port whenever a send-once right to it
 * is destroyed unused. */
#define DSM_NOTIFY_NO_SENDERS 1 /* the port's last send right is gone */
#define DSM_NOTIFY_DEAD_NAME  2 /* the port of a send (or send-once) right was destroyed */
#define DSM_NOTIFY_SEND_ONCE  3 /* a send-once right to the port was destroyed unused */

struct dsm_notification {
    uint32_t     kind;    /* DSM_NOTIFY_* */
    uint32_t     reserved;
    uint64_t     cookie;  /* the request's; 0 for a send-once notification */
    uint64_t     count;   /* no-senders: send rights made from the receive right so far */
    uint64_t     port_id; /* the port it is about (dsm_port_ref.id) */
    dsm_port_ref right;   /* dead name: the dead right's handle at the node that asked
                             (a dead name until released); else zero */
};

/* Creates a port on this node with the given name and queue limit (1 ..
 * 1048576), registered with this node's name server. Returns its port
 * number (>= 0), or -EEXIST, -EINVAL, -ENOSPC. */
int dsm_port_create(const char *name, unsigned queue_limit);

/* Asks node `node`'s name server for a send right to the port registered
 * there as `name`, waiting up to `timeout` for it to be registered.
 * Returns 0 with the right's handle in *out, -ENOENT (timed out), or
 * -EINVAL. Asking again gives the same handle, one reference more. */
int dsm_port_lookup(int node, const char *name, double timeout, dsm_port_ref *out);

/* A new port on this node, named nowhere: whoever sends to it must get a
 * right from its holder. Returns 0 and its receive right, or -EINVAL,
 * -ENOSPC. */
int dsm_port_allocate(unsigned queue_limit, dsm_port_ref *recv);

/* The receive right of port number `port` (dsm_port_create's). 0, -EINVAL. */
int dsm_port_receive_right(int port, dsm_port_ref *recv);

/* A send right (one more reference of it) or a new send-once right, made
 * from a receive right this node holds. 0, -EPERM, -EINVAL. */
int dsm_port_make_send(const dsm_port_ref *recv, dsm_port_ref *send);
int dsm_port_make_send_once(const dsm_port_ref *recv, dsm_port_ref *once);

/* Gives up a right: one reference of a send right (the last gives it back
 * to the port), a send-once right (a send-once notification goes to its
 * port), a dead name, or the receive right, which destroys the port (its
 * queued messages and their rights; the holders of its send rights get
 * dead names). The handle is revoked when nothing is left. 0, -EPERM,
 * -EINVAL. */
int dsm_port_release(const dsm_port_ref *right);

/* Registers the port of a receive or send right with this node's name
 * server under `name` (it keeps a send right); dsm_port_unregister gives
 * it up. 0, -EEXIST, -EPERM, -EINVAL; -ENOENT (unregister: no such name). */
int dsm_port_register(const dsm_port_ref *right, const char *name);
int dsm_port_unregister(const char *name);

/* Asks for a notification, sent through a send-once right to `notify`: a
 * receive right held here (a send-once right is made from it) or a
 * send-once right (moved into the request). `cookie` comes back in it.
 *   DSM_NOTIFY_NO_SENDERS: `right` is a receive right; sent once the port
 *     has had send rights and has none (at once if that is already so).
 *     The request moves with the port.
 *   DSM_NOTIFY_DEAD_NAME: `right` is a send or send-once right; sent when
 *     its port is destroyed (at once if it already is), or its node ends.
 * A new request replaces the right's earlier one (whose send-once right is
 * destroyed). 0, -EPERM, -EINVAL. */
int dsm_port_request_notification(const dsm_port_ref *right, int kind, const dsm_port_ref *notify,
                                  uint64_t cookie);

/* Sends a message through a send or send-once right (the latter is
 * consumed). Returns 0 and its sequence number in *seq (may be NULL; 0
 * through a send-once right) once the message is on its way: handed to
 * the reliable transport, or, for a large message, copied (the receiver's
 * grants then drive its transfer). The caller may reuse its buffers at
 * once. Returns -ETIMEDOUT if the port's queue stayed full, -EPIPE if the
 * port is dead, -EPERM for a forged or revoked handle, -EINVAL for bad
 * arguments. */
int dsm_msg_send(const dsm_port_ref *dst, const void *data, size_t len,
                 const struct dsm_ool *ool, int nool, double timeout,
                 uint64_t *seq);

/* dsm_msg_send carrying up to 64 rights, each with its disposition. The
 * rights are checked before anything is sent: with an error, nothing left. */
int dsm_msg_send_rights(const dsm_port_ref *dst, const void *data, size_t len,
                        const struct dsm_ool *ool, int nool, const struct dsm_msg_right *rights,
                        int nrights, double timeout, uint64_t *seq);

/* Takes the next message from a port whose receive right this node holds
 * (its port number). Returns 0, or -ETIMEDOUT, -EINVAL. The message must be
 * released with dsm_msg_free; the rights it carried are this node's. */
int dsm_msg_recv(int port, struct dsm_msg *msg, double timeout);

/* Releases a received message and its buffers (not its rights). */
void dsm_msg_free(struct dsm_msg *msg);

/* Waits until the receiver has taken message `seq` sent through `dst`
 * (message-accept notification). Returns 0, -ETIMEDOUT, -EPIPE (the port
 * died), -EPERM, -EINVAL. */
int dsm_msg_wait_accepted(const dsm_port_ref *dst, uint64_t seq, double timeout);

/* Number of this node's messages to the port of `dst` that the receiver
 * has taken. */
uint64_t dsm_msg_accepted(const dsm_port_ref *dst);

/* RPC: sends a request and waits for its reply. The request carries a
 * pre-grant for `reply_cap` bytes at `reply`, so the reply lands straight in
 * place in one message. Returns the reply's length (>= 0), or -ETIMEDOUT,
 * -EMSGSIZE (reply larger than reply_cap; truncated), -EPIPE, -EPERM,
 * -EINVAL. */
long dsm_msg_call(const dsm_port_ref *dst, const void *req, size_t len,
                  void *reply, size_t reply_cap, double timeout);

/* Answers a request received with a nonzero reply_token. Returns 0,
 * -EINVAL (no reply expected, or already answered). */
int dsm_msg_reply(struct dsm_msg *msg, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* DSM_H */
