#!/bin/sh
# check_layers.sh SRC_DIR OBJECT... — no include and no call runs up the
# layers (docs/design.md, "Layers": each layer uses only those below it and
# base, which is below them all).
#
# The order is read from docs/design.md's numbered list ("N. **net** ...",
# "6. **parallel** and **omp**": layers of one number may use each other).
# Includes: every #include "LAYER/..." of src/LAYER2/*. Calls: every name an
# object of the library leaves undefined and another layer's object
# defines (nm), but for the C library's own names, which libdsm defines to
# interpose them (src/mem/kernel*.c, src/sync/pshared.c): a call to read(2)
# is a call to the C library, whichever object answers it.
#
# KNOWN lists what still runs up, one "FILE -> TARGET" a line: a line that
# no longer occurs fails the check too, so the list only shrinks.
set -u
src=$1
shift

# base's configuration table takes DSM_PROTOCOL's choices, the names
# alone, from the protocols' list.
KNOWN='src/base/config.c -> coherence/protocols.def'

order=$(awk '/^## Layers/ { on = 1; next } on && /^## / { exit }
    on && /^[0-9]+\. / { n = $1 + 0; s = $0
        while (match(s, /\*\*[a-z]+\*\*/)) { print substr(s, RSTART + 2, RLENGTH - 4), n; s = substr(s, RSTART + RLENGTH) } }' \
    "$src/docs/design.md")
[ -n "$order" ] || { echo "check_layers: no numbered layers in $src/docs/design.md"; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "$order" > "$tmp/order"

# Includes: one awk over every file (a process a file costs a minute on a
# machine whose process starts are slow).
awk -v src="$src/" -v orderf="$tmp/order" '
    BEGIN { while ((getline l < orderf) > 0) { split(l, a, " "); r[a[1]] = a[2] } }
    /^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*\/[^"]*"/ {
      inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
      rel = FILENAME; sub("^" src, "", rel)
      split(rel, p, "/"); from = p[2]; split(inc, q, "/"); to = q[1]
      if ((from in r) && (to in r) && r[to] > r[from]) print rel " -> " inc }' \
    $(ls "$src"/src/*/*.c "$src"/src/*/*.h "$src"/src/*/*.def 2>/dev/null) > "$tmp/found"
includes=$(cat "$src"/src/*/*.[ch] "$src"/src/*/*.def 2>/dev/null | grep -c '^[[:space:]]*#[[:space:]]*include[[:space:]]*"')

# Calls.
libc=$(${CC:-cc} -print-file-name=libc.so.6)
nm -D --defined-only "$libc" 2>/dev/null | awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u > "$tmp/libc"
[ -s "$tmp/libc" ] || { echo "check_layers: cannot read the C library's names ($libc)"; exit 1; }
# One nm for every object (-A names each line's object).
nm -A "$@" | awk '
    { i = index($0, ".o:"); if (!i) next
      obj = substr($0, 1, i + 1); n = split(substr($0, i + 3), f, " ") }
    !match(obj, /\/src\/[a-z_]+\/[^\/]+\.o$/) { next }
    { file = substr(obj, RSTART + 1, RLENGTH - 3); split(file, p, "/"); layer = p[2] }
    n == 2 && f[1] == "U" { print "U", f[2], file, layer }
    n == 3 && f[2] ~ /^[TDBRVW]$/ { print "D", f[3], file, layer }' > "$tmp/syms"
calls=$(awk '$1 == "U"' "$tmp/syms" | wc -l)
awk -v orderf="$tmp/order" -v libcf="$tmp/libc" '
    BEGIN { while ((getline l < orderf) > 0) { split(l, a, " "); r[a[1]] = a[2] }
            while ((getline l < libcf) > 0) c[l] = 1 }
    $1 == "D" { def[$2] = $3; dl[$2] = $4; next }
    { use[++n] = $0 }
    END { for (i = 1; i <= n; i++) { split(use[i], u, " ")
            if ((u[2] in def) && !(u[2] in c) && (dl[u[2]] in r) && (u[4] in r) && r[dl[u[2]]] > r[u[4]])
                print u[3] " -> " u[2] " (" def[u[2]] ")" } }' "$tmp/syms" | sort -u >> "$tmp/found"

echo "$KNOWN" | sed '/^$/d' | sort -u > "$tmp/known"
sort -u "$tmp/found" -o "$tmp/found"
new=$(comm -23 "$tmp/found" "$tmp/known")
gone=$(comm -13 "$tmp/found" "$tmp/known")
status=0
if [ -n "$new" ]; then
    echo "check_layers: these run up the layers (docs/design.md, \"Layers\"):"
    echo "$new" | sed 's/^/  /'
    status=1
fi
if [ -n "$gone" ]; then
    echo "check_layers: KNOWN lists what no longer runs up (take it out of tests/check_layers.sh):"
    echo "$gone" | sed 's/^/  /'
    status=1
fi
[ $status = 0 ] && echo "layers hold: $includes includes and $calls calls of $# objects checked, $(wc -l < "$tmp/known") known exceptions"
exit $status
