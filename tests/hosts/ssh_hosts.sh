#!/bin/bash
# ssh_hosts.sh N SLOTS BUILD [full|quick|quicker|lossy|ucx] — the conformance
# programs and two applications on N hosts (network namespaces, each with its own
# sshd) with SLOTS nodes each, started by dsmrun --hosts from host 1. Every
# job must succeed, and no process may be left on any host afterwards.
#
# "full" runs every conformance program and the two applications; "quick"
# three programs, "quicker" two (for many hosts on a 2-core machine);
# "lossy" two programs with loss, delay and duplication
# on the links (netem) where the kernel has it, else injected by the
# transport (this machine's kernel has no netem); "ucx" the quick set over
# DSM_NET=ucx over UCX's tcp.
set -u
. "$(dirname "$0")/netns.sh"
n=$1 slots=$2 build=$3 mode=${4:-full}
dsmrun=$build/tools/dsmrun
conf=$build/tests/conf
apps=$build/bench/apps

hosts_up "$n"
hosts=$(host_list "$n" "$slots")
env_args=()
if [ "$mode" = lossy ]; then
    # On the veth links themselves where the kernel has netem; by the
    # transport's own injection where it has not (as on this machine).
    if on_host 1 tc qdisc add dev eth0 root netem loss 5% delay 100us duplicate 2% 2>/dev/null; then
        for ((i = 2; i <= n; i++)); do
            on_host "$i" tc qdisc add dev eth0 root netem loss 5% delay 100us duplicate 2%
        done
        echo "loss, delay and duplication: netem on every host's link"
    else
        env_args=(--env DSM_NET_LOSS=0.05 --env DSM_NET_DUP=0.02 --env DSM_NET_REORDER=0.02
                  --env DSM_NET_DELAY_US=100)
        echo "loss, delay, duplication and reordering: by the transport (no netem in this kernel)"
    fi
fi

if [ "$mode" = ucx ]; then
    # These hosts share one kernel and /dev/shm, so UCX would rightly
    # join them by shared memory; tcp is what separate hosts would use.
    env_args=(--env DSM_NET=ucx --env UCX_TLS=tcp,self)
fi

# The conformance programs with sizes for a few seconds each (those of the
# 4-node tests, smaller under loss), then two applications.
if [ "$mode" = lossy ]; then
    jobs=("$conf/test_lock_counter 60 3" "$conf/test_barrier_messages 30")
elif [ "$mode" = quick ] || [ "$mode" = ucx ]; then
    jobs=("$conf/test_lock_counter 100 3" "$conf/test_barrier_messages 60"
          "$conf/test_fork_globals 16384" "$apps/mandel --size test" "$apps/lu --size test")
elif [ "$mode" = quicker ]; then
    jobs=("$conf/test_lock_counter 60 3" "$conf/test_barrier_messages 30"
          "$apps/mandel --size test" "$apps/lu --size test")
else
    jobs=("$conf/test_lock_counter 200 3" "$conf/test_barrier_messages 60"
          "$conf/test_false_sharing 6 4" "$conf/test_cond_producer_consumer 400 4"
          "$conf/test_malloc_everywhere 100000" "$conf/test_read_mostly 65536 20"
          "$conf/test_fork_globals 16384" "$conf/test_tsm_api 65536"
          "$conf/test_home_writes 24" "$conf/test_read_ahead 6 64"
          "$apps/mandel --size test" "$apps/lu --size test")
fi

failed=0
for job in "${jobs[@]}"; do
    start=$(date +%s%N)
    # shellcheck disable=SC2086  # job is a program and its arguments
    out=$(on_host 1 "$dsmrun" --hosts "$hosts" --timeout 60 "${env_args[@]}" $job 2>&1)
    status=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    if [ $status -ne 0 ]; then
        echo "FAILED (status $status, $ms ms): dsmrun --hosts $hosts $job"
        echo "$out" | tail -20 | sed 's/^/  /'
        failed=1
    else
        echo "ok ($ms ms): $(basename "${job%% *}") on $n hosts x $slots: $(echo "$out" | tail -1)"
    fi
done
if ! no_leftovers; then
    echo "FAILED: processes left behind"
    failed=1
fi
exit $failed
