#!/bin/sh
# fortran_entry_points.sh LIBDSM — every OpenMP API routine libdsm.so
# defines (a name omp.h declares) has its Fortran entry point too: the name
# with an underscore (src/omp/omp_fortran.c), as libomp exports them.
set -u
lib=$1
header=$(echo '#include <omp.h>' | clang -fopenmp -E -x c - 2>/dev/null)
[ -n "$header" ] || { echo "no omp.h (clang -fopenmp): tools/install-deps.sh installs libomp-dev"; exit 77; }
api=$(printf '%s\n' "$header" | grep -Eo '\bomp_[a-z_]+[[:space:]]*\(' | tr -d '( \t' | sort -u)
defined=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
missing=0 checked=0
for r in $api; do
    printf '%s\n' "$defined" | grep -qx "$r" || continue
    checked=$((checked + 1))
    printf '%s\n' "$defined" | grep -qx "${r}_" || { echo "no Fortran entry point ${r}_ for $r"; missing=1; }
done
[ "$checked" -gt 20 ] || { echo "only $checked API routines found in $lib: is it libdsm.so?"; exit 1; }
[ "$missing" = 0 ] && echo "$checked OpenMP routines, each with its Fortran entry point"
exit "$missing"
