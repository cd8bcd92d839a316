#!/bin/bash
# double_free.sh DSMRUN NODES PROG MODE NODE WHY — PROG MODE frees a block
# twice; the job must end with status 1 and one line from NODE naming the
# block PROG printed ("block 0x...") and saying WHY.
set -u
dsmrun=$1 nodes=$2 prog=$3 mode=$4 node=$5 why=$6
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$dsmrun" -n "$nodes" --timeout 60 "$prog" "$mode" >"$tmp/out" 2>"$tmp/err" </dev/null
status=$?
block=$(sed -n 's/^block \(0x[0-9a-f]*\)$/\1/p' "$tmp/out")
fail() {
    echo "FAILED: $*"
    echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"
    exit 1
}
[ -n "$block" ] || fail "the program printed no block"
[ "$status" -eq 1 ] || fail "dsmrun's status is $status, expected 1"
grep -Eq "^dsm: node $node: dsm_free\\($block\\): $why$" "$tmp/err" ||
    fail "no line from node $node naming block $block and saying '$why'"
echo "ok: $mode double free of $block found by node $node"
