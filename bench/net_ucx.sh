#!/bin/bash
# bench/net_ucx.sh [BUILD] — the UCX transport against UDP, in the same run:
# bench/micro's barrier, free remote lock and remote read faults, and two
# applications, on 2 nodes, the two transports alternating (udp, ucx, udp,
# ucx, ...) so that the drift of a shared machine falls on both alike.
#
#   1. one host: 2 nodes on this machine (UCX picks its shared-memory
#      transports; DSM_NET_ONE_SIDED=auto reads pages one-sided)
#   2. two hosts: one node on each of 2 network namespaces joined by a
#      bridge (tests/hosts/netns.sh; needs root, else skipped) — UCX over
#      tcp (UCX_TLS=tcp,self: the namespaces share one kernel and /dev/shm,
#      which separate hosts would not), UDP over the same veth path
#
# ROUNDS (default 3) alternations each; APPS (default "lu -n 2560" and
# "ocean --size quick", the half-second sizes) one program per line;
# PARTS (default "1 2") which parts run. Each row prints every run's median
# (µs, or the program's own time in s), the middle run of each transport
# and their ratio UCX / UDP. Everything goes to stdout.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
dsmrun=$build/tools/dsmrun
rounds=${ROUNDS:-3}
parts=${PARTS:-1 2}
apps=${APPS-"lu -n 2560
ocean --size quick"}
micro_rows=("barrier: dsm_barrier" "lock/unlock, free, manager node 0, fresh id"
            "remote read fault, page frame here" "remote read fault, first touch")
micro_names=("barrier" "free remote lock" "read fault, frame here" "read fault, first touch")

[ -x "$build/bench/micro" ] || { echo "net_ucx.sh: no $build/bench/micro (make first)"; exit 2; }
DSM_NET=ucx "$dsmrun" -n 1 "$build/tests/conf/test_barrier_messages" 1 >/dev/null 2>&1 ||
    { echo "net_ucx.sh: this build has no UCX (DSM_NET=ucx fails)"; exit 2; }

# median of the numbers given (the lower middle for an even count; "-"
# for none: every run failed)
middle() { [ $# -gt 0 ] || { echo -; return; }; printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
# the median column of micro's row whose label starts the line
micro_row() { awk -v l="$1" 'index($0, "  " l) == 1 { s = substr($0, length(l) + 3); split(s, f, " "); print f[1]; exit }'; }
app_time() { grep -m1 '^RESULT' | sed -n 's/.* time=\([0-9.]*\).*check=ok.*/\1/p'; }

# run_set LABEL RUNNER...: RUNNER NET ARGS... runs one job over NET
run_set() {
    local label=$1 i r net out app
    shift
    declare -A got
    for ((r = 1; r <= rounds; r++)); do
        for net in udp ucx; do
            out=$("$@" "$net" "$build/bench/micro" --quick 2>&1) ||
                echo "  $net run $r failed: $(printf '%s\n' "$out" | grep -m1 -E '^(dsm|micro|dsmrun)')"
            for i in "${!micro_rows[@]}"; do
                got[$net,$i]+=" $(printf '%s\n' "$out" | micro_row "${micro_rows[$i]}")"
            done
        done
    done
    printf '%-26s %-28s %-28s %6s %6s %6s\n' "$label (µs)" "UDP runs" "UCX runs" UDP UCX ratio
    for i in "${!micro_rows[@]}"; do
        local u=$(middle ${got[udp,$i]}) x=$(middle ${got[ucx,$i]})
        printf '%-26s %-28s %-28s %6s %6s %6s\n' "${micro_names[$i]}" "${got[udp,$i]# }" \
            "${got[ucx,$i]# }" "$u" "$x" "$(ratio "$x" "$u")"
    done
    while IFS= read -r app; do
        [ -n "$app" ] || continue
        got=()
        for ((r = 1; r <= rounds; r++)); do
            for net in udp ucx; do
                # shellcheck disable=SC2086 # the program and its arguments
                out=$("$@" "$net" $build/bench/apps/$app 2>&1)
                got[$net]+=" $(printf '%s\n' "$out" | app_time)"
                printf '%s\n' "$out" | grep -q '^RESULT.*check=ok' ||
                    echo "  $app over $net, run $r: no checked RESULT: $(printf '%s\n' "$out" | grep -m1 -E '^(dsm|dsmrun|RESULT)')"
            done
        done
        local u=$(middle ${got[udp]}) x=$(middle ${got[ucx]})
        printf '%-26s %-28s %-28s %6s %6s %6s\n' "$app (s)" "${got[udp]# }" "${got[ucx]# }" \
            "$u" "$x" "$(ratio "$x" "$u")"
    done <<<"$apps"
}

one_host() { local net=$1; shift; DSM_NET=$net "$dsmrun" -n 2 "$@"; }
two_hosts() {
    local net=$1 env=(--env DSM_NET=udp)
    shift
    [ "$net" = ucx ] && env=(--env DSM_NET=ucx --env UCX_TLS=tcp,self)
    on_host 1 "$dsmrun" --hosts "$(host_list 2 1)" "${env[@]}" "$@"
}

echo "bench/net_ucx.sh $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds"
for part in $parts; do
    case $part in
    1)
        echo
        run_set "2 nodes, 1 host" one_host
        ;;
    2)
        echo
        # netns.sh skips (exit 77) where namespaces cannot be made: in a
        # subshell, so that part 1's figures stand.
        (
            . "$root/tests/hosts/netns.sh"
            hosts_up 2
            export NS_PREFIX NS_NET
            run_set "2 namespace hosts" two_hosts
        )
        ;;
    esac
done
echo
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
