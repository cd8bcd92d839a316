#!/bin/bash
# mpirun_liveness.sh BUILD CASE [udp|ucx] — Open MPI's mpirun starts four
# nodes on two hosts (network namespaces, netns.sh; Open MPI reaches host 2
# over ssh, as on a cluster): nodes 0 and 1 on host 1, 2 and 3 on host 2. No
# dsm agent runs anywhere, so a silent node of the other host can be looked
# at only by its host mate, which a node asks over the job's own network
# (src/supervise/witness.c, src/supervise/liveness.c); a node of its own host it looks
# at itself. Every node has a mate: the hog leaves the rest of the job one
# CPU, on which, at this machine's load, a node alone on its host would be
# unheard for longer than the timeout too, and judged by that silence
# alone (docs/hosts.md).
#   starved  node 3 gets 5 % of a CPU under a real-time hog for 3 s, longer
#            than DSM_PEER_TIMEOUT (0.8 s) at a stretch, while node 0 calls
#            it: the job ends normally, and nobody is called silent
#            (test_net_starved_peer.c);
#   stopped  SIGSTOP of node 3: the job ends, saying that its process is
#            stopped (test_net_dead_peer.c);
#   killed   SIGKILL of node 1 mid-job: the job still ends, within seconds,
#            status not 0 (test_net_node_killed.c).
# Skipped (77) without mpirun, namespaces or sshd, with one CPU, and
# without CAP_SYS_NICE for the hog.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/netns.sh"
build=$1 case=$2 net=${3:-udp}
mp=$build/tests/mp
command -v mpirun >/dev/null || skip "needs mpirun (openmpi-bin)"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the hog takes one)"

# Hosts apart (netns.sh): each its own /proc and host name, as machines are.
HOSTS_APART=1
hosts_up 2
export OMPI_MCA_plm_rsh_agent="ssh -F $HOSTS_TMP/ssh_config"
mpirun=(mpirun --host "$(addr_of 1):2,$(addr_of 2):2" -n 4 --timeout 60)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
# Open MPI passes no environment to another host unless told (-x).
export DSM_NET=$net
mpirun+=(-x DSM_NET -x DSM_PEER_TIMEOUT)
[ -n "${DSM_CHECK:-}" ] && mpirun+=(-x DSM_CHECK)
# These hosts share one kernel and /dev/shm: tcp, as separate hosts would.
[ "$net" = ucx ] && export UCX_TLS=tcp,self && mpirun+=(-x UCX_TLS)

failed=0
fail() { echo "FAILED: $*"; failed=1; }
start=$(date +%s%N)
case $case in
starved)
    # 0.8 s: the starved node waits about 0.95 s for each 50 ms it runs.
    out=$(DSM_PEER_TIMEOUT=0.8 on_host_apart 1 timeout 120 "${mpirun[@]}" "$mp/test_net_starved_peer" 3 2>&1)
    status=$?
    starved_job_verdict "$out" $status
    ;;
stopped)
    out=$(DSM_PEER_TIMEOUT=2 on_host_apart 1 timeout 120 "${mpirun[@]}" "$mp/test_net_dead_peer" 2>&1)
    status=$?
    [ $status -ne 0 ] || fail "the job exited 0 with a stopped node"
    grep -q "peer 3 silent for .*its process is stopped" <<<"$out" ||
        fail "no node said that peer 3's process is stopped"
    ;;
killed)
    out=$(DSM_PEER_TIMEOUT=2 on_host_apart 1 timeout 120 "${mpirun[@]}" "$mp/test_net_node_killed" 2>&1)
    status=$?
    [ $status -ne 0 ] || fail "the job exited 0 with a killed node"
    ;;
*)
    echo "unknown case $case"
    exit 2
    ;;
esac
ms=$((($(date +%s%N) - start) / 1000000))
# A stopped or killed node: its silence, then a look, well within
# mpirun's --timeout (which would say so: "The user-provided time limit").
if [ "$case" != starved ]; then
    [ $ms -lt 50000 ] || fail "the job took $ms ms to end"
    grep -q "time limit" <<<"$out" && fail "mpirun's --timeout ended the job, not dsm"
fi
echo "mpirun's output (status $status, $ms ms):"
sed 's/^/  /' <<<"$out"
no_leftovers || fail "processes left behind"
[ $failed -eq 0 ] && echo "ok: $case node on another host under mpirun over $net"
exit $failed
