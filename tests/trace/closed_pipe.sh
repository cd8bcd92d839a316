#!/bin/sh
# closed_pipe.sh DSMRUN SOR TOOLS_DIR — dsm-trace and dsm-model piped into a
# reader that stops early (head) end quietly, as a C tool does: no
# BrokenPipeError traceback.
set -u
dsmrun=$1 sor=$2 tools=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/dsm-pipe.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$dsmrun" -n 2 --trace "$dir/t" "$sor" -n 256 -i 10 >/dev/null 2>&1 || { echo "the traced run failed"; exit 1; }
"$tools/dsm-trace" json "$dir/t" 2>"$dir/err1" | head -c 64 >/dev/null
"$tools/dsm-model" report "$dir/t" 2>"$dir/err2" | head -n 1 >/dev/null
"$tools/dsm-trace" faults "$dir/t" 2>"$dir/err3" | head -n 1 >/dev/null
if [ -s "$dir/err1" ] || [ -s "$dir/err2" ] || [ -s "$dir/err3" ]; then
    echo "a tool wrote to stderr when its reader went away:"
    cat "$dir/err1" "$dir/err2" "$dir/err3"
    exit 1
fi
echo ok
