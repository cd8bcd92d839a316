#!/bin/bash
# tests/slurm/run.sh BUILD — `make test-slurm`: a one-machine Slurm cluster
# (slurmctld, slurmd and munged started here, on the loopback, with their
# state in a temporary directory) and `srun -n 4 --mpi=pmix` of a
# conformance program and an application, with no dsmrun: the nodes start
# through PMIx (src/runtime/boot_pmix.c). Installs slurm-wlm and munge when
# they are missing (their services are not started on this machine). Needs
# root. Everything it started is stopped when it exits.
set -u
build=$(cd "${1:-build}" && pwd)
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

tmp=$(mktemp -d /tmp/dsm-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for f in "$tmp"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
    sleep 0.5
    for f in "$tmp"/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# munge: a key and a socket of our own.
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge.key"
munged --force --key-file="$tmp/munge.key" --socket="$tmp/munge.sock" \
    --pid-file="$tmp/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munge.seed" ||
    { echo "test-slurm: munged does not start"; cat "$tmp/munged.log"; exit 1; }

host=$(hostname -s)
cpus=$(nproc)
# Ports of our own, on the loopback only.
cat >"$tmp/slurm.conf" <<EOF
ClusterName=dsmtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
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
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=dsm Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
mkdir -p "$tmp/state" "$tmp/spool"
export SLURM_CONF=$tmp/slurm.conf
slurmctld -f "$SLURM_CONF" || { echo "test-slurm: slurmctld does not start"; cat "$tmp/slurmctld.log"; exit 1; }
slurmd -f "$SLURM_CONF" || { echo "test-slurm: slurmd does not start"; cat "$tmp/slurmd.log"; exit 1; }
for ((t = 0; t < 100; t++)); do
    sinfo -h -o '%t' 2>/dev/null | grep -Eq '^(idle|mix|alloc)' && break
    sleep 0.2
done
echo "test-slurm: one-machine cluster up ($cpus cores, 8 Slurm CPUs):"
sinfo 2>&1 | sed 's/^/  /'

failed=0
for job in "$build/tests/conf/test_lock_counter 200 3" "$build/tests/conf/test_fork_globals 16384" \
           "$build/bench/apps/mandel --size test" "$build/bench/apps/lu --size test"; do
    echo "\$ srun -n 4 --mpi=pmix $job   (DSM_STATS=1)"
    # shellcheck disable=SC2086  # job is a program and its arguments
    out=$(DSM_STATS=1 timeout 180 srun -n 4 --mpi=pmix $job 2>&1)
    status=$?
    echo "$out" | grep -E ': ok$|^RESULT|^startup:|rror|dsm:' | sed 's/^/  /'
    if [ $status -ne 0 ] || ! grep -Eq ': ok$|check=ok' <<<"$out"; then
        echo "  FAILED (status $status)"
        echo "$out" | tail -15 | sed 's/^/    /'
        failed=1
    fi
done
[ $failed -eq 0 ] && echo "test-slurm: all passed" || echo "test-slurm: FAILED"
exit $failed
