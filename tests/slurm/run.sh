#!/bin/bash
# tests/slurm/run.sh BUILD [HOSTS] — `make test-slurm`: a Slurm cluster of
# HOSTS (default 3) hosts made of network namespaces (tests/hosts/netns.sh:
# one address each, 10.99.0.0/24, joined by a bridge, and a second network
# that joins nothing; no default route),
# and `srun -n 4 --mpi=pmix` of two conformance programs and two
# applications across them, with no dsmrun: the nodes start through PMIx
# (src/runtime/boot_pmix.c); then a starved node and a stopped one
# (liveness through a host mate, src/supervise/witness.c). slurmctld runs on host 1, a slurmd on every
# host, in a mount namespace of its own with its own /tmp (Slurm's TmpFS,
# where its PMIx plugin makes its directories: hosts sharing one collide);
# one munged serves them all. Installs slurm-wlm and munge when they are
# missing (their services are not started on this machine). Needs root.
# Everything it started is stopped, and the namespaces removed, when it
# exits.
set -u
build=$(cd "${1:-build}" && pwd)
nhosts=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "test-slurm: needs root (it starts slurmd and munged)"; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "test-slurm: installing slurm-wlm and munge"
    policy=/usr/sbin/policy-rc.d made=0
    if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' >$policy; chmod +x $policy; made=1; fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge
    status=$?
    [ $made -eq 1 ] && rm -f $policy
    [ $status -eq 0 ] || exit 1
fi

. "$here/../hosts/netns.sh"
skip() { echo "test-slurm: cannot run: $*"; exit 1; }
# Each host has a second network too, as compute nodes often have (a
# management or storage network), here one that joins no hosts (a veth
# pair within the host), listed first; and no default route: dsm must find
# the interface toward the others.
host_extra_links() {
    local ns
    ns=$(hostname_of "$1")
    ip -n "$ns" link add mgmt0 type veth peer name mgmt1 &&
        ip -n "$ns" addr add "192.168.77.$1/24" dev mgmt0 &&
        ip -n "$ns" link set mgmt0 up && ip -n "$ns" link set mgmt1 up
}
hosts_up "$nhosts" nossh
# The cluster's state lives outside /tmp, which each host has its own of.
tmp=$(mktemp -d /var/tmp/dsm-slurm.XXXXXX)
chmod 755 "$tmp"
cleanup() {
    for f in "$tmp"/*.pid; do [ -f "$f" ] && kill "$(cat "$f" 2>/dev/null)" 2>/dev/null; done
    sleep 0.5
    for f in "$tmp"/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f" 2>/dev/null)" 2>/dev/null; done
    hosts_down
    rm -rf "$tmp"
}
trap cleanup EXIT

# munge: a key and a socket of our own, reached by every host through the
# file system.
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge.key"
munged --force --key-file="$tmp/munge.key" --socket="$tmp/munge.sock" \
    --pid-file="$tmp/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munge.seed" ||
    { echo "test-slurm: munged does not start"; cat "$tmp/munged.log"; exit 1; }

# The hosts are h1..hN at their namespace addresses; slurmctld on h1.
# (One machine: every host's hostname is the same, so each slurmd is told
# its node name, -N.)
nodes=
for ((i = 1; i <= nhosts; i++)); do
    nodes+="NodeName=h$i NodeAddr=$(addr_of $i) NodeHostname=h$i CPUs=4 State=UNKNOWN"$'\n'
done
cat >"$tmp/slurm.conf" <<CONF
ClusterName=dsmtest
SlurmctldHost=$(hostname -s)($(addr_of 1))
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool.%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.%n.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=pmix
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
${nodes}PartitionName=dsm Nodes=h[1-$nhosts] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
mkdir -p "$tmp/state"
export SLURM_CONF=$tmp/slurm.conf
on_host 1 slurmctld -f "$SLURM_CONF" ||
    { echo "test-slurm: slurmctld does not start"; cat "$tmp/slurmctld.log"; exit 1; }
# The checkout and the build stay at their paths on every host, as on a
# cluster's shared file system: one under /tmp (a clone made there) is
# bound again over the host's own /tmp.
root=$(cd "$here/../.." && pwd)
keep=()
case $root/ in /tmp/*) keep+=("$root") ;; esac
case $build/ in "$root"/*) ;; /tmp/*) keep+=("$build") ;; esac
for ((i = 1; i <= nhosts; i++)); do
    mkdir -p "$tmp/spool.h$i"
    # nsenter, not `ip netns exec`, which mounts a /sys of its own without
    # the cgroups slurmd wants. Arguments: the holding folder, then the
    # folders to keep.
    HOST=h$i nsenter --net="/run/netns/$(hostname_of $i)" unshare -m --propagation private sh -c '
        hold=$1; shift; n=0
        for d; do n=$((n + 1)); mkdir -p "$hold/$n" && mount --bind "$d" "$hold/$n" || exit 1; done
        mount -t tmpfs none /tmp || exit 1
        n=0
        for d; do n=$((n + 1)); mkdir -p "$d" && mount --bind "$hold/$n" "$d" || exit 1; done
        exec slurmd -f "$SLURM_CONF" -N "$HOST"' sh "$tmp/keep.h$i" "${keep[@]}" ||
        { echo "test-slurm: slurmd on h$i does not start"; cat "$tmp/slurmd.h$i.log"; exit 1; }
done
for ((t = 0; t < 150; t++)); do
    [ "$(on_host 1 sinfo -h -N -o '%t' 2>/dev/null | grep -Ec '^(idle|mix|alloc)')" -eq "$nhosts" ] && break
    sleep 0.2
done
echo "test-slurm: a cluster of $nhosts namespace hosts up (two networks, no default route):"
on_host 1 sinfo -N 2>&1 | sed 's/^/  /'

failed=0
for job in "$build/tests/conf/test_lock_counter 200 3" "$build/tests/conf/test_fork_globals 16384" \
           "$build/bench/apps/mandel --size test" "$build/bench/apps/lu --size test"; do
    # Spread over the hosts: at most 2 nodes a host.
    echo "\$ srun -n 4 --ntasks-per-node 2 --mpi=pmix $job   (DSM_STATS=1, on h1)"
    # shellcheck disable=SC2086  # job is a program and its arguments
    out=$(DSM_STATS=1 on_host 1 timeout 180 srun -n 4 --ntasks-per-node 2 --mpi=pmix $job 2>&1)
    status=$?
    echo "$out" | grep -E ': ok$|^RESULT|^startup:|rror|dsm:' | sed 's/^/  /'
    if [ $status -ne 0 ] || ! grep -Eq ': ok$|check=ok' <<<"$out"; then
        echo "  FAILED (status $status)"
        echo "$out" | tail -15 | sed 's/^/    /'
        failed=1
    fi
done
# Liveness without a dsm agent (src/supervise/witness.c): node 3 of h2, starved
# of CPU by a real-time hog for 3 s against a 0.8 s DSM_PEER_TIMEOUT while
# node 0 of h1 calls it, is asked about of its host mate and waited for;
# stopped, the job ends saying so (--kill-on-bad-exit: Slurm then ends the
# stopped task too). DSM_SLURM_LIVENESS_RUNS repeats them (default 1).
mp=$build/tests/mp
for ((run = 1; run <= ${DSM_SLURM_LIVENESS_RUNS:-1}; run++)); do
    echo "\$ srun -n 4 --ntasks-per-node 2 --mpi=pmix $mp/test_net_starved_peer 3   (DSM_PEER_TIMEOUT=0.8, run $run)"
    out=$(DSM_PEER_TIMEOUT=0.8 on_host 1 timeout 180 srun -n 4 --ntasks-per-node 2 --mpi=pmix \
          "$mp/test_net_starved_peer" 3 2>&1)
    status=$?
    echo "$out" | grep -E 'starved peer|silent|dsm:' | sed 's/^/  /'
    if grep -q "starved peer: skipped" <<<"$out"; then
        :
    elif [ $status -ne 0 ] || ! grep -q "starved peer: ok" <<<"$out" || grep -q "silent for" <<<"$out"; then
        echo "  FAILED (status $status): a starved node must be waited for"
        echo "$out" | tail -15 | sed 's/^/    /'
        failed=1
    fi
    echo "\$ srun -n 4 --ntasks-per-node 2 --mpi=pmix --kill-on-bad-exit $mp/test_net_dead_peer   (DSM_PEER_TIMEOUT=2, run $run)"
    start=$(date +%s%N)
    out=$(DSM_PEER_TIMEOUT=2 on_host 1 timeout 180 srun -n 4 --ntasks-per-node 2 --mpi=pmix --kill-on-bad-exit \
          "$mp/test_net_dead_peer" 2>&1)
    status=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    echo "$out" | grep -E 'silent|dsm:' | head -3 | sed 's/^/  /'
    if [ $status -eq 0 ] || [ $ms -ge 60000 ] || ! grep -q "peer 3 silent for .*its process is stopped" <<<"$out"; then
        echo "  FAILED (status $status, $ms ms): a stopped node must end the job, named stopped"
        echo "$out" | tail -15 | sed 's/^/    /'
        failed=1
    fi
done
[ $failed -eq 0 ] && echo "test-slurm: all passed" || echo "test-slurm: FAILED"
exit $failed
