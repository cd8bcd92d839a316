/*
 * kernel_streams.c — the C library's calls on descriptors and streams
 * that another node opened (runtime/streams.c says how and why).
 *
 * Output is shipped to the node that opened it: fprintf and its kin
 * format here, into private memory, and the bytes go in one message per
 * call; write, pwrite and writev's bytes likewise; fflush, fclose and
 * close are that node's to do. Input (read, fread, fgets, getline, ...)
 * and the calls that would read another node's FILE here are refused in
 * one line. The calls that open a descriptor or a stream make it the
 * job's (mem_kernel_fd_opened, mem_kernel_file_opened). With no job of
 * several nodes running a dsmcc program, each is a compare
 * and the C library's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"

static const struct mem_kernel_streams *streams(void)
{
    return atomic_load_explicit(&mem_kernel_streams, memory_order_acquire);
}

int mem_kernel_fd_node(int fd)
{
    const struct mem_kernel_streams *s = streams();
    return s && fd >= 0 ? s->fd_node(fd) : -1;
}

int mem_kernel_file_node(void *f)
{
    const struct mem_kernel_streams *s = streams();
    return s && f ? s->file_node(f) : -1;
}

long mem_kernel_ship(int node, enum mem_stream_op op, uint64_t key, int64_t at, const void *buf, size_t len)
{
    return streams()->ship(node, op, key, at, buf, len);
}

void mem_kernel_refuse(const char *call, const char *what, int node)
{
    log_fatal("%s on %s that node %d opened: dsm does output through another node's descriptors and "
              "streams, not input or positioning (docs/unmodified-programs.md, \"Descriptors and streams\")",
              call, what, node);
}

static int close_here(int fd)
{
    MEM_KERNEL_REAL(int, "close", (int));
    return fn(fd);
}

/* 0, 1 and 2 stay where the program put them: each node's own. */
int mem_kernel_fd_opened(int fd)
{
    const struct mem_kernel_streams *s = streams();
    if (!s || fd < 3)
        return fd;
    int lo, hi;
    s->fd_band(&lo, &hi);
    if (fd >= lo && fd < hi)
        return fd;
    MEM_KERNEL_REAL(int, "fcntl", (int, int, ...));
    int flags = fn(fd, F_GETFD);
    int moved = flags < 0 ? -1 : fn(fd, (flags & FD_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, lo);
    int err = errno;
    if (moved >= hi) {
        /* Every number of the node's band is taken: as when a process
         * has all the descriptors it may have. */
        close_here(moved);
        moved = -1;
        err = EMFILE;
    }
    close_here(fd);
    errno = err;
    return moved;
}

int mem_kernel_fds_opened(int rc, int fds[2])
{
    if (rc < 0 || !streams())
        return rc;
    int a = mem_kernel_fd_opened(fds[0]);
    int b = a < 0 ? -1 : mem_kernel_fd_opened(fds[1]);
    if (b < 0) {
        int err = errno;
        close_here(a < 0 ? fds[1] : a);
        errno = err;
        return -1;
    }
    fds[0] = a;
    fds[1] = b;
    return rc;
}

static FILE *fdopen_here(int fd, const char *mode)
{
    MEM_KERNEL_REAL(FILE *, "fdopen", (int, const char *));
    return fn(fd, mode);
}

static int fileno_here(FILE *f)
{
    MEM_KERNEL_REAL(int, "fileno", (FILE *));
    return fn(f);
}

static int fclose_here(FILE *f)
{
    MEM_KERNEL_REAL(int, "fclose", (FILE *));
    return fn(f);
}

/* The addresses a node's fopen returned that another node held: kept open
 * until the stream that replaces them is claimed, so none comes back. */
#define FILE_TRIES 64

void *mem_kernel_file_opened(void *opened, const char *mode)
{
    const struct mem_kernel_streams *s = streams();
    FILE *f = opened;
    if (!f || !s)
        return f;
    FILE *held[FILE_TRIES];
    int n = 0;
    while (f && s->file_claim(f) == -EEXIST) {
        if (n == FILE_TRIES)
            log_fatal("fopen: %d streams in a row had the address of another node's", FILE_TRIES);
        held[n++] = f;
        int fd = dup(fileno_here(f));
        f = fd < 0 ? NULL : fdopen_here(fd, mode);
        if (!f && fd >= 0)
            close_here(fd);
    }
    int err = errno;
    while (n > 0)
        fclose_here(held[--n]);
    errno = err;
    return f;
}

/* ---- output: shipped --------------------------------------------------- */

/* A formatted string's bytes, to node's f: one fwrite there. */
static int print_shipped(int node, FILE *f, const char *format, va_list ap)
{
    char small[512];
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(small, sizeof small, format, ap);
    char *text = small;
    if (len >= (int)sizeof small) {
        text = malloc((size_t)len + 1);
        if (!text) {
            va_end(again);
            errno = ENOMEM;
            return -1;
        }
        vsnprintf(text, (size_t)len + 1, format, again);
    }
    va_end(again);
    long r = len < 0 ? -1 : mem_kernel_ship(node, MEM_STREAM_FWRITE, (uintptr_t)f, 0, text, (size_t)len);
    int err = errno;
    if (text != small)
        free(text);
    errno = err;
    return r < len ? -1 : len;
}

int vfprintf(FILE *f, const char *format, va_list ap)
{
    int node = mem_kernel_file_node(f);
    if (node >= 0)
        return print_shipped(node, f, format, ap);
    MEM_KERNEL_REAL(int, "vfprintf", (FILE *, const char *, va_list));
    return fn(f, format, ap);
}

int fprintf(FILE *f, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int r = vfprintf(f, format, ap);
    va_end(ap);
    return r;
}

/* _FORTIFY_SOURCE's forms: the checks of %n are the C library's here. */
int __vfprintf_chk(FILE *f, int flag, const char *format, va_list ap)
{
    int node = mem_kernel_file_node(f);
    if (node >= 0)
        return print_shipped(node, f, format, ap);
    MEM_KERNEL_REAL(int, "__vfprintf_chk", (FILE *, int, const char *, va_list));
    return fn(f, flag, format, ap);
}

int __fprintf_chk(FILE *f, int flag, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int r = __vfprintf_chk(f, flag, format, ap);
    va_end(ap);
    return r;
}

int fputc(int c, FILE *f)
{
    int node = mem_kernel_file_node(f);
    if (node < 0) {
        MEM_KERNEL_REAL(int, "fputc", (int, FILE *));
        return fn(c, f);
    }
    unsigned char byte = (unsigned char)c;
    return mem_kernel_ship(node, MEM_STREAM_FWRITE, (uintptr_t)f, 0, &byte, 1) == 1 ? byte : EOF;
}

int putc(int c, FILE *f) __attribute__((alias("fputc")));

int fflush(FILE *f)
{
    int node = mem_kernel_file_node(f);
    if (node >= 0)
        return mem_kernel_ship(node, MEM_STREAM_FFLUSH, (uintptr_t)f, 0, NULL, 0) == 0 ? 0 : EOF;
    MEM_KERNEL_REAL(int, "fflush", (FILE *));
    return fn(f);
}

int fclose(FILE *f)
{
    int node = mem_kernel_file_node(f);
    if (node >= 0)
        return mem_kernel_ship(node, MEM_STREAM_FCLOSE, (uintptr_t)f, 0, NULL, 0) == 0 ? 0 : EOF;
    int r = fclose_here(f);
    const struct mem_kernel_streams *s = streams();
    if (s) {
        int err = errno;
        s->file_closed(f);
        errno = err;
    }
    return r;
}

FILE *fdopen(int fd, const char *mode)
{
    int node = mem_kernel_fd_node(fd);
    if (node >= 0)
        mem_kernel_refuse("fdopen", "a descriptor", node);
    return mem_kernel_file_opened(fdopen_here(fd, mode), mode);
}

int close(int fd)
{
    int node = mem_kernel_fd_node(fd);
    if (node >= 0)
        return (int)mem_kernel_ship(node, MEM_STREAM_CLOSE, (unsigned)fd, 0, NULL, 0);
    return close_here(fd);
}

int dup(int fd)
{
    int node = mem_kernel_fd_node(fd);
    if (node >= 0)
        mem_kernel_refuse("dup", "a descriptor", node);
    MEM_KERNEL_REAL(int, "dup", (int));
    return mem_kernel_fd_opened(fn(fd));
}

int socket(int domain, int type, int protocol)
{
    MEM_KERNEL_REAL(int, "socket", (int, int, int));
    return mem_kernel_fd_opened(fn(domain, type, protocol));
}

/* ---- dprintf: formatted output to a descriptor ---------------------------- */

int vdprintf(int fd, const char *format, va_list ap)
{
    if (mem_kernel_fd_node(fd) < 0) {
        MEM_KERNEL_REAL(int, "vdprintf", (int, const char *, va_list));
        return fn(fd, format, ap);
    }
    char *text;
    int len = vasprintf(&text, format, ap);
    if (len < 0)
        return -1;
    ssize_t r = write(fd, text, (size_t)len);
    int err = errno;
    free(text);
    errno = err;
    return r < len ? -1 : len;
}

int __vdprintf_chk(int fd, int flag, const char *format, va_list ap)
{
    if (mem_kernel_fd_node(fd) >= 0)
        return vdprintf(fd, format, ap);
    MEM_KERNEL_REAL(int, "__vdprintf_chk", (int, int, const char *, va_list));
    return fn(fd, flag, format, ap);
}

int __dprintf_chk(int fd, int flag, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int r = __vdprintf_chk(fd, flag, format, ap);
    va_end(ap);
    return r;
}

int dprintf(int fd, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int r = vdprintf(fd, format, ap);
    va_end(ap);
    return r;
}

/* ---- refused: what reads another node's stream or moves its position ---- */


char *fgets(char *s, int n, FILE *f)
{
    mem_kernel_file_here("fgets", f);
    MEM_KERNEL_REAL(char *, "fgets", (char *, int, FILE *));
    return fn(s, n, f);
}

char *__fgets_chk(char *s, size_t room, int n, FILE *f)
{
    if (n > 0 && (size_t)n > room)
        __chk_fail();
    return fgets(s, n, f);
}

int fgetc(FILE *f)
{
    mem_kernel_file_here("fgetc", f);
    MEM_KERNEL_REAL(int, "fgetc", (FILE *));
    return fn(f);
}

int getc(FILE *f) __attribute__((alias("fgetc")));

int fileno(FILE *f)
{
    mem_kernel_file_here("fileno", f);
    return fileno_here(f);
}

int fseek(FILE *f, long at, int whence)
{
    mem_kernel_file_here("fseek", f);
    MEM_KERNEL_REAL(int, "fseek", (FILE *, long, int));
    return fn(f, at, whence);
}

long ftell(FILE *f)
{
    mem_kernel_file_here("ftell", f);
    MEM_KERNEL_REAL(long, "ftell", (FILE *));
    return fn(f);
}

void rewind(FILE *f)
{
    mem_kernel_file_here("rewind", f);
    MEM_KERNEL_REAL(void, "rewind", (FILE *));
    fn(f);
}

/* A stream's lock is its node's C library's: a caller elsewhere would
 * lock what lies at that address in its own heap. */
void flockfile(FILE *f)
{
    mem_kernel_file_here("flockfile", f);
    MEM_KERNEL_REAL(void, "flockfile", (FILE *));
    fn(f);
}

int ftrylockfile(FILE *f)
{
    mem_kernel_file_here("ftrylockfile", f);
    MEM_KERNEL_REAL(int, "ftrylockfile", (FILE *));
    return fn(f);
}

void funlockfile(FILE *f)
{
    mem_kernel_file_here("funlockfile", f);
    MEM_KERNEL_REAL(void, "funlockfile", (FILE *));
    fn(f);
}
