#!/bin/sh
# abi_version.sh LIBDSM.so ABI_VERSION RECORD [--record] — the SONAME says
# the ABI, and the ABI version changes when the ABI does.
#
# RECORD (src/libdsm.abi) lists every name libdsm.so exports, with its kind
# (and an object's size: a program's copy relocation depends on it), for
# the ABI version it names. Against it:
#   - the SONAME is libdsm.so.ABI_VERSION (CMakeLists.txt's DSM_ABI_VERSION);
#   - a name recorded and no longer exported, or exported as another kind
#     or size, breaks programs linked before: an ABI change, so
#     DSM_ABI_VERSION must differ from the record's, and the record is
#     written anew;
#   - a name exported and not recorded is an addition (compatible: the
#     SONAME stays), recorded too, so that its later removal is seen.
# --record writes RECORD from the library (after checking the SONAME).
# What it cannot see: a function whose parameters or a struct whose layout
# changed under the same name; include/dsm.h's review is that check.
set -u
so=$1 abi=$2 record=$3 mode=${4:-check}
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != "libdsm.so.$abi" ]; then
    echo "$(basename "$so"): SONAME '${soname:-none}', expected libdsm.so.$abi (DSM_ABI_VERSION)"
    exit 1
fi
# name, kind (FUNC, OBJECT, ...), and for objects their size
exports() {
    readelf --dyn-syms -W "$so" |
        awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $8 != "" && $4 != "SECTION" && $4 != "FILE" {
                 name = $8; sub(/@.*/, "", name)
                 if ($4 == "OBJECT") print name, $4, $3; else print name, $4 }' | LC_ALL=C sort -u
}
now=$(exports)
if [ "$mode" = --record ]; then
    {
        echo "# libdsm.abi — what libdsm.so.$abi exports: name, kind, an object's size."
        echo "# Written by tests/names/abi_version.sh --record (the test"
        echo "# names.abi_version_follows_exports says when); checked by that test."
        echo "abi $abi"
        printf '%s\n' "$now"
    } > "$record"
    echo "recorded $(printf '%s\n' "$now" | wc -l) exports of libdsm.so.$abi in $record"
    exit 0
fi
recorded_abi=$(sed -n 's/^abi \([0-9][0-9]*\)$/\1/p' "$record")
was=$(grep -v '^#' "$record" | grep -v '^abi ' | sort -u)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$was" | LC_ALL=C sort -u > "$tmp/was"
printf '%s\n' "$now" | LC_ALL=C sort -u > "$tmp/now"
gone=$(LC_ALL=C comm -23 "$tmp/was" "$tmp/now" | grep -v '^$')
new=$(LC_ALL=C comm -13 "$tmp/was" "$tmp/now" | grep -v '^$')
redo="record it: sh tests/names/abi_version.sh $so $abi $record --record"
fail=0
if [ -n "$gone" ] && [ "$recorded_abi" = "$abi" ]; then
    echo "libdsm.so.$abi no longer exports, or exports otherwise, what ABI $abi did:"
    printf '%s\n' "$gone" | sed 's/^/  /'
    echo "an ABI change: raise DSM_ABI_VERSION in CMakeLists.txt, rebuild, then record the"
    echo "new exports: sh tests/names/abi_version.sh $so NEW_VERSION $record --record"
    fail=1
elif [ "$recorded_abi" != "$abi" ]; then
    echo "src/libdsm.abi records ABI ${recorded_abi:-none}, the library is ABI $abi: $redo"
    fail=1
fi
if [ "$fail" = 0 ] && [ -n "$new" ]; then
    echo "libdsm.so.$abi exports names src/libdsm.abi does not record (an addition: the ABI"
    echo "version stays):"
    printf '%s\n' "$new" | sed 's/^/  /'
    echo "$redo"
    fail=1
fi
[ "$fail" = 0 ] && echo "libdsm.so.$abi exports the $(printf '%s\n' "$now" | wc -l) names src/libdsm.abi records for ABI $abi"
exit "$fail"
