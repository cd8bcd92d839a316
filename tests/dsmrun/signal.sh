#!/bin/bash
# signal.sh SIG DSMRUN PROBE — a signal sent to dsmrun while its nodes run
# ends every node. For INT, TERM and HUP, dsmrun forwards it, names it in one
# line and exits 128+signal; for KILL, the nodes die with dsmrun (their
# parent-death signal).
#
# The nodes' stdout is a FIFO: its first line says the job runs, and its EOF
# says that every process holding it (dsmrun and all nodes) has ended, so the
# script waits on events, never on the clock.
set -u
sig=$1 dsmrun=$2 probe=$3
signo=$(kill -l "$sig") || exit 2

# A signal this shell was started with ignored (nohup, a background CI step)
# stays ignored in dsmrun, which then rightly leaves it alone: skip.
ignored=$(awk '/^SigIgn:/ { print $2 }' /proc/$$/status)
if (((16#$ignored >> (signo - 1)) & 1)); then
    echo "skipped: SIG$sig is ignored in this environment"
    exit 77
fi

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/out" || exit 2

fail() {
    echo "FAILED ($sig): $*"
    echo "--- dsmrun's stderr"; cat "$tmp/err"
    kill -KILL "$pid" 2>/dev/null
    exit 1
}

# Job control gives the job its own process group and, unlike a plain
# background job, leaves SIGINT at its default, so dsmrun watches it.
set -m
"$dsmrun" -n 3 --timeout 60 "$probe" hang >"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
exec 3<"$tmp/out"
read -r -t 20 line <&3 || fail "node 0 never said it runs"
[ "$line" = "node 0 hanging" ] || fail "unexpected first line '$line'"

kill -"$sig" "$pid"
wait "$pid"
status=$?

# Every writer of the FIFO gone: EOF (status 1), not a timeout (> 128).
read -r -t 20 line <&3
rc=$?
[ "$rc" -eq 1 ] || fail "the nodes still hold their stdout (read status $rc, line '$line')"

if [ "$sig" = KILL ]; then
    [ "$status" -eq 137 ] || fail "dsmrun's status is $status"
else
    [ "$status" -eq $((128 + signo)) ] || fail "exit status $status, expected $((128 + signo))"
    grep -Eq "^dsmrun: got signal $signo \(.*\); stopping the job$" "$tmp/err" ||
        fail "no line naming the signal"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "stderr is not one line"
fi
echo "ok: SIG$sig ends the job (status $status)"
