/*
 * mandel.C — mandel.c's Mandelbrot set, rewritten in plain PARMACS style
 * (SPLASH-2's macros, as a SPLASH program is written): globals for the
 * parameters and the shared pointers, a G_MALLOC'ed work counter under a
 * LOCK, CREATE one process at a time, process numbers from a counter under
 * a lock, a BARRIER, CLOCK for the timing. Built twice by dsmcc, from this
 * one source: on dsm (dsm/parmacs.m4) and on threads (--threads).
 *
 *   mandel_parmacs [-p P] [--size test|quick|full] [-n N] [-i ITERS] [-t TILES]
 *
 * The same image, tiles and iteration as mandel.c (see it for the method),
 * so the same answer: the checksum of all iteration counts, and every pixel
 * checked by the master against its own serial computation. What the
 * rewrite gives up is mandel.c's placement: G_MALLOC homes the image on the
 * master, where mandel.c homes each tile at its first toucher.
 * RESULT line as par.h's, mode parmacs-dsm or parmacs-threads.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MAIN_ENV

#define PAGE 8192

static const double X0 = 0.3, X1 = 0.4, Y0 = 0.5, Y1 = 0.6;

struct GlobalMemory {
    LOCKDEC(idlock)
    LOCKDEC(queuelock)
    BARDEC(start)
    long id;
    long next;                /* the work queue: the next tile */
    long done_by[256];
    unsigned long starttime, finishtime;
};

struct GlobalMemory *Global;
long P = 1;
int n = 4096, iters = 256, tiles = 512;
size_t stride;
char *image;

static int row0(int t) { return (int)((int64_t)n * t / tiles); }

__attribute__((noinline)) static void compute_tile(int t, uint16_t *out)
{
    const double dx = (X1 - X0) / n, dy = (Y1 - Y0) / n;
    const int maxit = iters;
    for (int row = row0(t); row < row0(t + 1); row++) {
        const double cy = Y0 + dy * row;
        for (int col = 0; col < n; col++) {
            const double cx = X0 + dx * col;
            double zx = 0, zy = 0;
            int k = 0;
            while (k < maxit) {
                double xx = zx * zx, yy = zy * zy;
                if (xx + yy > 4.0)
                    break;
                zy = 2.0 * zx * zy - cy;
                zx = xx - yy - cx;
                k++;
            }
            *out++ = (uint16_t)k;
        }
    }
}

void SlaveStart(void)
{
    long MyNum;
    LOCK(Global->idlock)
    MyNum = Global->id++;
    UNLOCK(Global->idlock)
    BARRIER(Global->start, P)
    if (MyNum == 0)
        CLOCK(Global->starttime)
    long mine = 0;
    for (;;) {
        long t;
        LOCK(Global->queuelock)
        t = Global->next++;
        UNLOCK(Global->queuelock)
        if (t >= tiles)
            break;
        compute_tile((int)t, (uint16_t *)(image + (size_t)t * stride));
        mine++;
    }
    Global->done_by[MyNum] = mine;
    BARRIER(Global->start, P)
    if (MyNum == 0)
        CLOCK(Global->finishtime)
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {   /* every option takes a value */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0, p;
        if (!strcmp(argv[i], "--size") && v) {
            if (!strcmp(v, "test"))
                n = 512, tiles = 64;
            else if (!strcmp(v, "quick"))
                n = 2048, tiles = 512;
            else if (!strcmp(v, "full"))
                n = 4096, tiles = 512;
            else
                bad = 1;
        } else if (!strcmp(argv[i], "-p")) {
            bad = parse_int(v, 1, 256, &p);
            P = p;
        } else if (!strcmp(argv[i], "-n"))
            bad = parse_int(v, 8, 16384, &n);
        else if (!strcmp(argv[i], "-i"))
            bad = parse_int(v, 1, 65535, &iters);
        else if (!strcmp(argv[i], "-t"))
            bad = parse_int(v, 1, 16384, &tiles);
        else
            bad = 1;
        if (bad || tiles > n) {
            fprintf(stderr, "usage: mandel_parmacs [-p P] [--size test|quick|full] [-n N] [-i ITERS] [-t TILES]\n");
            exit(2);
        }
    }
    MAIN_INITENV()
    size_t rows = (size_t)(n + tiles - 1) / (size_t)tiles;
    stride = (rows * (size_t)n * sizeof(uint16_t) + PAGE - 1) / PAGE * PAGE;
    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory));
    image = (char *)G_MALLOC((size_t)tiles * stride);
    Global->id = 0;
    Global->next = 0;
    LOCKINIT(Global->idlock)
    LOCKINIT(Global->queuelock)
    BARINIT(Global->start)

    for (long i = 1; i < P; i++)
        CREATE(SlaveStart)
    SlaveStart();
    WAIT_FOR_END(P - 1)

    uint16_t *ref = malloc(stride);
    if (!ref) {
        fprintf(stderr, "mandel: out of memory\n");
        exit(1);
    }
    size_t bad = 0;
    uint64_t sum = 0;
    for (int t = 0; t < tiles; t++) {
        size_t npix = (size_t)(row0(t + 1) - row0(t)) * (size_t)n;
        const uint16_t *got = (const uint16_t *)(image + (size_t)t * stride);
        compute_tile(t, ref);
        for (size_t k = 0; k < npix; k++) {
            bad += got[k] != ref[k];
            sum += ref[k];
        }
    }
    long total = 0, lo = tiles, hi = 0;
    for (long p = 0; p < P; p++) {
        long c = Global->done_by[p];
        total += c;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    int ok = !bad && total == tiles;
#ifdef PARMACS_THREADS_MAIN
    const char *mode = "parmacs-threads";
#else
    const char *mode = "parmacs-dsm";
#endif
    printf("RESULT app=mandel mode=%s procs=%ld size=%d time=%.6f check=%s iters=%d tiles=%d "
           "tiles_per_proc=%ld..%ld checksum=%llu\n", mode, P, n,
           (double)(Global->finishtime - Global->starttime) / 1e6, ok ? "ok" : "FAIL", iters, tiles,
           lo, hi, (unsigned long long)sum);
    if (!ok)
        exit(1);
    MAIN_END
}
