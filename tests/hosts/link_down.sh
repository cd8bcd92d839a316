#!/bin/bash
# link_down.sh BUILD — one host's network cut in the middle of a job
# (`ip link set eth0 down` in its namespace), with DSMRUN_RSH="ssh -F
# my_config" as docs/hosts.md shows it: a configuration with no
# ServerAliveInterval, so ssh itself never notices. The job must end naming
# the silent host, and no other, and the agent and nodes on the cut-off host
# must end on their own soon after they lose the launcher.
set -u
. "$(dirname "$0")/netns.sh"
build=$1
dsmrun=$build/tools/dsmrun
prog=$build/tests/conf/test_barrier_messages

hosts_up 4
# The user's configuration: the test's, less its keepalives and its shared
# connections.
grep -Ev '^\s*(ServerAlive|Control)' "$HOSTS_TMP/ssh_config" >"$HOSTS_TMP/my_config"
export DSMRUN_RSH="ssh -F $HOSTS_TMP/my_config"
cut=3 cut_ns=$(hostname_of 3) cut_addr=$(addr_of 3)

on_host 1 "$dsmrun" --hosts "$(host_list 4 2)" --timeout 120 "$prog" 100000000 \
    >"$HOSTS_TMP/out" 2>"$HOSTS_TMP/err" &
job=$!

# The job runs once host 3's nodes do (ps names them after the program).
job_procs() {   # the job's processes on host 3: its agent and nodes
    ip netns pids "$cut_ns" | xargs -r ps -o pid=,comm= -p | grep -Ev ' (sshd|ssh)$'
}
for ((t = 0; ; t++)); do
    [ "$(job_procs | grep -c test_barrier)" -eq 2 ] && break
    if [ $t -ge 300 ] || ! kill -0 $job 2>/dev/null; then
        echo "FAILED: the job did not start on host $cut"
        cat "$HOSTS_TMP/err"
        exit 1
    fi
    sleep 0.1
done

start=$(date +%s%N)
ip -n "$cut_ns" link set eth0 down
wait $job
status=$?
ms=$((($(date +%s%N) - start) / 1000000))
# The cut-off host's agent and nodes end on their own: they have lost the
# launcher. Bounded: BEAT_LOST_S (5 s) after the cut, and slack for a
# loaded machine; the nodes' own peer timeout (10 s) must not be what ends
# them.
for ((t = 0; t < 150; t++)); do
    [ -z "$(job_procs)" ] && break
    sleep 0.1
done
cut_ms=$((($(date +%s%N) - start) / 1000000))

failed=0
echo "dsmrun's stderr (status $status, ended $ms ms after host $cut's link went down):"
sed 's/^/  /' "$HOSTS_TMP/err"
[ $status -eq 255 ] || { echo "FAILED: status $status, expected 255"; failed=1; }
grep -q "^dsmrun: host $cut_addr (nodes 4-5): no word from its agent" "$HOSTS_TMP/err" ||
    { echo "FAILED: no line names host $cut_addr as silent"; failed=1; }
for i in 1 2 4; do
    grep -q "host $(addr_of $i)" "$HOSTS_TMP/err" &&
        { echo "FAILED: a line names host $(addr_of $i), which is healthy"; failed=1; }
done
if [ -n "$(job_procs)" ]; then
    echo "FAILED: 15 s after the cut, still on host $cut:"
    job_procs | sed 's/^/  /'
    failed=1
else
    echo "host $cut's agent and nodes ended $cut_ms ms after the cut"
    [ $cut_ms -le 9000 ] ||
        { echo "FAILED: they did not end on losing the launcher (within 9 s of the cut)"; failed=1; }
fi
ip -n "$cut_ns" link set eth0 up
if ! no_leftovers; then
    echo "FAILED: processes left behind"
    failed=1
fi
[ $failed -eq 0 ] && echo "ok: cutting host $cut's link ended the job, naming it"
exit $failed
