#!/bin/bash
# bench/hosts.sh [BUILD] — dsm across hosts against dsm on one host, on this
# machine: hosts are network namespaces joined by a bridge, each with its
# own address and sshd (tests/hosts/netns.sh), so the difference is the
# network path (veth + bridge instead of loopback, the datagram size its
# MTU gives) and the launch (ssh), not the hardware. Needs root.
#
#   1. startup: dsmrun --stats's "startup" line (launch to the last node's
#      dsm_startup return) for 8, 16, 32 and 64 nodes on 8 hosts, and the
#      same node counts on one host
#   2. bench/micro on 2 nodes: one per host, then both on one host
#   3. two applications (lu, ocean; SIZE=quick by default, or test or full)
#      on 2 and 4 nodes: one node per host, then all on one host
# Every figure goes to stdout; nothing is written elsewhere.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
dsmrun=$build/tools/dsmrun
size=${SIZE:-quick}
. "$root/tests/hosts/netns.sh"

hosts_up 8

say() { printf '%s\n' "$*"; }
startup_of() { grep -m1 '^startup:' | sed 's/^startup: \([0-9.]*\) ms.*/\1/'; }

say "== startup, ms (dsmrun start to the last node's dsm_startup return; median of 3) =="
say "   8 hosts: over ssh; 8 hosts, no ssh: the agents started with ip netns exec"
say "   (tests/hosts/netns_rsh.sh), the launch's own cost; 1 host: dsmrun -n"
say "nodes  8-hosts  8-hosts-no-ssh  1-host"
export NS_PREFIX NS_NET
for n in 8 16 32 64; do
    per=$((n / 8))
    across=() direct=() local_=()
    for r in 1 2 3; do
        across+=("$(on_host 1 "$dsmrun" --hosts "$(host_list 8 "$per")" --stats \
            "$build/tests/conf/test_barrier_messages" 1 2>&1 | startup_of)")
        direct+=("$(DSMRUN_RSH=$root/tests/hosts/netns_rsh.sh on_host 1 "$dsmrun" \
            --hosts "$(host_list 8 "$per")" --stats \
            "$build/tests/conf/test_barrier_messages" 1 2>&1 | startup_of)")
        local_+=("$("$dsmrun" -n "$n" --stats "$build/tests/conf/test_barrier_messages" 1 2>&1 |
            startup_of)")
    done
    med() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
    printf '%5d  %7s  %14s  %6s\n' "$n" "$(med "${across[@]}")" "$(med "${direct[@]}")" \
        "$(med "${local_[@]}")"
done

say
say "== bench/micro, 2 nodes on 2 hosts =="
on_host 1 "$dsmrun" --hosts "$(host_list 2 1)" "$build/bench/micro" --quick 2>&1
say
say "== bench/micro, 2 nodes on 1 host =="
"$dsmrun" -n 2 "$build/bench/micro" --quick 2>&1

say
say "== applications ($size size): RESULT time (s), one node per host vs all on one host =="
for app in lu ocean; do
    for n in 2 4; do
        a=$(on_host 1 "$dsmrun" --hosts "$(host_list "$n" 1)" "$build/bench/apps/$app" --size "$size" 2>&1 |
            grep -m1 '^RESULT' | sed 's/.* time=\([0-9.]*\).*check=\([a-zA-Z]*\).*/\1 (\2)/')
        b=$("$dsmrun" -n "$n" "$build/bench/apps/$app" --size "$size" 2>&1 |
            grep -m1 '^RESULT' | sed 's/.* time=\([0-9.]*\).*check=\([a-zA-Z]*\).*/\1 (\2)/')
        say "$app n=$n: $n hosts $a   1 host $b"
    done
done
