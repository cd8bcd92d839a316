#!/bin/bash
# remote_liveness.sh BUILD CASE [udp|ucx] — a node on another host (network
# namespaces, netns.sh; one node a host) that falls silent is judged by what
# its host's agent sees of its process (tools/arbiter.c,
# src/supervise/liveness.c), not by its silence alone:
#   starved  it gets 5 % of a CPU under a real-time hog for 3 s, longer than
#            DSM_PEER_TIMEOUT (0.8 s) at a stretch: the job ends normally,
#            and nobody is called silent (test_net_starved_peer.c);
#   stopped  SIGSTOP: node 0 ends the job, saying that its process is
#            stopped — what only the peer's agent can have told it
#            (test_net_dead_peer.c).
# Skipped (77) without namespaces or sshd, with one CPU, and without
# CAP_SYS_NICE for the hog.
set -u
. "$(dirname "$0")/netns.sh"
build=$1 case=$2 net=${3:-udp}
dsmrun=$build/tools/dsmrun
mp=$build/tests/mp
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the hog takes one)"

hosts_up 2
hosts="$(addr_of 1):1,$(addr_of 2):1"
env_args=()
# These hosts share one kernel and /dev/shm: tcp, as separate hosts would.
[ "$net" = ucx ] && env_args=(--env DSM_NET=ucx --env UCX_TLS=tcp,self)

failed=0
fail() { echo "FAILED: $*"; failed=1; }
case $case in
starved)
    # 0.8 s: the starved node waits about 0.95 s for each 50 ms it runs.
    out=$(on_host 1 "$dsmrun" --hosts "$hosts" --timeout 60 --env DSM_PEER_TIMEOUT=0.8 \
        "${env_args[@]}" "$mp/test_net_starved_peer" 3 2>&1)
    status=$?
    starved_job_verdict "$out" $status
    ;;
stopped)
    start=$(date +%s%N)
    out=$(on_host 1 "$dsmrun" --hosts "$hosts" --timeout 60 --env DSM_PEER_TIMEOUT=2 \
        "${env_args[@]}" "$mp/test_net_dead_peer" 2>&1)
    status=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    [ $status -ne 0 ] || fail "the job exited 0 with a stopped node"
    # 2 s of silence, then the agent's look: well within dsmrun's --timeout.
    [ $ms -lt 50000 ] || fail "the job took $ms ms to end"
    grep -q "peer 1 silent for .*its process is stopped" <<<"$out" ||
        fail "node 0 did not say that peer 1's process is stopped"
    ;;
*)
    echo "unknown case $case"
    exit 2
    ;;
esac
echo "dsmrun's output (status $status):"
sed 's/^/  /' <<<"$out"
no_leftovers || fail "processes left behind"
[ $failed -eq 0 ] && echo "ok: $case node on another host over $net"
exit $failed
