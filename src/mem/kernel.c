/*
 * kernel.c — system calls whose pointers lie in the shared region: the
 * kernel sees private memory, the program's thread copies (issue 89).
 *
 * The application view's protections encode each page's state, and a
 * fault on it is the protocol's (fault.c). The kernel's own accesses to
 * user memory (copy_to_user, copy_from_user) take no signal: on a page
 * that is invalid or read-only here they fail, and read(fd, buf, n) into a
 * buffer another node wrote returns -1 EFAULT. So libdsm defines the C
 * library's names of the calls that take user pointers (kernel_io.c,
 * kernel_fs.c, kernel_misc.c, kernel_stdio.c; exported by libdsm.map,
 * which puts them before the C library's for the program and every
 * library it loads, libstdc++'s std::ifstream included). Where no pointer
 * lies in the region a call costs a compare or two and goes to the C
 * library's. Where one does, the kernel is handed private memory of this
 * thread's instead (mem_kernel_take), and the wrapper copies the region's
 * bytes into it before the call and the kernel's results out of it after,
 * in user space, where each fault is an ordinary one.
 *
 * Why copies and not making the pages ready before the call: between a
 * touch that makes a page writable and the kernel's copy another thread of
 * the node (or, under sc and erc, the service thread) may take the page
 * away again, and an input call that fails then may have consumed its
 * input (a datagram, an accepted connection); an output call may go half
 * way and return a short count. A copy has no such window, needs no
 * retry, and does the same under every protocol. It costs a copy of the
 * bytes the call moves (docs/performance.md, "System calls into shared
 * memory"). userfaultfd, whose faults the kernel's copies do wait on,
 * does not see these pages: their absence is an mprotect on a populated
 * shared mapping, not a missing page, and its write-protect mode is for
 * what the kernel reports (watch.c), not for our protections.
 *
 * Transfers above MEM_KERNEL_CHUNK are cut into chunks on regular files
 * and block devices (where consecutive reads and writes mean the same as
 * one); on a pipe, socket or terminal one chunk is moved, a short count
 * that POSIX allows there.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"

void *mem_kernel_next(_Atomic(void *) *cache, const char *name)
{
    void *fn = atomic_load_explicit(cache, memory_order_acquire);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, name);
        if (!fn)
            log_fatal("%s: the C library's is not found", name);
        atomic_store_explicit(cache, fn, memory_order_release);
    }
    return fn;
}

/* Each thread's private memory for copies: a stack of blocks in one
 * reservation (pages become memory as they are first used), so that a
 * signal handler's call inside a call takes the next block. A block that
 * does not fit is mapped on its own. */
#define RESERVE    (4 * MEM_KERNEL_CHUNK)
#define HEADER     16u /* before each block: the top before it, its own mapping's length */
#define ALIGN_UP(n) (((n) + 15u) & ~(size_t)15u)

static __thread struct {
    char  *base;
    size_t top;
} copies;

static DSM_STATE pthread_key_t copies_key;
static DSM_STATE pthread_once_t copies_once = PTHREAD_ONCE_INIT;

/* At the thread's end; a later key's destructor may still make a call,
 * which maps a reservation again (and is called again to release it). */
static void copies_release(void *base)
{
    munmap(base, RESERVE);
    copies.base = NULL;
    copies.top = 0;
}
static void copies_key_make(void)
{
    if (pthread_key_create(&copies_key, copies_release) != 0)
        log_fatal("system calls into shared memory: no thread key for their copies");
}

static char *mapped(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        log_fatal("system calls into shared memory: no memory for a copy of %zu bytes", len);
    return p;
}

void *mem_kernel_take(size_t len)
{
    if (len > SIZE_MAX / 2)
        log_fatal("system calls into shared memory: a copy of %zu bytes asked for", len);
    size_t need = HEADER + ALIGN_UP(len);
    if (!copies.base) {
        pthread_once(&copies_once, copies_key_make);
        copies.base = mapped(RESERVE);
        pthread_setspecific(copies_key, copies.base);
    }
    size_t *head;
    if (copies.top + need <= RESERVE) {
        head = (size_t *)(copies.base + copies.top);
        head[0] = copies.top;
        head[1] = 0;
        copies.top += need;
    } else {
        head = (size_t *)mapped(need);
        head[0] = copies.top;
        head[1] = need;
    }
    return (char *)head + HEADER;
}

void mem_kernel_give(void *p)
{
    size_t *head = (size_t *)((char *)p - HEADER);
    if (head[1])
        munmap(head, head[1]);
    else
        copies.top = head[0];
}

size_t mem_kernel_step(int fd, size_t n, bool output, bool whole, bool *more)
{
    *more = false;
    if (n <= MEM_KERNEL_CHUNK)
        return n;
    struct stat st;
    int type = 0;
    socklen_t len = sizeof type;
    if (fstat(fd, &st) != 0) /* the call itself will say why */
        return MEM_KERNEL_CHUNK;
    if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
        *more = true;
        return MEM_KERNEL_CHUNK;
    }
    if (S_ISSOCK(st.st_mode) && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
        (type == SOCK_DGRAM || type == SOCK_SEQPACKET || type == SOCK_RAW || type == SOCK_RDM))
        return n;
    *more = output || whole;
    return MEM_KERNEL_CHUNK;
}

const char *mem_kernel_path(const char *path)
{
    if (!path || !mem_kernel_touches(path, 1))
        return path;
    size_t len = strnlen(path, PATH_MAX) + 1; /* longer: the kernel's ENAMETOOLONG */
    char *copy = mem_kernel_take(len);
    memcpy(copy, path, len - 1);
    copy[len - 1] = '\0';
    return copy;
}

void mem_kernel_give_path(const char *copy, const char *path)
{
    if (copy != path)
        mem_kernel_give((void *)copy);
}

void mem_kernel_out_begin(struct mem_kernel_out *o, const char *path, void *out, size_t size, bool in)
{
    o->user_path = path;
    o->path = mem_kernel_path(path);
    o->user = out;
    o->copy = out ? mem_kernel_take(size) : NULL;
    if (out && in)
        memcpy(o->copy, out, size);
}

void mem_kernel_out_end(struct mem_kernel_out *o, bool ok, size_t len)
{
    int err = errno;
    if (o->user) {
        if (ok)
            memcpy(o->user, o->copy, len);
        mem_kernel_give(o->copy);
    }
    mem_kernel_give_path(o->path, o->user_path);
    errno = err;
}
