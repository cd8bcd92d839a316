#!/bin/bash
# check_openmp_by_name.sh SRC BUILD — an HPC Makefile that adds -fopenmp only
# when $(CC)'s name contains gcc or clang (omp_by_name/Makefile) builds an
# OpenMP program with dsmcc's other names, installed and in the build tree,
# and the program's team spans 2 nodes. With CC=dsmcc the same Makefile
# builds it serial, which is what the other names are for.
set -u
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null || { echo "openmp-by-name: install failed"; exit 1; }
fail=0
# compiler, expected output of the program on 2 nodes
check() {
    local cc=$1 want=$2 dir
    dir=$tmp/$(basename "$cc")
    mkdir "$dir" && cp "$src/omp_by_name/Makefile" "$src/omp_by_name/omp_pids.c" "$dir"
    if ! make -s -C "$dir" CC="$cc" >"$dir/make.log" 2>&1; then
        cat "$dir/make.log"
        echo "openmp-by-name: make CC=$cc failed"
        fail=1
        return
    fi
    local out
    out=$("$build/tools/dsmrun" -n 2 "$dir/omp_pids" 2>&1)
    if [ "$out" != "$want" ]; then
        echo "openmp-by-name: make CC=$cc, on 2 nodes: '$out', not '$want'"
        fail=1
    fi
}
check "$tmp/prefix/bin/dsm-gcc" "2 threads in 2 processes"
check "$build/tools/dsm-clang" "2 threads in 2 processes"
check "$tmp/prefix/bin/dsmcc" "1 threads in 1 processes"
# The C++ and Fortran names choose their language as dsmc++ and dsmfort do.
for w in dsm-g++:dsmc++ dsm-clang++:dsmc++ dsm-gfortran:dsmfort dsm-clang:dsmcc; do
    "$tmp/prefix/bin/${w%%:*}" --help | grep -q "^usage: ${w#*:} " ||
        { echo "openmp-by-name: ${w%%:*} is not ${w#*:}"; fail=1; }
done
[ $fail = 0 ] && echo "openmp-by-name: the Makefile's OpenMP flag chosen, the team on 2 nodes"
exit $fail
