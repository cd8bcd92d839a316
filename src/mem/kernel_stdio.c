/*
 * kernel_stdio.c — stdio over buffers in the shared region (kernel.c says
 * why).
 *
 * The C library's stdio calls its read and write inside itself, where no
 * interposed name reaches. Its own buffers are private (its malloc, which
 * dsmcc does not wrap), and fgets, getline, fscanf, fprintf and the like
 * copy between them and the program's memory in user space, where a fault
 * is an ordinary one. Three paths hand the program's memory to the kernel
 * directly: fread and fwrite of more than the stream's buffer move it
 * straight between the descriptor and the caller's buffer; and a buffer
 * the program gives with setvbuf, setbuf or setbuffer is where stdio reads
 * and writes. So fread, fwrite, fputs and puts move a region buffer
 * through private memory, in chunks under the stream's lock (one call, as
 * the C library's); and a stream buffer in the region is replaced by one
 * the C library allocates (the standard leaves the array's contents
 * indeterminate while the stream uses it, so no program may tell). A long
 * string in the region that fprintf's %s writes past the stream's buffer
 * is still the kernel's to read; the format has read it just before, so
 * only a concurrent invalidation by another thread of the node can make
 * that write fail (the stream's error, EFAULT).
 *
 * getline and getdelim grow the caller's buffer with the C library's
 * realloc, which knows nothing of a block dsmcc's malloc gave (the shared
 * heap, dsm_heap_alloc) and crashes on it. Such a buffer gets the line
 * through one of the C library's own, and grows with dsm_heap_realloc
 * (the runtime's: through mem_kernel_heap, hooks.c).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/state.h"
#include "mem/mem.h"

/* n items of `size` bytes between the stream and buf, through private
 * memory when buf reaches into the region; locked: under the stream's lock. */
static size_t stdio_through(size_t (*fn)(void *, size_t, size_t, FILE *), void *buf, size_t size, size_t n,
                            FILE *f, bool output, bool locked)
{
    size_t bytes;
    if (__builtin_mul_overflow(size, n, &bytes) || !mem_kernel_touches(buf, bytes))
        return fn(buf, size, n, f);
    if (locked)
        flockfile(f);
    char *copy = mem_kernel_take(bytes < MEM_KERNEL_CHUNK ? bytes : MEM_KERNEL_CHUNK);
    size_t done = 0;
    while (done < bytes) {
        size_t want = bytes - done < MEM_KERNEL_CHUNK ? bytes - done : MEM_KERNEL_CHUNK;
        if (output)
            memcpy(copy, (char *)buf + done, want);
        size_t got = fn(copy, 1, want, f);
        if (!output)
            memcpy((char *)buf + done, copy, got);
        done += got;
        if (got < want)
            break;
    }
    mem_kernel_give(copy);
    if (locked)
        funlockfile(f);
    return done / size;
}

size_t fread(void *buf, size_t size, size_t n, FILE *f)
{
    mem_kernel_file_here("fread", f);
    MEM_KERNEL_REAL(size_t, "fread", (void *, size_t, size_t, FILE *));
    return stdio_through(fn, buf, size, n, f, false, true);
}

size_t(fread_unlocked)(void *buf, size_t size, size_t n, FILE *f)
{
    mem_kernel_file_here("fread_unlocked", f);
    MEM_KERNEL_REAL(size_t, "fread_unlocked", (void *, size_t, size_t, FILE *));
    return stdio_through(fn, buf, size, n, f, false, false);
}

/* fwrite on another node's stream: one fwrite of its bytes there. */
static size_t fwrite_shipped(int node, const void *buf, size_t size, size_t n, FILE *f)
{
    size_t bytes;
    if (__builtin_mul_overflow(size, n, &bytes) || !bytes)
        return 0;
    long done = mem_kernel_ship(node, MEM_STREAM_FWRITE, (uintptr_t)f, 0, buf, bytes);
    return done < 0 ? 0 : (size_t)done / size;
}

size_t fwrite(const void *buf, size_t size, size_t n, FILE *f)
{
    int node = mem_kernel_file_node(f);
    if (node >= 0)
        return fwrite_shipped(node, buf, size, n, f);
    MEM_KERNEL_REAL(size_t, "fwrite", (void *, size_t, size_t, FILE *));
    return stdio_through(fn, (void *)buf, size, n, f, true, true);
}

size_t(fwrite_unlocked)(const void *buf, size_t size, size_t n, FILE *f)
{
    int node = mem_kernel_file_node(f);
    if (node >= 0)
        return fwrite_shipped(node, buf, size, n, f);
    MEM_KERNEL_REAL(size_t, "fwrite_unlocked", (void *, size_t, size_t, FILE *));
    return stdio_through(fn, (void *)buf, size, n, f, true, false);
}

int fputs(const char *s, FILE *f)
{
    MEM_KERNEL_REAL(int, "fputs", (const char *, FILE *));
    if (!mem_kernel_touches(s, 1) && mem_kernel_file_node(f) < 0)
        return fn(s, f);
    size_t len = strlen(s);
    return fwrite(s, 1, len, f) == len ? 1 : EOF;
}

int puts(const char *s)
{
    MEM_KERNEL_REAL(int, "puts", (const char *));
    if (!mem_kernel_touches(s, 1))
        return fn(s);
    flockfile(stdout);
    int r = fputs(s, stdout) == EOF || putc_unlocked('\n', stdout) == EOF ? EOF : 1;
    funlockfile(stdout);
    return r;
}

/* _FORTIFY_SOURCE's forms: the bound checked as the C library's does. */

size_t __fread_chk(void *buf, size_t room, size_t size, size_t n, FILE *f)
{
    size_t bytes;
    if (__builtin_mul_overflow(size, n, &bytes) || bytes > room)
        __chk_fail();
    return fread(buf, size, n, f);
}

size_t __fread_unlocked_chk(void *buf, size_t room, size_t size, size_t n, FILE *f)
{
    size_t bytes;
    if (__builtin_mul_overflow(size, n, &bytes) || bytes > room)
        __chk_fail();
    return (fread_unlocked)(buf, size, n, f);
}

int setvbuf(FILE *f, char *buf, int mode, size_t size)
{
    MEM_KERNEL_REAL(int, "setvbuf", (FILE *, char *, int, size_t));
    mem_kernel_file_here("setvbuf", f);
    return fn(f, mem_kernel_touches(buf, size) ? NULL : buf, mode, size);
}

void setbuffer(FILE *f, char *buf, size_t size) { setvbuf(f, buf, buf ? _IOFBF : _IONBF, size); }
void setbuf(FILE *f, char *buf) { setbuffer(f, buf, BUFSIZ); }

ssize_t getdelim(char **line, size_t *n, int delim, FILE *f)
{
    MEM_KERNEL_REAL(ssize_t, "getdelim", (char **, size_t *, int, FILE *));
    mem_kernel_file_here("getdelim", f);
    const struct mem_kernel_heap *heap = atomic_load_explicit(&mem_kernel_heap, memory_order_acquire);
    if (!line || !n || !*line || !mem_kernel_touches(*line, 1) || !heap || !heap->owns(*line))
        return fn(line, n, delim, f);
    char *own = NULL;
    size_t room = 0;
    ssize_t got = fn(&own, &room, delim, f);
    int err = errno;
    if (got >= 0 && (size_t)got + 1 > *n) {
        char *grown = heap->resize(*line, (size_t)got + 1);
        if (grown) {
            *line = grown;
            *n = (size_t)got + 1;
        } else {
            got = -1;
            err = ENOMEM;
        }
    }
    if (got >= 0)
        memcpy(*line, own, (size_t)got + 1);
    free(own);
    errno = err;
    return got;
}

/* bits/stdio.h's inline getline calls __getdelim (C++, or C with
 * optimisation and _GNU_SOURCE). */
ssize_t __getdelim(char **line, size_t *n, int delim, FILE *f) __attribute__((alias("getdelim")));
ssize_t getline(char **line, size_t *n, FILE *f) { return getdelim(line, n, '\n', f); }
