#!/bin/sh
# refused.sh DSMCC SOURCE CASE WHERE [FLAGS...] — dsmcc refuses SOURCE
# built with -DCASE: the build fails, with one line on stderr, naming
# WHERE (a file; as an absolute path or one relative to here) and the line
# of it marked "here: CASE" (or WHERE alone, when no line of it is marked:
# file-scope assembly), and saying why.
set -u
dsmcc=$1 src=$2 case=$3 where=$4
shift 4
line=$(grep -n "here: $case\b" "$where" | cut -d: -f1)
dir=$(mktemp -d)
err=$("$dsmcc" "$@" "-D$case" -c "$src" -o "$dir/out.o" 2>&1)
status=$?
rm -rf "$dir"
printf '%s\n' "$err"
[ "$status" -ne 0 ] || { echo "FAILED: dsmcc built it"; exit 1; }
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || { echo "FAILED: not one line"; exit 1; }
case $err in
"dsmcc: "*": "*"assembly '"*"' is an atomic dsm cannot make coherent ("*"); use __atomic builtins or C11 atomics"*) ;;
*) echo "FAILED: not the refusal"; exit 1 ;;
esac
# The place named: FILE:LINE (or FILE), FILE the same file as WHERE.
place=${err#dsmcc: }
place=${place%%: *}
if [ -n "$line" ]; then
    [ "${place##*:}" = "$line" ] || { echo "FAILED: line ${place##*:}, not $line"; exit 1; }
    place=${place%:*}
fi
[ -f "$place" ] && [ "$(cd "$(dirname "$place")" && pwd)/$(basename "$place")" = "$where" ] ||
    { echo "FAILED: it names $place, not $where"; exit 1; }
echo "PASSED"
