#!/bin/bash
# bad_env_walk.sh — every variable `dsmrun --help-env` lists, set to values
# no node could use (empty, blank, blanks around a good value, negative,
# too large, garbage, a wrong unit), refused by dsmrun before any node
# starts: status 2, one line on stderr naming the variable, nothing on
# stdout, and no node ran (each node of the program below would leave a
# file). The values come from each variable's type and range as --help-env
# prints them, so a variable added to the table (src/base/config.c) is
# walked without a change here; a type this script cannot make bad values
# for fails the test.
#
#   bad_env_walk.sh DSMRUN
set -u
dsmrun=$1
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/dir" && : >"$tmp/file" || exit 2

failures=0 tried=0 names=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# try NAME VALUE: dsmrun must refuse it, in one line naming NAME, before a node starts.
try() {
    local name=$1 value=$2
    tried=$((tried + 1))
    rm -f "$tmp"/started.*
    env "$name=$value" "$dsmrun" -n 2 /bin/sh -c ': >"$0.$DSM_RANK"' "$tmp/started" \
        </dev/null >"$tmp/out" 2>"$tmp/err"
    local status=$? shown
    shown=$(printf '%q' "$value" | cut -c1-60)
    [ "$status" -eq 2 ] || fail "$name=$shown: exit status $status, expected 2: $(head -c 300 "$tmp/err")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name=$shown: $(wc -l <"$tmp/err") lines on stderr, expected 1: $(head -c 300 "$tmp/err")"
    grep -q "^dsmrun: $name" "$tmp/err" || fail "$name=$shown: the line does not name it: $(head -c 300 "$tmp/err")"
    [ ! -s "$tmp/out" ] || fail "$name=$shown: printed on stdout: $(head -c 300 "$tmp/out")"
    ! compgen -G "$tmp/started.*" >/dev/null || fail "$name=$shown: a node started"
}

# A size or an address as --help-env prints it ("64K", "0x400000000000"), in bytes.
bytes() {
    local s=$1 m=1
    case $s in
    0x*) echo $((s)); return ;;
    *K) m=$((1 << 10)) ;; *M) m=$((1 << 20)) ;; *G) m=$((1 << 30)) ;; *T) m=$((1 << 40)) ;;
    esac
    [ "$m" -gt 1 ] && s=${s%?}
    echo $((s * m))
}

long_path=/$(printf 'a%.0s' {1..5000})
help=$("$dsmrun" --help-env=all) || { echo "FAIL: dsmrun --help-env failed"; exit 1; }
while read -r name type rest; do
    names=$((names + 1))
    def=${rest#default }
    def=${def%%,*}
    range=$(sed -n 's/.*, range \([^ ,]*\) \.\. \([^ ,]*\).*/\1 \2/p' <<<"$rest")
    lo=${range% *} hi=${range#* }
    good=$def
    [ "$good" = "(unset)" ] && good=/tmp
    # One rule for every type: empty, blank, blanks around a good value.
    for v in "" " " $'\t' " $good" "$good "; do try "$name" "$v"; done
    case $type in
    int)
        low=$((lo - 1)); [ "$lo" -gt 0 ] && low=-1
        for v in "$low" "$((hi + 1))" 99999999999999999999999 garbage "${hi}s" "${lo}K" 1.5; do
            try "$name" "$v"
        done ;;
    number)
        for v in "$(awk -v l="$lo" 'BEGIN { print (l > 0 ? -1 : l - 1) }')" \
                 "$(awk -v h="$hi" 'BEGIN { print h * 10 + 1 }')" 1e400 nan inf garbage "${good}s" \
                 "${good}%"; do
            try "$name" "$v"
        done ;;
    bool)
        for v in 2 -1 10 99999999999999999999 garbage "${good}s" maybe; do try "$name" "$v"; done ;;
    choice)
        choices=$(sed -n 's/.*one of \([^ ]*\).*/\1/p' <<<"$rest")
        first=${choices%%|*}
        for v in garbage -1 99999999999999999999 "${first^^}" "${first}x" "$choices" "|"; do
            try "$name" "$v"
        done ;;
    size)
        # above the most: one more of the unit the most is written in
        # (--help-env rounds the region's most down to a whole unit)
        unit=1; case $hi in *[KMGT]) unit=$(bytes "1${hi: -1}") ;; esac
        for v in -1 "$(( $(bytes "$hi") + unit ))" "$(( $(bytes "$lo") - 1 ))" 99999999999999999999 \
                 garbage "${good}B" "${good}KB" 1P 0x1000; do
            try "$name" "$v"
        done ;;
    addr)
        for v in -1 "$(printf '%#x' $(( $(bytes "$hi") + 0x10000 )))" "$(printf '%#x' $(( $(bytes "$lo") - 0x10000 )))" \
                 ffffffffffffffffffffffff garbage 0x "${good}K" "${good}1"; do
            try "$name" "$v"
        done ;;
    path|text)
        # A missing directory and a name longer than a path may be: no
        # directory, file, schedule or address any of these can use.
        for v in /nonexistent/dir/x "$long_path"; do try "$name" "$v"; done ;;
    *)
        fail "$name: type '$type' has no bad values in this script" ;;
    esac
done < <(grep -E '^  DSM_[A-Z0-9_]+ ' <<<"$help")

# The values the issue found passing (issue 61): each path's own meaning.
try DSM_HOME_DIR /nonexistent
try DSM_HOME_DIR "$tmp/file"
try DSM_OMP_STATIC garbage
try DSM_OMP_STATIC dynamic
try DSM_NET_BIND garbage
try DSM_NET_BIND 300.1.2.3
try DSM_TRACE "$tmp/file/t"
try DSM_PROFILE /proc/x
try DSM_STATS_JSON "$tmp/dir"

[ "$names" -ge 40 ] || fail "only $names variables read from --help-env"
echo "$names variables, $tried bad values, $failures failures"
[ "$failures" -eq 0 ]
