#!/bin/bash
# start_failure.sh BUILD — a job whose first host cannot start, the others
# healthy: a name that does not resolve, an address with no host, a host
# without dsmrun. Each must end with status 125 and one line naming that
# host, with stdout exactly the program's (empty: it never ran; none of the
# healthy agents' answers), and nothing left behind.
set -u
. "$(dirname "$0")/netns.sh"
build=$1
dsmrun=$build/tools/dsmrun
prog=$build/tests/conf/test_barrier_messages

hosts_up 3
# A connection of its own per job, as without ssh multiplexing.
DSMRUN_RSH="$DSMRUN_RSH -o ControlMaster=no -o ControlPath=none"
# Host 3 without dsmrun: its sshd, and so every session, in a mount
# namespace of its own where the build's tools/ is an empty directory.
kill "$(cat "$HOSTS_TMP/sshd.3.pid")"
for ((t = 0; t < 100; t++)); do
    [ -z "$(on_host 3 ss -Hltn 'sport = :22')" ] && break
    sleep 0.05
done
sshd_start 3 "mount -t tmpfs none '$build/tools'" ||
    skip "cannot start sshd in a mount namespace of its own"
for ((t = 0; t < 100; t++)); do
    [ -n "$(on_host 3 ss -Hltn 'sport = :22')" ] && break
    sleep 0.05
done

failed=0
check() {   # what, the failing host, the line's end
    local what=$1 bad=$2 said=$3 status ms
    local start=$(date +%s%N)
    on_host 1 "$dsmrun" --hosts "$bad:2,$(addr_of 1):2,$(addr_of 2):2" "$prog" 10 \
        >"$HOSTS_TMP/out" 2>"$HOSTS_TMP/err"
    status=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    echo "$what: status $status, $ms ms; stderr:"
    sed 's/^/  /' "$HOSTS_TMP/err"
    [ $status -eq 125 ] || { echo "FAILED: status $status, expected 125"; failed=1; }
    if [ -s "$HOSTS_TMP/out" ]; then
        echo "FAILED: stdout is not the program's (it never ran):"
        sed 's/^/  /' "$HOSTS_TMP/out"
        failed=1
    fi
    [ "$(wc -l <"$HOSTS_TMP/err")" -eq 1 ] &&
        grep -Eq "^dsmrun: host $bad \\(nodes 0-1\\): could not start: .*$said" "$HOSTS_TMP/err" ||
        { echo "FAILED: expected one line naming host $bad"; failed=1; }
    if ! no_leftovers; then
        echo "FAILED: processes left behind"
        failed=1
    fi
}
check "a name that does not resolve" nosuchhost.invalid "resolve"
check "no host at the address" "$NS_NET.99" "port 22"
check "no dsmrun on the host" "$(addr_of 3)" "tools/dsmrun: No such file or directory"
exit $failed
