#!/bin/sh
# omp-llvm-tests.sh — LLVM's OpenMP runtime tests run as lit runs them,
# against libomp (the reference, which sets the denominator) and against
# dsm on each layout: tools/omp-llvm-tests.py says how (-h).
#
#   tools/omp-llvm-tests.sh RUNTIME_DIR [LAYOUT...]   (default: 2 4 2x2)
#
# The environment's BUILD, TIMEOUT, JOBS, FILTER and OUT are its options.
exec python3 "$(dirname "$0")/omp-llvm-tests.py" "$@"
