/*
 * omp_row_pipeline_flushed.c — omp_row_pipeline.c as OpenMP's memory model
 * asks: a flush between a row's writes and its flag's, and one after each
 * wait (the producer/consumer of the OpenMP examples' flush section).
 */
#define FLUSH_AS_OPENMP_ASKS 1
#include "omp_row_pipeline.c"
