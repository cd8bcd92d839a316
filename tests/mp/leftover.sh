#!/bin/bash
# leftover.sh DSMRUN NODES PROG — processes the nodes started end with the
# job: every node of PROG (test_run_end leftover) starts `sleep 300`, which
# holds the nodes' stdout, a FIFO; then one node fails. Once dsmrun has
# returned, the FIFO must reach EOF (every writer gone) at once, never wait
# for the sleeps: events, not the clock.
set -u
dsmrun=$1 nodes=$2 prog=$3
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/out" || exit 2

"$dsmrun" -n "$nodes" --timeout 60 "$prog" leftover >"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
exec 3<"$tmp/out"
fail() {
    echo "FAILED: $*"
    echo "--- dsmrun's stderr"; cat "$tmp/err"
    kill -KILL "$pid" 2>/dev/null
    exit 1
}
read -r -t 60 line <&3 || fail "node 0 never said the sleeps started"
[ "$line" = "sleeps started" ] || fail "unexpected first line '$line'"
wait "$pid"
status=$?
[ "$status" -eq 3 ] || fail "dsmrun's status is $status, expected 3"
# A surviving sleep would hold the FIFO for 300 s: the read times out (> 128).
read -r -t 20 line <&3
rc=$?
[ "$rc" -eq 1 ] || fail "a process the nodes started outlived the job (read status $rc, line '$line')"
grep -Eq "^dsmrun: node $((nodes - 1)) \(pid [0-9]+\) exited with status 3; stopping the job$" "$tmp/err" ||
    fail "no line naming the failed node"
echo "ok: the nodes' sleeps ended with the job ($nodes nodes)"
