#!/bin/sh
# no_fortran_compiler.sh DSMFORT — with no flang on PATH, dsmfort says so in
# one line and fails, at build time, instead of running some other compiler.
set -u
dsmfort=$1
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# A PATH with the tools the script needs and no compiler at all.
for t in sh basename dirname sed mktemp rm cat; do
    ln -s "$(command -v "$t")" "$bin/$t"
done
out=$(cd "$bin" && env -u DSMCC_FC PATH="$bin" "$dsmfort" -o prog prog.f90 2>&1)
rc=$?
lines=$(printf '%s\n' "$out" | wc -l)
case $out in
"dsmfort: no Fortran compiler is installed"*) ;;
*) echo "dsmfort said: $out"; exit 1 ;;
esac
[ "$rc" -ne 0 ] || { echo "dsmfort succeeded without a compiler"; exit 1; }
[ "$lines" -eq 1 ] || { echo "dsmfort said $lines lines: $out"; exit 1; }
echo "dsmfort without a compiler: $out"
