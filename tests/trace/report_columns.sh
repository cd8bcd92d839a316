#!/bin/sh
# report_columns.sh DSMRUN SOR TOOLS_DIR — dsm-model report says what each
# of its columns (a network) is, for every network it prints.
set -u
dsmrun=$1 sor=$2 tools=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/dsm-cols.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$dsmrun" -n 2 --trace "$dir/t" "$sor" -n 256 -i 10 >/dev/null 2>&1 || { echo "the traced run failed"; exit 1; }
"$tools/dsm-model" report "$dir/t" --nets eth,loh,loh-hb,rdma >"$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }
grep -q '^columns, one network each' "$dir/out" || { echo "no legend of the columns"; cat "$dir/out"; exit 1; }
for net in eth loh loh-hb rdma; do
    grep -q "^  $net  *[a-zA-Z]" "$dir/out" || { echo "the legend does not say what $net is"; cat "$dir/out"; exit 1; }
done
echo ok
