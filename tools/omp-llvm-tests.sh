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
# `dsmrun -n N --timeout T`. One line per test and node count:
#   PASS | FAIL (wrong result or crash) | HANG (timeout) |
#   NOLINK (refused at link) | REFUSED (a one-line refusal at start)
# then the pass rate per node count. ompt/ and affinity/ tests are skipped
# (tools interface, thread placement: not dsm's). Env: BUILD (default
# build), TIMEOUT (per run, default 60; every command of a test is
# bounded, so the whole tree always ends), JOBS (tests run at once,
# default 1, at most 2: the machine is shared), FILTER (a grep -E pattern
# on the test's path), OUT (a file to keep the result lines in).
set -u
if [ "${1:-}" = --one ]; then
    # One test, all node counts: run by the loop below, JOBS at a time.
    dir=$2 t=$3 work=$4; shift 4
    nodes=$*
    build=${BUILD:-build}
    timeout_s=${TIMEOUT:-60}
    dsmcc=$build/tools/dsmcc dsmrun=$build/tools/dsmrun
    # dsm's one-line refusals of what it does not run (docs/openmp.md)
    refusal="dsm: node 0: .*\(not supported\|does not support\|from main's thread only\)"
    grep -q 'RUN: %libomp-compile-and-run *$' "$t" || exit 0
    grep -qE 'REQUIRES: .*(ompt|affinity)|UNSUPPORTED: .*(clang|linux)' "$t" && exit 0
    name=$(echo "${t#$dir/}" | tr / _)
    w=$(mktemp -d "$work/t.XXXXXX")
    timeout 300 clang -fopenmp -I"$dir" -O1 "$t" -o "$w/ref" -lm 2>/dev/null || exit 0
    if ! timeout 300 "$dsmcc" -fopenmp -I"$dir" -O1 "$t" -o "$w/dsm" -lm > "$w/link.log" 2>&1; then
        linkerr=1
    else
        linkerr=0
    fi
    for n in $nodes; do
        OMP_NUM_THREADS=$n timeout "$timeout_s" "$w/ref" > /dev/null 2>&1 || continue
        if [ $linkerr = 1 ]; then
            echo "NOLINK n$n $name: $(grep -m1 -o 'undefined reference to .*' "$w/link.log" || tail -1 "$w/link.log")"
            continue
        fi
        timeout $((timeout_s + 30)) "$dsmrun" -n "$n" --timeout "$timeout_s" "$w/dsm" > "$w/out" 2>&1
        rc=$?
        if [ $rc = 0 ]; then echo "PASS n$n $name"
        elif [ $rc = 124 ] || grep -q 'timed out\|timeout' "$w/out"; then echo "HANG n$n $name"
        elif grep -q "$refusal" "$w/out"; then
            echo "REFUSED n$n $name: $(grep -m1 "$refusal" "$w/out")"
        else echo "FAIL n$n $name: $(grep -m1 'dsm:' "$w/out" || tail -1 "$w/out")"
        fi
    done
    rm -rf "$w"
    exit 0
fi
dir=${1:?usage: tools/omp-llvm-tests.sh TESTDIR [NODES...]}
shift
nodes=${*:-2 4}
build=${BUILD:-build}
filter=${FILTER:-.}
jobs=${JOBS:-1}
[ "$jobs" -ge 1 ] 2>/dev/null && [ "$jobs" -le 2 ] || { echo "omp-llvm-tests: JOBS must be 1 or 2 (got '$jobs')" >&2; exit 2; }
[ -x "$build/tools/dsmcc" ] && [ -x "$build/tools/dsmrun" ] || { echo "omp-llvm-tests: build dsm first ($build/tools/dsmcc)" >&2; exit 2; }
[ -f "$dir/omp_testsuite.h" ] || { echo "omp-llvm-tests: $dir is not runtime/test (no omp_testsuite.h)" >&2; exit 2; }
dir=$(cd "$dir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/omp-llvm-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=${OUT:-$work/results}
: > "$results"
find "$dir" -name '*.c' | sort | grep -Ev '/(ompt|affinity)/' | grep -E "$filter" |
    xargs -P "$jobs" -I{} sh "$0" --one "$dir" {} "$work" $nodes | tee -a "$results"
for n in $nodes; do
    p=$(grep -c "^PASS n$n " "$results")
    t=$(grep -c " n$n " "$results")
    echo "nodes $n: $p of $t that pass on libomp with $n threads pass on dsm"
done
