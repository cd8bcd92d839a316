#!/bin/bash
# fork_child.sh DSMRUN NODES PROG MODE [NODE] — PROG MODE (test_fork_child.c)
# must end well ("MODE: ok", status 0); with NODE, stderr is exactly one
# line from that node's forked child naming fork and what it did, else
# nothing.
set -u
dsmrun=$1 nodes=$2 prog=$3 mode=$4 node=${5:-}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$dsmrun" -n "$nodes" --timeout 60 "$prog" "$mode" >"$tmp/out" 2>"$tmp/err" </dev/null
status=$?
fail() {
    echo "FAILED: $*"
    echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"
    exit 1
}
[ "$status" -eq 0 ] || fail "dsmrun's status is $status, expected 0"
grep -q "^$mode: ok$" "$tmp/out" || fail "no '$mode: ok'"
case $mode in
exec) what= ;;
write | thread) what="wrote the shared memory at 0x[0-9a-f]+" ;;
read) what="read the shared memory at 0x[0-9a-f]+" ;;
call) what="called dsm \\((a message to node [0-9]+|which touched the shared region at 0x[0-9a-f]+|a wait for its node.s messages)\\)" ;;
esac
if [ -z "$node" ]; then
    [ ! -s "$tmp/err" ] || fail "stderr is not empty"
else
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one line on stderr"
    grep -Eq "^dsm: node $node: fork: process [0-9]+, a child that node $node's process [0-9]+ forked, $what; a forked child is not a node of the job and may only exec" "$tmp/err" ||
        fail "the line does not name fork, node $node and what its child did"
fi
echo "ok: $mode"
