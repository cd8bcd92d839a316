#!/bin/sh
# localize.sh OUT.a MAP OBJECT... — the static libdsm: OBJECT... linked into
# one relocatable object whose globals are made local but for those the
# version script MAP exports (its `global:` patterns, shell globs as ld
# reads them), archived alone as OUT.a. A program that links it can then
# define any name the library uses inside, as it can with libdsm.so.
set -eu
out=$1 map=$2
shift 2
tmp=$out.o
keep=$out.keep
${LD:-ld} -r -o "$tmp" "$@"
patterns=$(sed -n '/global:/,/local:/p' "$map" | sed 's/global://; s/local:.*//' | tr ';' ' ')
nm -g --defined-only "$tmp" | awk '{print $3}' | while read -r sym; do
    for p in $patterns; do
        # shellcheck disable=SC2254 (the pattern is a glob on purpose)
        case $sym in $p) echo "$sym"; break ;; esac
    done
done > "$keep"
${OBJCOPY:-objcopy} --keep-global-symbols="$keep" "$tmp"
rm -f "$out"
${AR:-ar} rcs "$out" "$tmp"
rm -f "$tmp"
