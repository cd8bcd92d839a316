/*
 * fft.C — a small radix-2 FFT in the SPLASH-2 style, for the PARMACS macro
 * files (dsm/parmacs.m4 on dsm, dsm/parmacs-threads.m4 on threads).
 *
 *   fft [-pP] [-mM]    P processes, 2^M complex points
 *
 * The master reads the options, allocates the data, creates P-1 processes
 * one CREATE at a time and joins the work itself. Each process takes its
 * number from a counter under a lock (so process 0 need not be the
 * master), and the stages of the butterfly are split among the processes
 * with a barrier after each. Process 0 then computes the error of a round
 * trip (forward, inverse) and of a few bins against a direct DFT, into
 * plain globals that the master prints after WAIT_FOR_END.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

MAIN_ENV

#define PI 3.14159265358979323846

struct GlobalMemory {
    LOCKDEC(idlock)
    long id;
    BARDEC(start)
    unsigned long starttime, finishtime;
};

struct GlobalMemory *Global;
long P = 1;
long M = 12;
long N;
double *re, *im;            /* the data, shared */
double *re0, *im0;          /* the input, for the checks */
double roundtrip_error;     /* written by process 0, read by the master */
double dft_error;
long pid0_ran;

static void stages(long MyNum, int sign, long procs)
{
    /* bit reversal: process MyNum swaps its share of the index pairs */
    for (long i = MyNum; i < N; i += procs) {
        long j = 0;
        for (long b = 0; b < M; b++)
            if (i & (1L << b))
                j |= 1L << (M - 1 - b);
        if (j > i) {
            double t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    if (procs > 1)
        BARRIER(Global->start, procs)
    for (long len = 2; len <= N; len <<= 1) {
        long half = len / 2;
        /* the N/2 butterflies of this stage, in procs contiguous shares */
        long first = MyNum * (N / 2) / procs, last = (MyNum + 1) * (N / 2) / procs;
        for (long k = first; k < last; k++) {
            long group = k / half, pos = k % half;
            long a = group * len + pos, b = a + half;
            double ang = sign * 2 * PI * pos / len;
            double wr = cos(ang), wi = sin(ang);
            double xr = re[b] * wr - im[b] * wi, xi = re[b] * wi + im[b] * wr;
            re[b] = re[a] - xr; im[b] = im[a] - xi;
            re[a] += xr; im[a] += xi;
        }
        if (procs > 1)
            BARRIER(Global->start, procs)
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
    stages(MyNum, -1, P);
    stages(MyNum, +1, P);
    for (long i = MyNum; i < N; i += P) {
        re[i] /= N;
        im[i] /= N;
    }
    BARRIER(Global->start, P)
    if (MyNum == 0) {
        CLOCK(Global->finishtime)
        double e = 0;
        for (long i = 0; i < N; i++)
            e = fmax(e, fmax(fabs(re[i] - re0[i]), fabs(im[i] - im0[i])));
        roundtrip_error = e;
        pid0_ran++;
    }
}

/* A few bins of the forward transform, directly. */
static double check_dft(void)
{
    memcpy(re, re0, N * sizeof *re);
    memcpy(im, im0, N * sizeof *im);
    double e = 0;
    stages(0, -1, 1); /* the same code, serial */
    for (long k = 0; k < N; k += N / 8 + 1) {
        double sr = 0, si = 0;
        for (long t = 0; t < N; t++) {
            double ang = -2 * PI * (double)((k * t) % N) / N;
            sr += re0[t] * cos(ang) - im0[t] * sin(ang);
            si += re0[t] * sin(ang) + im0[t] * cos(ang);
        }
        e = fmax(e, fmax(fabs(sr - re[k]), fabs(si - im[k])));
    }
    return e;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "p:m:")) != -1) {
        switch (c) {
        case 'p': P = atol(optarg); break;
        case 'm': M = atol(optarg); break;
        default: fprintf(stderr, "usage: fft [-pP] [-mM]\n"); exit(2);
        }
    }
    N = 1L << M;
    MAIN_INITENV(,64000000)
    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory));
    re = (double *)G_MALLOC(N * sizeof(double));
    im = (double *)G_MALLOC(N * sizeof(double));
    re0 = (double *)G_MALLOC(N * sizeof(double));
    im0 = (double *)G_MALLOC(N * sizeof(double));
    srand48(1);
    for (long i = 0; i < N; i++) {
        re[i] = re0[i] = drand48() - 0.5;
        im[i] = im0[i] = drand48() - 0.5;
    }
    Global->id = 0;
    LOCKINIT(Global->idlock)
    BARINIT(Global->start)
    printf("FFT: %ld points, %ld processes\n", N, P);

    for (long i = 1; i < P; i++)
        CREATE(SlaveStart)
    SlaveStart();
    WAIT_FOR_END(P - 1)

    dft_error = check_dft();
    int ok = pid0_ran == 1 && roundtrip_error < 1e-9 && dft_error < 1e-6 * N;
    printf("round trip error %.3g, DFT error %.3g, time %lu us: %s\n", roundtrip_error,
           dft_error, Global->finishtime - Global->starttime, ok ? "ok" : "WRONG");
    if (!ok)
        exit(1);
    MAIN_END
}
