#!/bin/sh
# omp-llvm-tests.sh — runs LLVM's OpenMP runtime tests (openmp/runtime/test
# of llvm-project, or runtime/test of github llvm-mirror/openmp) on dsm.
#
#   tools/omp-llvm-tests.sh TESTDIR [NODES...]      (default NODES: 2 4)
#
# TESTDIR is a checkout's runtime/test directory (fetched sources are never
# part of this repository). Each C test whose RUN line is
# `%libomp-compile-and-run` is first built with clang -fopenmp (libomp)
# and run with OMP_NUM_THREADS=N; only those that pass there count. Each
# such test is then built with dsmcc -fopenmp and run under
# `dsmrun -n N --timeout 60`. One line per test and node count:
#   PASS | FAIL (wrong result) | HANG (timeout) | NOLINK (refused at link)
# then the pass rate per node count. ompt/ and affinity/ tests are skipped
# (tools interface, thread placement: not dsm's). Env: BUILD (default
# build), TIMEOUT (per run, default 60), FILTER (a grep -E pattern on the
# test's path).
set -u
dir=${1:?usage: tools/omp-llvm-tests.sh TESTDIR [NODES...]}
shift
nodes=${*:-2 4}
build=${BUILD:-build}
timeout_s=${TIMEOUT:-60}
filter=${FILTER:-.}
dsmcc=$build/tools/dsmcc
dsmrun=$build/tools/dsmrun
[ -x "$dsmcc" ] && [ -x "$dsmrun" ] || { echo "omp-llvm-tests: build dsm first ($dsmcc)" >&2; exit 2; }
[ -f "$dir/omp_testsuite.h" ] || { echo "omp-llvm-tests: $dir is not runtime/test (no omp_testsuite.h)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/omp-llvm-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT
for n in $nodes; do eval "pass_$n=0 total_$n=0"; done
find "$dir" -name '*.c' | sort | grep -Ev '/(ompt|affinity)/' | grep -E "$filter" | while read -r t; do
    grep -q 'RUN: %libomp-compile-and-run *$' "$t" || continue
    grep -qE 'REQUIRES: .*(ompt|affinity)|UNSUPPORTED: .*(clang|linux)' "$t" && continue
    name=$(echo "${t#$dir/}" | tr / _)
    clang -fopenmp -I"$dir" -O1 "$t" -o "$work/ref" -lm 2>/dev/null || continue
    if ! "$dsmcc" -fopenmp -I"$dir" -O1 "$t" -o "$work/dsm" -lm > "$work/link.log" 2>&1; then
        linkerr=1
    else
        linkerr=0
    fi
    for n in $nodes; do
        OMP_NUM_THREADS=$n timeout "$timeout_s" "$work/ref" > /dev/null 2>&1 || continue
        if [ $linkerr = 1 ]; then
            echo "NOLINK n$n $name: $(grep -m1 -o 'undefined reference to .*' "$work/link.log")"
            continue
        fi
        timeout $((timeout_s + 30)) "$dsmrun" -n "$n" --timeout "$timeout_s" "$work/dsm" > "$work/out" 2>&1
        rc=$?
        if [ $rc = 0 ]; then echo "PASS n$n $name"
        elif grep -q 'timed out\|timeout' "$work/out" || [ $rc = 124 ]; then echo "HANG n$n $name"
        else echo "FAIL n$n $name: $(grep -m1 'dsm:' "$work/out" || tail -1 "$work/out")"
        fi
    done
done | tee "$work/results"
for n in $nodes; do
    p=$(grep -c "^PASS n$n " "$work/results")
    t=$(grep -c " n$n " "$work/results")
    echo "nodes $n: $p of $t that pass on libomp with $n threads pass on dsm"
done
