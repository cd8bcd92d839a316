/*
 * omp_program.c — libdsm-start.a: marks an OpenMP program. dsmcc -fopenmp
 * links this object (-Wl,--undefined=dsm_openmp_program); the runtime sees
 * the definition through its weak reference and chooses the OpenMP
 * defaults (runtime.c), which the environment still overrides.
 */
const int dsm_openmp_program = 1;
