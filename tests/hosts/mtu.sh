#!/bin/bash
# mtu.sh BUILD — datagrams follow the path's MTU (DSM_NET_DATAGRAM=auto): on
# 2 hosts whose links have an MTU of 1500, then 9000 (jumbo frames), the same
# job's datagrams must fit the MTU, and be larger with jumbo frames.
set -u
. "$(dirname "$0")/netns.sh"
build=$1
hosts_up 2
failed=0
declare -A mean
for mtu in 1500 9000; do
    for i in 1 2; do
        ip -n "$NS_PREFIX-sw" link set "p$i" mtu $mtu
        ip -n "$(hostname_of $i)" link set eth0 mtu $mtu
    done
    json=$HOSTS_TMP/stats.$mtu.json
    on_host 1 "$build/tools/dsmrun" --hosts "$(host_list 2 1)" --stats-json "$json" \
        "$build/tests/conf/test_read_mostly" 262144 1 >/dev/null ||
        { echo "FAILED: the job failed with MTU $mtu"; exit 1; }
    # Mean UDP payload per datagram sent, both nodes, pure acknowledgements
    # (a bare 72-byte header each) left out: how many of them a run sends
    # depends on the machine's load, not on the MTU. Pages dominate the rest
    # only if there are many: each node reads 256 pages of the other's
    # (with 32, some 50 datagrams in all, the small retransmissions and
    # duplicates of a loaded machine pulled the jumbo mean to 2040 bytes
    # against 1075: the test failed in a make test at load 70; with 256,
    # about 1,400 against 6,500-6,900).
    mean[$mtu]=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
c = lambda k: sum(e['counters'][k] for e in d['per_node'])
acks = c('NET_ACKS_SENT')
print((c('NET_BYTES_SENT') - 72 * acks) // max(c('NET_DGRAMS_SENT') - acks, 1))" "$json")
    echo "MTU $mtu: ${mean[$mtu]} bytes per datagram on average"
done
[ "${mean[1500]}" -le 1472 ] || { echo "FAILED: datagrams exceed a 1500-byte MTU"; failed=1; }
[ "${mean[9000]}" -gt $((2 * ${mean[1500]})) ] ||
    { echo "FAILED: jumbo frames did not give larger datagrams"; failed=1; }
exit $failed
