/*
 * kernel_fs.c — file-system calls whose paths or results lie in the shared
 * region, through private memory (kernel.c says why): the stat family
 * (stat, lstat, fstat, fstatat and their 64 forms, statx, and the __xstat
 * family that binaries built before glibc 2.33 call), getdents64,
 * getcwd, readlink, readlinkat; and the calls that take a path —
 * open, openat, creat, fopen, freopen, opendir, access, faccessat, mkdir,
 * rmdir, unlink, rename, remove, truncate — whose path a program may well
 * have built in shared memory. (fopen's, opendir's and remove's calls
 * inside the C library do not come here: their own names do.)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/state.h"
#include "mem/mem.h"

int stat(const char *path, struct stat *st)
{
    MEM_KERNEL_REAL(int, "stat", (const char *, struct stat *));
    MEM_KERNEL_THROUGH(path, st, sizeof *st, false, fn(P, O));
}

int lstat(const char *path, struct stat *st)
{
    MEM_KERNEL_REAL(int, "lstat", (const char *, struct stat *));
    MEM_KERNEL_THROUGH(path, st, sizeof *st, false, fn(P, O));
}

int fstat(int fd, struct stat *st)
{
    MEM_KERNEL_REAL(int, "fstat", (int, struct stat *));
    MEM_KERNEL_THROUGH(NULL, st, sizeof *st, false, fn(fd, O));
}

int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    MEM_KERNEL_REAL(int, "fstatat", (int, const char *, struct stat *, int));
    MEM_KERNEL_THROUGH(path, st, sizeof *st, false, fn(dirfd, P, O, flags));
}

/* x86-64's struct stat64 is struct stat: the 64 forms are the same calls. */
int stat64(const char *path, struct stat64 *st) { return stat(path, (struct stat *)st); }
int lstat64(const char *path, struct stat64 *st) { return lstat(path, (struct stat *)st); }
int fstat64(int fd, struct stat64 *st) { return fstat(fd, (struct stat *)st); }
int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    return fstatat(dirfd, path, (struct stat *)st, flags);
}

int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *st)
{
    MEM_KERNEL_REAL(int, "statx", (int, const char *, int, unsigned, struct statx *));
    MEM_KERNEL_THROUGH(path, st, sizeof *st, false, fn(dirfd, P, flags, mask, O));
}

/* Before glibc 2.33 stat and its kin were these, with a version first. */
int __xstat(int ver, const char *path, struct stat *st)
{
    MEM_KERNEL_REAL(int, "__xstat", (int, const char *, struct stat *));
    MEM_KERNEL_THROUGH(path, st, sizeof *st, false, fn(ver, P, O));
}

int __lxstat(int ver, const char *path, struct stat *st)
{
    MEM_KERNEL_REAL(int, "__lxstat", (int, const char *, struct stat *));
    MEM_KERNEL_THROUGH(path, st, sizeof *st, false, fn(ver, P, O));
}

int __fxstat(int ver, int fd, struct stat *st)
{
    MEM_KERNEL_REAL(int, "__fxstat", (int, int, struct stat *));
    MEM_KERNEL_THROUGH(NULL, st, sizeof *st, false, fn(ver, fd, O));
}

int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
    MEM_KERNEL_REAL(int, "__fxstatat", (int, int, const char *, struct stat *, int));
    MEM_KERNEL_THROUGH(path, st, sizeof *st, false, fn(ver, dirfd, P, O, flags));
}

int __xstat64(int ver, const char *path, struct stat64 *st) { return __xstat(ver, path, (struct stat *)st); }
int __lxstat64(int ver, const char *path, struct stat64 *st) { return __lxstat(ver, path, (struct stat *)st); }
int __fxstat64(int ver, int fd, struct stat64 *st) { return __fxstat(ver, fd, (struct stat *)st); }
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
    return __fxstatat(ver, dirfd, path, (struct stat *)st, flags);
}

/* A variable-length result: the bytes the call says it wrote go back. */
static ssize_t out_counted(ssize_t got, struct mem_kernel_out *o)
{
    mem_kernel_out_end(o, got > 0, got > 0 ? (size_t)got : 0);
    return got;
}

ssize_t getdents64(int fd, void *buf, size_t n)
{
    MEM_KERNEL_REAL(ssize_t, "getdents64", (int, void *, size_t));
    if (!mem_kernel_touches(buf, n))
        return fn(fd, buf, n);
    struct mem_kernel_out o;
    mem_kernel_out_begin(&o, NULL, buf, n, false);
    return out_counted(fn(fd, o.copy, n), &o);
}

ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
    MEM_KERNEL_REAL(ssize_t, "readlinkat", (int, const char *, char *, size_t));
    if (!mem_kernel_touches(path, 1) && !mem_kernel_touches(buf, n))
        return fn(dirfd, path, buf, n);
    struct mem_kernel_out o;
    mem_kernel_out_begin(&o, path, buf, n, false);
    return out_counted(fn(dirfd, o.path, o.copy, n), &o);
}

ssize_t readlink(const char *path, char *buf, size_t n) { return readlinkat(AT_FDCWD, path, buf, n); }

char *getcwd(char *buf, size_t n)
{
    MEM_KERNEL_REAL(char *, "getcwd", (char *, size_t));
    if (!buf || !mem_kernel_touches(buf, n)) /* NULL: the C library allocates, privately */
        return fn(buf, n);
    struct mem_kernel_out o;
    mem_kernel_out_begin(&o, NULL, buf, n, false);
    char *got = fn(o.copy, n);
    mem_kernel_out_end(&o, got != NULL, got ? strlen(got) + 1 : 0);
    return got ? buf : NULL;
}

/* _FORTIFY_SOURCE's forms: the bound checked as the C library's does. */

ssize_t __readlink_chk(const char *path, char *buf, size_t n, size_t room)
{
    if (n > room)
        __chk_fail();
    return readlink(path, buf, n);
}

ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t n, size_t room)
{
    if (n > room)
        __chk_fail();
    return readlinkat(dirfd, path, buf, n);
}

char *__getcwd_chk(char *buf, size_t n, size_t room)
{
    if (n > room)
        __chk_fail();
    return getcwd(buf, n);
}

/* open's mode is there only with O_CREAT or O_TMPFILE. */
static mode_t open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

static int openat_here(int dirfd, const char *path, int flags, mode_t mode)
{
    MEM_KERNEL_REAL(int, "openat", (int, const char *, int, ...));
    MEM_KERNEL_PATHS(path, NULL, fn(dirfd, P, flags, mode));
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    return mem_kernel_fd_opened(openat_here(dirfd, path, flags, mode));
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    return openat(AT_FDCWD, path, flags, mode);
}

/* x86-64's off_t is off64_t: the 64 forms are the same functions. */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int creat(const char *path, mode_t mode) { return openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode); }
int creat64(const char *path, mode_t mode) __attribute__((alias("creat")));
int __open_2(const char *path, int flags) { return openat(AT_FDCWD, path, flags); }
int __open64_2(const char *path, int flags) { return openat(AT_FDCWD, path, flags); }
int __openat_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }

static FILE *fopen_here(const char *path, const char *mode)
{
    MEM_KERNEL_REAL(FILE *, "fopen", (const char *, const char *));
    MEM_KERNEL_PATHS(path, mode, fn(P, Q));
}

FILE *fopen(const char *path, const char *mode) { return mem_kernel_file_opened(fopen_here(path, mode), mode); }

FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));

static FILE *freopen_here(const char *path, const char *mode, FILE *stream)
{
    MEM_KERNEL_REAL(FILE *, "freopen", (const char *, const char *, FILE *));
    MEM_KERNEL_PATHS(path, mode, fn(P, Q, stream));
}

FILE *freopen(const char *path, const char *mode, FILE *stream)
{
    mem_kernel_file_here("freopen", stream);
    return mem_kernel_file_opened(freopen_here(path, mode, stream), mode);
}

FILE *freopen64(const char *path, const char *mode, FILE *stream) __attribute__((alias("freopen")));

DIR *opendir(const char *path)
{
    MEM_KERNEL_REAL(DIR *, "opendir", (const char *));
    MEM_KERNEL_PATHS(path, NULL, fn(P));
}

int access(const char *path, int how)
{
    MEM_KERNEL_REAL(int, "access", (const char *, int));
    MEM_KERNEL_PATHS(path, NULL, fn(P, how));
}

int faccessat(int dirfd, const char *path, int how, int flags)
{
    MEM_KERNEL_REAL(int, "faccessat", (int, const char *, int, int));
    MEM_KERNEL_PATHS(path, NULL, fn(dirfd, P, how, flags));
}

int mkdir(const char *path, mode_t mode)
{
    MEM_KERNEL_REAL(int, "mkdir", (const char *, mode_t));
    MEM_KERNEL_PATHS(path, NULL, fn(P, mode));
}

int rmdir(const char *path)
{
    MEM_KERNEL_REAL(int, "rmdir", (const char *));
    MEM_KERNEL_PATHS(path, NULL, fn(P));
}

int unlink(const char *path)
{
    MEM_KERNEL_REAL(int, "unlink", (const char *));
    MEM_KERNEL_PATHS(path, NULL, fn(P));
}

int remove(const char *path)
{
    MEM_KERNEL_REAL(int, "remove", (const char *));
    MEM_KERNEL_PATHS(path, NULL, fn(P));
}

int rename(const char *from, const char *to)
{
    MEM_KERNEL_REAL(int, "rename", (const char *, const char *));
    MEM_KERNEL_PATHS(from, to, fn(P, Q));
}

int truncate(const char *path, off_t len)
{
    MEM_KERNEL_REAL(int, "truncate", (const char *, off_t));
    MEM_KERNEL_PATHS(path, NULL, fn(P, len));
}
