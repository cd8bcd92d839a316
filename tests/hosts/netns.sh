# netns.sh — hosts for the multi-host tests: one network namespace per host,
# each with its own address and its own sshd, joined by a bridge. Sourced by
# the test scripts; `hosts_up N` makes hosts 1..N, and everything it made is
# removed when the script exits, whatever the cause.
#
# Everything lives inside namespaces the test creates: the bridge is in a
# namespace of its own (the "switch"), so the test's addresses (10.99.0.0/24)
# never meet the machine's own network, and several copies of the test can
# run at once. dsmrun itself runs on host 1 (`on_host 1 dsmrun ...`).
# `hosts_up N nossh` makes the hosts and their network only (tests/slurm).
# With HOSTS_APART=1 each host also has a /proc and a host name of its own
# (sshd_start; on_host_apart runs a command so).
#
# A machine that forbids any of it (no root, no namespaces, no sshd) makes
# the test skip: exit 77, which ctest reports as "Not Run" with the reason.

SKIP=77
NS_PREFIX=dsmt$$
NS_NET=10.99.0
HOSTS_N=0
HOSTS_TMP=

skip() { echo "SKIP: $*"; exit $SKIP; }

hostname_of() { echo "$NS_PREFIX-h$1"; }
addr_of() { echo "$NS_NET.$((10 + $1))"; }

# Namespaces of earlier runs whose script is gone (killed before it could
# clean up): their processes are ended and the namespaces removed.
reap_stale() {
    local ns pid
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^dsmt[0-9]+-'); do
        pid=${ns#dsmt}
        pid=${pid%%-*}
        kill -0 "$pid" 2>/dev/null && continue
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
}

hosts_down() {
    local i ns
    for ((i = 0; i <= HOSTS_N; i++)); do
        if [ "$i" -eq 0 ]; then ns=$NS_PREFIX-sw; else ns=$(hostname_of "$i"); fi
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    [ -n "$HOSTS_TMP" ] && rm -rf "$HOSTS_TMP"
    return 0
}

# Checks what the tests need, or skips.
hosts_check() {
    [ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
    command -v ip >/dev/null || skip "needs ip (iproute2)"
    if [ "${1:-}" != nossh ]; then
        [ -x /usr/sbin/sshd ] || skip "needs sshd (openssh-server; tools/install-deps.sh installs it)"
        command -v ssh >/dev/null && command -v ssh-keygen >/dev/null ||
            skip "needs ssh and ssh-keygen (openssh-client)"
    fi
    ip netns add "$NS_PREFIX-probe" 2>/dev/null || skip "this machine forbids network namespaces"
    ip netns del "$NS_PREFIX-probe"
}

# hosts_up N [nossh]: namespaces, addresses, and unless nossh keys and an
# sshd per host.
hosts_up() {
    local n=$1 ssh=${2:-ssh} i ns
    hosts_check "$ssh"
    reap_stale
    trap 'hosts_down' EXIT
    trap 'exit 130' INT TERM HUP
    HOSTS_TMP=$(mktemp -d /tmp/dsm-hosts.XXXXXX) || exit 1
    chmod 700 "$HOSTS_TMP"
    HOSTS_N=$n
    net_up "$n"
    [ "$ssh" = nossh ] || sshd_up "$n"
}

# The switch, and the hosts' namespaces joined to it.
net_up() {
    local n=$1 i ns
    ip netns add "$NS_PREFIX-sw" || skip "cannot create a network namespace"
    ip -n "$NS_PREFIX-sw" link set lo up
    ip -n "$NS_PREFIX-sw" link add br0 type bridge || skip "cannot create a bridge"
    ip -n "$NS_PREFIX-sw" link set br0 up
    for ((i = 1; i <= n; i++)); do
        ns=$(hostname_of "$i")
        ip netns add "$ns" || exit 1
        ip -n "$ns" link set lo up
        # A test may give each host links of its own first (tests/slurm).
        if declare -F host_extra_links >/dev/null; then host_extra_links "$i" || exit 1; fi
        ip -n "$NS_PREFIX-sw" link add "p$i" type veth peer name eth0 netns "$ns" ||
            skip "cannot create veth pairs"
        ip -n "$NS_PREFIX-sw" link set "p$i" master br0 up
        ip -n "$ns" addr add "$(addr_of "$i")/24" dev eth0
        ip -n "$ns" link set eth0 up
    done
}

# Keys, the client's configuration (DSMRUN_RSH) and an sshd per host.
sshd_up() {
    local n=$1 i ns
    ssh-keygen -q -t ed25519 -N '' -f "$HOSTS_TMP/hostkey" || exit 1
    ssh-keygen -q -t ed25519 -N '' -f "$HOSTS_TMP/id" || exit 1
    cp "$HOSTS_TMP/id.pub" "$HOSTS_TMP/authorized_keys"
    mkdir -p /run/sshd
    cat >"$HOSTS_TMP/ssh_config" <<EOF
Host *
  User root
  IdentityFile $HOSTS_TMP/id
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  GlobalKnownHostsFile /dev/null
  LogLevel ERROR
  BatchMode yes
  # Generous: at load 35 a CPU, sshd's answer (it forks and re-executes
  # itself per connection) took over 5 s. An unreachable host still fails
  # in about 3 s (no ARP answer: "No route to host").
  ConnectTimeout 20
  ServerAliveInterval 2
  ServerAliveCountMax 2
  # One connection per host, reused by every job of the test: a connection
  # costs 0.5-2 s of this small, shared machine's time, a session on it a
  # few ms. (Users do the same; dsmrun needs nothing of it.)
  ControlMaster auto
  ControlPath $HOSTS_TMP/cm-%h
  ControlPersist 60
EOF
    export DSMRUN_RSH="ssh -T -F $HOSTS_TMP/ssh_config"

    for ((i = 1; i <= n; i++)); do
        ns=$(hostname_of "$i")
        cat >"$HOSTS_TMP/sshd_config.$i" <<EOF
ListenAddress $(addr_of "$i")
HostKey $HOSTS_TMP/hostkey
PidFile $HOSTS_TMP/sshd.$i.pid
AuthorizedKeysFile $HOSTS_TMP/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
PrintLastLog no
MaxStartups 100
MaxSessions 100
LogLevel ERROR
EOF
        sshd_start "$i" || skip "sshd does not start in a namespace: $(tail -1 "$HOSTS_TMP/sshd.$i.log")"
    done
    # Every sshd listens before the test begins (sshd may go to the
    # background before it binds its port).
    for ((i = 1; i <= n; i++)); do
        local tries=0
        until [ -n "$(ip netns exec "$(hostname_of "$i")" ss -Hltn 'sport = :22')" ]; do
            tries=$((tries + 1))
            [ $tries -lt 100 ] || { echo "FAILED: sshd on host $i does not listen"; exit 1; }
            sleep 0.05
        done
    done
}

# sshd_start I [MOUNTS]: starts host I's sshd in a mount namespace of its
# own, after the shell commands MOUNTS (a test's own changes to what the
# host's sessions see).
#
# The hosts share this machine's files, so a login's shell startup file
# (root's ~/.bashrc, which bash reads for an ssh command) would run on every
# host against one home: pyenv's `rehash` there takes a lock file in
# ~/.pyenv and waits up to 60 s for it, and a test that ends a host's
# processes mid-rehash leaves the lock behind, so that every later ssh
# session on the machine waits 60 s (make test then timed out every ssh
# test). Separate machines have homes of their own; here each host's sessions
# see empty startup files instead.
#
# With HOSTS_APART set, each host's sessions also see a /proc and a host
# name of their own (PID and UTS namespaces), as separate machines do: a
# process of one host cannot see another host's processes, and UCX tells
# the hosts apart. sshd then runs in the foreground as the namespace's
# first process (were it to go to the background, the namespace would end
# with its first process).
sshd_start() {
    local i=$1 mounts=${2:-:} home f
    home=$(getent passwd root | cut -d: -f6)
    for f in .bashrc .bash_profile .bash_login .profile; do
        [ -f "$home/$f" ] && mounts+=" && mount --bind /dev/null '$home/$f'"
    done
    if [ -n "${HOSTS_APART:-}" ]; then
        # A simple command, not on_host_apart: a function run in the
        # background is a shell of its own, which would report its end.
        ip netns exec "$(hostname_of "$i")" "${APART[@]}" "$(hostname_of "$i")" \
            sh -c "$mounts"' && exec "$@"' "sshd-host-$i" \
            /usr/sbin/sshd -D -f "$HOSTS_TMP/sshd_config.$i" -E "$HOSTS_TMP/sshd.$i.log" &
        disown  # hosts_down ends it
        return 0
    fi
    on_host "$i" unshare --mount --propagation private sh -c "$mounts"' && exec "$@"' "sshd-host-$i" \
        /usr/sbin/sshd -f "$HOSTS_TMP/sshd_config.$i" -E "$HOSTS_TMP/sshd.$i.log"
}

# on_host_apart I command...: runs the command on host I with a /proc and a
# host name (hostname_of I) of its own (HOSTS_APART).
APART=(unshare --mount --propagation private --uts --pid --fork --mount-proc
        sh -c 'hostname "$0" && exec "$@"')
on_host_apart() {
    local i=$1
    shift
    on_host "$i" "${APART[@]}" "$(hostname_of "$i")" "$@"
}

# on_host I command...: runs the command on host I (in its namespace).
on_host() {
    local i=$1
    shift
    ip netns exec "$(hostname_of "$i")" "$@"
}

# "addr1,addr2:SLOTS,...": hosts 1..N, SLOTS each.
host_list() {
    local n=$1 slots=$2 i list=
    for ((i = 1; i <= n; i++)); do
        list+="${list:+,}$(addr_of "$i"):$slots"
    done
    echo "$list"
}

# Processes left on any host, other than ssh's own (each host's sshd and
# its sessions, and on host 1 the test's shared ssh connections); prints
# them, returns 1 if any.
# Processes in the hosts' namespaces other than sshd, ssh and zombies, one
# "HOST PID" a line.
host_pids() {
    local i ns pid comm
    for ((i = 1; i <= HOSTS_N; i++)); do
        ns=$(hostname_of "$i")
        ip netns list | grep -q "^$ns\b" || continue
        for pid in $(ip netns pids "$ns"); do
            comm=$(ps -o comm= -p "$pid") || continue
            # (unshare: what holds a host's namespaces open, HOSTS_APART)
            case $comm in sshd | ssh | unshare) continue ;; esac
            # A zombie has ended: a killed agent's nodes wait to be reaped
            # by init, which the check need not wait for.
            [[ $(ps -o stat= -p "$pid") == Z* ]] && continue
            echo "$i $pid"
        done
    done
}

# When dsmrun returns, every agent has ended (dsmrun waits for its ssh,
# which ends with the agent) and every agent has reaped its nodes; but the
# session's shell on the host may still be on its way out (ssh's channel
# closes with the command's output, before sshd has reaped it: seen once in
# ten loaded runs). So a process counts as left behind only when it is
# still there 5 s later.
leftovers() {
    local t host pid args left=0
    for ((t = 0; t < 50; t++)); do
        [ -z "$(host_pids)" ] && return 0
        sleep 0.1
    done
    while read -r host pid; do
        args=$(ps -o pid=,args= -p "$pid") || continue
        echo "left on host $host: $args"
        left=1
    done < <(host_pids)
    return $left
}
no_leftovers() { leftovers; }

# The verdict on a job one of whose nodes a hog starved for longer than
# DSM_PEER_TIMEOUT (tests/mp/test_net_starved_peer): it ends well and no
# node took the starved one for silent. OUT STATUS; the caller's fail().
starved_job_verdict() {
    grep -q "starved peer: skipped" <<<"$1" && skip "$(grep "starved peer: skipped" <<<"$1")"
    [ "$2" -eq 0 ] || fail "the job exited $2"
    grep -q "starved peer: ok" <<<"$1" || fail "no 'starved peer: ok'"
    grep -q "silent for" <<<"$1" && fail "a starved node was taken for a silent one"
}
