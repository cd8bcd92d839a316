#!/bin/bash
# agent_killed.sh local|ssh SIGNAL BUILD — the agent of one host killed in the
# middle of a job (by SIGNAL: TERM or KILL). The job must end on every host
# with one line naming that host, and nothing left behind.
#
# local: two hosts through local_rsh.sh (no namespaces; in `make test`);
# ssh: two network-namespace hosts with an sshd each (netns.sh).
set -u
mode=$1 sig=$2 build=$3
dsmrun=$build/tools/dsmrun
prog=$build/tests/dsmrun/boot_probe
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/dsm-agent-killed.XXXXXX) || exit 1
if [ "$mode" = ssh ]; then
    . "$here/netns.sh"
    hosts_up 2
    # A connection of its own, as without ssh multiplexing.
    DSMRUN_RSH="$DSMRUN_RSH -o ControlMaster=no -o ControlPath=none"
    hosts=$(host_list 2 2) victim=$(addr_of 2)
    run() { on_host 1 "$@"; }
    trap 'hosts_down; rm -rf "$tmp"' EXIT
else
    export DSMRUN_RSH=$here/local_rsh.sh
    hosts=a:2,b:2 victim=b
    run() { "$@"; }
    trap 'rm -rf "$tmp"' EXIT
fi

# The mark tells this job's nodes from those of other tests running beside.
mark=DSMRUN_TEST_MARK=agent-killed-$$
run "$dsmrun" --hosts "$hosts" --timeout 120 --env "$mark" "$prog" hang >"$tmp/out" 2>"$tmp/err" &
job=$!

# The agent of the second host is the parent of node 2 (/proc is shared
# by the namespaces: they share the process id space).
env_of() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null; }
agent= job_id=
for ((t = 0; t < 300; t++)); do
    for p in $(pgrep -f -- "$prog hang"); do
        pp=$(ps -o ppid= -p "$p" | tr -d ' ')
        if env_of "$p" | grep -qx "$mark" && env_of "$p" | grep -qx 'DSM_RANK=2' &&
            ps -o args= -p "$pp" | grep -q -- "--agent"; then
            agent=$pp
            job_id=$(env_of "$p" | grep '^DSM_JOB=')
            break 2
        fi
    done
    kill -0 $job 2>/dev/null || break
    sleep 0.1
done
if [ -z "$agent" ]; then
    echo "FAILED: the job did not start on host $victim"
    cat "$tmp/err"
    exit 1
fi
kill -"$sig" "$agent"
wait $job
status=$?

failed=0
if [ "$sig" = TERM ]; then
    want="^dsmrun: host $victim: its agent got signal 15 \\(Terminated\\); stopping the job\$"
    want_status=143
elif [ "$mode" = ssh ]; then
    want="^dsmrun: host $victim \\(nodes 2-3\\): lost the connection, or its agent \\(ssh ended with status 255\\); stopping the job\$"
    want_status=255
else
    want="^dsmrun: host $victim \\(nodes 2-3\\): its agent ended without a word \\(status 137\\); stopping the job\$"
    want_status=137
fi
[ $status -eq $want_status ] || { echo "FAILED: status $status, expected $want_status"; failed=1; }
# The stand-in shell of local_rsh.sh says "Killed" when its child is.
grep -v '^Killed$' "$tmp/err" >"$tmp/err.dsmrun"
[ "$mode" = ssh ] && cp "$tmp/err" "$tmp/err.dsmrun"
[ "$(wc -l <"$tmp/err.dsmrun")" -eq 1 ] && grep -Eq "$want" "$tmp/err.dsmrun" ||
    { echo "FAILED: expected one line on stderr matching '$want'"; failed=1; }
grep -qv '^node 0 hanging$' "$tmp/out" && { echo "FAILED: stdout has more than the program's"; failed=1; }
for p in $(pgrep -f -- "$prog hang"); do
    if env_of "$p" | grep -qx "$job_id"; then
        echo "FAILED: left behind: $(ps -o pid=,args= -p "$p")"
        failed=1
    fi
done
if [ "$mode" = ssh ] && ! no_leftovers; then
    echo "FAILED: processes left behind"
    failed=1
fi
echo "dsmrun's stderr (status $status):"
sed 's/^/  /' "$tmp/err"
[ $failed -eq 0 ] && echo "ok: killing host $victim's agent (SIG$sig) ended the job, naming it"
exit $failed
