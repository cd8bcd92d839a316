/*
 * pt_mmap — memory from mmap, made by main and used by threads wherever
 * they run (issue 55, point 4): a file mapped private and writable (as
 * MapReduce programs map their input), read-only, and shared and
 * writable (written back at msync and at munmap); anonymous memory,
 * private and shared, and /dev/zero's; a mapping grown by mremap; madvise
 * (MADV_DONTNEED) on private mappings; munmap of a mapping's middle, then
 * of the rest.
 *
 *   pt_mmap WORKERS
 *
 * main prints each check; the output is compared with the same source
 * built plainly.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define INTS   6000   /* the file: 24,000 bytes, five and a bit OS pages */
#define ANON   20000  /* ints of anonymous memory */
#define MAXW   16

static int workers;
static int *in_private, *in_readonly, *out_shared, *out_shared2, *anon_shared, *anon_private,
    *zero_dev, *grown;
static size_t grown_len;
static long sums[MAXW][4];
static pthread_barrier_t phase;

static void slice(long i, long n, long *lo, long *hi)
{
    *lo = n * i / workers;
    *hi = n * (i + 1) / workers;
}

static void *worker(void *arg)
{
    long i = (long)arg, lo, hi;
    slice(i, INTS, &lo, &hi);
    long a = 0, b = 0;
    for (long k = lo; k < hi; k++) {
        a += in_private[k];
        b += in_readonly[k];
        in_private[k] = -1; /* a private mapping's writes never reach its file */
        out_shared[k] = (int)(k * 3 + 1);
        out_shared2[k] = (int)(k * 5 + 2);
    }
    sums[i][0] = a;
    sums[i][1] = b;
    slice(i, ANON, &lo, &hi);
    long z = 0;
    for (long k = lo; k < hi; k++) {
        z += zero_dev[k] + anon_private[k];
        anon_shared[k] = (int)k;
        anon_private[k] = (int)(2 * k);
        zero_dev[k] = 1;
    }
    sums[i][2] = z;
    pthread_barrier_wait(&phase); /* main grows `grown` */
    pthread_barrier_wait(&phase);
    long n = (long)(grown_len / sizeof(int));
    slice(i, n, &lo, &hi);
    long g = 0;
    for (long k = lo; k < hi; k++) {
        g += grown[k];
        grown[k] += 1;
    }
    sums[i][3] = g;
    return NULL;
}

/* The file's contents, into this thread's own memory (a read(2) into
 * shared memory the node holds read-only at that moment fails with
 * EFAULT under dsm: docs/unmodified-programs.md). */
static _Thread_local int back[INTS];

static ssize_t read_file_fd(int fd)
{
    return pread(fd, back, sizeof back, 0);
}

static ssize_t read_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    ssize_t n = fd < 0 ? 0 : read_file_fd(fd);
    if (fd >= 0)
        close(fd);
    return n;
}

static int *map_file(int fd, int prot, int flags)
{
    void *p = mmap(NULL, INTS * sizeof(int), prot, flags, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
    workers = argc > 1 ? atoi(argv[1]) : 3;
    if (workers < 1 || workers > MAXW)
        return 2;
    char path[] = "/tmp/pt_mmap_XXXXXX", path2[] = "/tmp/pt_mmap2_XXXXXX",
         path3[] = "/tmp/pt_mmap3_XXXXXX";
    int fd = mkstemp(path), fd2 = mkstemp(path2), fd3 = mkstemp(path3);
    if (fd < 0 || fd2 < 0 || fd3 < 0)
        return 3;
    static int init[INTS];
    long want_in = 0;
    for (int k = 0; k < INTS; k++)
        want_in += init[k] = k % 251;
    if (write(fd, init, sizeof init) != sizeof init || write(fd2, init, sizeof init) != sizeof init ||
        write(fd3, init, sizeof init) != sizeof init)
        return 4;
    int bad = 0;
    in_private = map_file(fd, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    in_readonly = map_file(fd, PROT_READ, MAP_SHARED);
    out_shared = map_file(fd3, PROT_READ | PROT_WRITE, MAP_SHARED);
    out_shared2 = map_file(fd2, PROT_READ | PROT_WRITE, MAP_SHARED);
    unlink(path2); /* written back all the same: the mapping holds the file */
    anon_shared = mmap(NULL, ANON * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    anon_private = mmap(NULL, ANON * sizeof(int), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int zfd = open("/dev/zero", O_RDWR);
    zero_dev = mmap(NULL, ANON * sizeof(int), PROT_READ | PROT_WRITE, MAP_PRIVATE, zfd, 0);
    grown_len = 3000 * sizeof(int);
    grown = mmap(NULL, grown_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!in_private || !in_readonly || !out_shared || !out_shared2 || anon_shared == MAP_FAILED ||
        anon_private == MAP_FAILED || zero_dev == MAP_FAILED || grown == MAP_FAILED) {
        printf("a mapping failed\n");
        return 5;
    }
    for (int k = 0; k < 3000; k++)
        grown[k] = 1;
    pthread_t th[MAXW];
    pthread_barrier_init(&phase, NULL, (unsigned)workers + 1);
    for (long i = 0; i < workers; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    pthread_barrier_wait(&phase);
    /* Grown while the workers wait: what it held, and zeroes after. */
    void *g = mremap(grown, grown_len, 10000 * sizeof(int), MREMAP_MAYMOVE);
    if (g == MAP_FAILED)
        bad++;
    else {
        grown = g;
        grown_len = 10000 * sizeof(int);
    }
    pthread_barrier_wait(&phase);
    for (int i = 0; i < workers; i++)
        pthread_join(th[i], NULL);

    long a = 0, b = 0, z = 0, gsum = 0;
    for (int i = 0; i < workers; i++) {
        a += sums[i][0];
        b += sums[i][1];
        z += sums[i][2];
        gsum += sums[i][3];
    }
    printf("file private %ld, read-only %ld (want %ld); zero %ld; grown %ld (want 3000)\n", a, b,
           want_in, z, gsum);
    bad += a != want_in || b != want_in || z != 0 || gsum != 3000;

    long anon = 0, priv = 0, after = 0;
    for (long k = 0; k < ANON; k++) {
        anon += anon_shared[k];
        priv += anon_private[k];
    }
    for (long k = 0; k < 10000; k++)
        after += grown[k];
    /* Private anonymous memory advised away reads as zeroes again; a
     * private file mapping, as its file. */
    madvise(anon_private, ANON * sizeof(int), MADV_DONTNEED);
    madvise(in_private, INTS * sizeof(int), MADV_DONTNEED);
    long priv_after = 0, in_after = 0;
    for (long k = 0; k < ANON; k++)
        priv_after += anon_private[k];
    for (long k = 0; k < INTS; k++)
        in_after += in_private[k];
    printf("anon shared %ld, private %ld, after MADV_DONTNEED %ld; file private after %ld; grown "
           "after %ld\n", anon, priv, priv_after, in_after, after);
    bad += anon != (long)ANON * (ANON - 1) / 2 || priv != (long)ANON * (ANON - 1) || priv_after ||
           in_after != want_in || after != 3000 + 10000;

    /* The shared file mappings: one by msync, then munmap; the other
     * (unlinked) by munmap alone, in two pieces. */
    int rc_sync = msync(out_shared, INTS * sizeof(int), MS_SYNC);
    long mism = 0;
    if (read_file(path3) != sizeof back)
        mism = -1;
    for (int k = 0; mism >= 0 && k < INTS; k++)
        mism += back[k] != k * 3 + 1;
    int rc_un = munmap(out_shared, INTS * sizeof(int));
    int rc_mid = munmap((char *)out_shared2 + 4096, 4096);
    int rc_rest = munmap(out_shared2, INTS * sizeof(int));
    long mism2 = 0;
    if (read_file_fd(fd2) != sizeof back)
        mism2 = -1;
    for (int k = 0; mism2 >= 0 && k < INTS; k++)
        mism2 += back[k] != k * 5 + 2;
    printf("msync %d, file differs in %ld; munmap %d %d %d, unlinked file differs in %ld\n",
           rc_sync, mism, rc_un, rc_mid, rc_rest, mism2);
    bad += rc_sync || mism || rc_un || rc_mid || rc_rest || mism2;
    munmap(in_private, INTS * sizeof(int));
    munmap(in_readonly, INTS * sizeof(int));
    munmap(anon_shared, ANON * sizeof(int));
    munmap(anon_private, ANON * sizeof(int));
    munmap(zero_dev, ANON * sizeof(int));
    munmap(grown, grown_len);
    close(fd);
    close(fd2);
    close(fd3);
    close(zfd);
    unlink(path);
    unlink(path3);
    printf("pt_mmap: %s\n", bad ? "FAILED" : "ok");
    return bad != 0;
}
