#!/bin/bash
# documented_mpirun.sh BUILD — every `mpirun` command that README.md and
# docs/hosts.md show, run as shown on two network-namespace hosts (netns.sh):
# prog [args] becomes a conformance program, n1 and n2 the hosts, FILE a
# hostfile naming them with 8 slots each. Run as root, --allow-run-as-root is
# added; Open MPI reaches the other host with the test's ssh configuration
# (OMPI_MCA_plm_rsh_agent, as the docs say). Each must succeed on this
# 2-core machine.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/netns.sh"
build=$1
root=$here/../..
command -v mpirun >/dev/null || skip "needs mpirun (openmpi-bin)"
prog="$build/tests/conf/test_fork_globals 4096"

# The commands: lines of the docs that start with "mpirun ", comments cut.
mapfile -t commands < <(grep -h '^mpirun ' "$root/README.md" "$root/docs/hosts.md" |
                        sed 's/[[:space:]]*#.*//' | sort -u)
[ ${#commands[@]} -ge 2 ] || { echo "FAILED: the docs show fewer than 2 mpirun commands"; exit 1; }

hosts_up 2
printf '%s slots=8\n%s slots=8\n' "$(addr_of 1)" "$(addr_of 2)" >"$HOSTS_TMP/hostfile"
export OMPI_MCA_plm_rsh_agent="ssh -F $HOSTS_TMP/ssh_config"
failed=0
for c in "${commands[@]}"; do
    run=${c//prog \[args\]/$prog}
    run=${run//n1:/$(addr_of 1):}
    run=${run//n2:/$(addr_of 2):}
    run=${run//--hostfile FILE/--hostfile $HOSTS_TMP/hostfile}
    [ "$(id -u)" -eq 0 ] && run=${run/mpirun /mpirun --allow-run-as-root }
    # Open MPI passes no environment to other hosts unless told (-x, as
    # docs/hosts.md says): make test's DSM_CHECK travels as a user's would.
    [ -n "${DSM_CHECK:-}" ] && run=${run/mpirun /mpirun -x DSM_CHECK }
    [ -n "${DSM_NET:-}" ] && run=${run/mpirun /mpirun -x DSM_NET } # make test-ucx
    # shellcheck disable=SC2086  # a command line, as the docs write it
    out=$(on_host 1 timeout 120 $run 2>&1)
    status=$?
    if [ $status -ne 0 ] || ! grep -q ': ok$' <<<"$out"; then
        echo "FAILED (status $status): $c"
        echo "  ran: $run"
        tail -8 <<<"$out" | sed 's/^/  /'
        failed=1
    else
        echo "ok: $c: $(grep ': ok$' <<<"$out" | head -1)"
    fi
done
exit $failed
