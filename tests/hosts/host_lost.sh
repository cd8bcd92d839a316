#!/bin/bash
# host_lost.sh BUILD — a host torn down in the middle of a job: every process
# in its namespace killed (sshd, the agent, the nodes) and the namespace
# deleted. The job must end within seconds on every other host, with a line
# naming the lost host, and leave no process behind on any host. Then a job
# naming the lost host must fail to start, within seconds, with one line
# naming it, leaving nothing behind on the hosts it did reach.
set -u
. "$(dirname "$0")/netns.sh"
build=$1
dsmrun=$build/tools/dsmrun
prog=$build/tests/conf/test_barrier_messages

hosts_up 4
# A connection of its own per job, as without ssh multiplexing: the lost
# host must be found through the job's own ssh.
DSMRUN_RSH="$DSMRUN_RSH -o ControlMaster=no -o ControlPath=none"
lost=3 lost_ns=$(hostname_of 3) lost_addr=$(addr_of 3)

on_host 1 "$dsmrun" --hosts "$(host_list 4 2)" --timeout 120 "$prog" 100000000 \
    >"$HOSTS_TMP/out" 2>"$HOSTS_TMP/err" &
job=$!

# The job runs once host 3's nodes do (ps names them after the program).
for ((t = 0; ; t++)); do
    n=$(ip netns pids "$lost_ns" | xargs -r ps -o comm= -p | grep -c '^test_barrier')
    [ "$n" -eq 2 ] && break
    if [ $t -ge 300 ] || ! kill -0 $job 2>/dev/null; then
        echo "FAILED: the job did not start on host $lost"
        cat "$HOSTS_TMP/err"
        exit 1
    fi
    sleep 0.1
done

start=$(date +%s%N)
ip netns pids "$lost_ns" | xargs -r kill -9
ip netns del "$lost_ns"
wait $job
status=$?
ms=$((($(date +%s%N) - start) / 1000000))

failed=0
[ $status -ne 0 ] || { echo "FAILED: the job exited 0 after losing a host"; failed=1; }
[ $ms -le 15000 ] || { echo "FAILED: the job took $ms ms to end after losing a host"; failed=1; }
grep -q "host $lost_addr" "$HOSTS_TMP/err" ||
    { echo "FAILED: no line names host $lost_addr"; failed=1; }
if ! no_leftovers; then
    echo "FAILED: processes left behind"
    failed=1
fi
echo "dsmrun's stderr (status $status, ended $ms ms after the host was torn down):"
sed 's/^/  /' "$HOSTS_TMP/err"
[ $failed -eq 0 ] && echo "ok: losing host $lost ended the job on every host"

# The lost address may still be in host 1's ARP cache, and then a connect
# waits out ConnectTimeout rather than failing at once: dsmrun's own
# default (10 s, tools/hosts.c), not the harness's generous one.
start=$(date +%s%N)
DSMRUN_RSH="$DSMRUN_RSH -o ConnectTimeout=10" \
on_host 1 "$dsmrun" --hosts "$(addr_of 1),$(addr_of 2),$lost_addr,$(addr_of 4)" "$prog" 10 \
    >"$HOSTS_TMP/out" 2>"$HOSTS_TMP/err"
status=$?
ms=$((($(date +%s%N) - start) / 1000000))
echo "dsmrun's stderr naming an unreachable host (status $status, $ms ms):"
sed 's/^/  /' "$HOSTS_TMP/err"
[ $status -eq 125 ] || { echo "FAILED: status $status, expected 125"; failed=1; }
# It gives up rather than waits: ConnectTimeout (10 s) and what ssh and
# dsmrun need around it, with room for a loaded machine (15.2 s was seen at
# load 25 on 2 cores); a hang would run to the test's own limit.
[ $ms -le 60000 ] || { echo "FAILED: it took $ms ms to give up"; failed=1; }
[ "$(wc -l <"$HOSTS_TMP/err")" -eq 1 ] && grep -q "^dsmrun: host $lost_addr (node 2): could not start: " "$HOSTS_TMP/err" ||
    { echo "FAILED: expected one line naming host $lost_addr"; failed=1; }
if ! no_leftovers; then
    echo "FAILED: processes left behind"
    failed=1
fi
exit $failed
