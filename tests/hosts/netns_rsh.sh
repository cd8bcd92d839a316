#!/bin/sh
# netns_rsh.sh HOST COMMAND — stands in for ssh between the test's hosts
# (netns.sh) without sshd: runs COMMAND in the namespace of the host whose
# address is HOST, with the SSH_CONNECTION sshd would set. bench/hosts.sh
# uses it to tell the launch's own cost from ssh's. Needs NS_PREFIX and
# NS_NET in the environment.
host=$1
shift
i=$(( ${host##*.} - 10 ))
exec ip netns exec "$NS_PREFIX-h$i" env SSH_CONNECTION="$NS_NET.11 50000 $host 22" sh -c "$*"
