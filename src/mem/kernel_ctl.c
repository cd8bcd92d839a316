/*
 * kernel_ctl.c — ioctl and fcntl with a pointer into the shared region
 * (kernel.c says why), and the one line for what cannot be copied.
 *
 * An ioctl's argument is as long as its request says: a request encoded
 * with _IOC (its size and direction in its bits), or one of the terminal
 * and descriptor requests older than the encoding that a program commonly
 * hands a struct of its own (the table below), goes through a private
 * copy. Any other request's size is the driver's to know: it is called as
 * it is, and if the kernel could not reach the memory the job ends in one
 * line naming the call, rather than the program meeting an EFAULT it
 * would not expect. fcntl's locks and owners are structs of known size,
 * copied.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"

/* The call failed with EFAULT on an address in the region: one line. */
static void unreachable(const char *call, const void *p, int r)
{
    if (r < 0 && errno == EFAULT)
        log_fatal("%s(%p): the kernel could not reach dsm's shared memory there (this node "
                  "does not hold the page), and dsm does not know how much of it the call uses; "
                  "pass memory of the thread's own (a local of a thread, thread_local) "
                  "(docs/unmodified-programs.md, \"System calls into shared memory\")", call, p);
}

/* Requests older than _IOC's encoding, with the struct they take: whether
 * the kernel writes it (a get), or only reads it. */
static const struct {
    unsigned long request;
    size_t        size;
    bool          writes;
} legacy[] = {
    {TCGETS, sizeof(struct termios), true},   {TCSETS, sizeof(struct termios), false},
    {TCSETSW, sizeof(struct termios), false}, {TCSETSF, sizeof(struct termios), false},
    {TIOCGWINSZ, sizeof(struct winsize), true}, {TIOCSWINSZ, sizeof(struct winsize), false},
    {FIONREAD, sizeof(int), true},            {TIOCOUTQ, sizeof(int), true},
    {FIONBIO, sizeof(int), false},            {FIOASYNC, sizeof(int), false},
    {TIOCGPGRP, sizeof(pid_t), true},         {TIOCSPGRP, sizeof(pid_t), false},
    {TIOCGSID, sizeof(pid_t), true},          {TIOCMGET, sizeof(int), true},
    {TIOCMSET, sizeof(int), false},           {TIOCINQ, sizeof(int), true},
};

/* The argument's bytes (0: unknown), whether the call reads them and
 * whether it writes them. */
static size_t ioctl_arg(unsigned long request, bool *reads, bool *writes)
{
    if (_IOC_DIR(request) != _IOC_NONE && _IOC_SIZE(request)) {
        *reads = _IOC_DIR(request) & _IOC_WRITE; /* _IOC_WRITE: the caller writes to the device */
        *writes = _IOC_DIR(request) & _IOC_READ;
        return _IOC_SIZE(request);
    }
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++)
        if (legacy[i].request == request) {
            *reads = !legacy[i].writes;
            *writes = legacy[i].writes;
            return legacy[i].size;
        }
    return 0;
}

int ioctl(int fd, unsigned long request, ...)
{
    MEM_KERNEL_REAL(int, "ioctl", (int, unsigned long, ...));
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!mem_kernel_touches(arg, 1))
        return fn(fd, request, arg);
    bool reads, writes;
    size_t size = ioctl_arg(request, &reads, &writes);
    if (!size) {
        int r = fn(fd, request, arg);
        unreachable("ioctl", arg, r);
        return r;
    }
    struct mem_kernel_out o;
    mem_kernel_out_begin(&o, NULL, arg, size, reads);
    int r = fn(fd, request, o.copy);
    mem_kernel_out_end(&o, r >= 0 && writes, size);
    return r;
}

/* fcntl's commands that take a struct: its size, and whether the kernel
 * writes it back. Others take an integer (or nothing). */
static size_t fcntl_arg(int cmd, bool *writes)
{
    *writes = cmd == F_GETLK || cmd == F_OFD_GETLK || cmd == F_GETOWN_EX || cmd == F_GET_RW_HINT ||
              cmd == F_GET_FILE_RW_HINT;
    switch (cmd) {
    case F_GETLK: case F_SETLK: case F_SETLKW: case F_OFD_GETLK: case F_OFD_SETLK: case F_OFD_SETLKW:
        return sizeof(struct flock);
    case F_GETOWN_EX: case F_SETOWN_EX:
        return sizeof(struct f_owner_ex);
    case F_GET_RW_HINT: case F_SET_RW_HINT: case F_GET_FILE_RW_HINT: case F_SET_FILE_RW_HINT:
        return sizeof(uint64_t);
    }
    return 0;
}

int fcntl(int fd, int cmd, ...)
{
    MEM_KERNEL_REAL(int, "fcntl", (int, int, ...));
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *); /* as the C library reads it, whatever the command */
    va_end(ap);
    bool writes;
    size_t size = fcntl_arg(cmd, &writes);
    if (!size || !mem_kernel_touches(arg, size))
        return fn(fd, cmd, arg);
    struct mem_kernel_out o;
    mem_kernel_out_begin(&o, NULL, arg, size, true);
    int r = fn(fd, cmd, o.copy);
    mem_kernel_out_end(&o, r >= 0 && writes, size);
    return r;
}

int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl(fd, cmd, arg);
}
