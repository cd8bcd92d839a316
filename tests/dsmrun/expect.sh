#!/bin/bash
# expect.sh — runs a command and checks its exit status, its output and that
# it ended in time.
#
#   expect.sh [checks] -- command [args...]
#     --status N                 the exit status must be N (default 0)
#     --within S                 it must end within S seconds
#     --stdin TEXT               feed TEXT (and a newline) on stdin; default /dev/null
#     --out RE,     --err RE     some line of stdout / stderr matches RE (grep -E)
#     --no-out RE,  --no-err RE  no line matches
#     --out-all RE, --err-all RE every line matches
#     --out-lines N, --err-lines N  exactly N lines
set -u

want_status=0 within='' stdin='' checks=()
while [ $# -gt 0 ]; do
    case $1 in
    --status) want_status=$2; shift 2 ;;
    --within) within=$2; shift 2 ;;
    --stdin) stdin=$2; shift 2 ;;
    --out | --err | --no-out | --no-err | --out-all | --err-all | --out-lines | --err-lines)
        checks+=("$1" "$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "expect.sh: unknown check '$1'" >&2; exit 2 ;;
    esac
done

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
if [ -n "$stdin" ]; then printf '%s\n' "$stdin" >"$tmp/in"; else : >"$tmp/in"; fi

start=$(date +%s%N)
"$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
# The sanitizer build's runtime remarks, once a process, that it cannot
# follow dsm's stack switches (swapcontext for OpenMP tasks; main moved to
# a shared stack, where a noreturn call such as exit finds the stack
# pointer outside the stack it knows): its remarks, not the program's
# output, so the stderr checks leave them out.
grep -Ev "^==[0-9]+==WARNING: ASan (doesn't fully support makecontext/swapcontext|is ignoring requested __asan_handle_no_return)|^False positive error reports may follow$|^For details see https://github.com/google/sanitizers/issues/189$" \
    "$tmp/err" >"$tmp/err.kept"
mv "$tmp/err.kept" "$tmp/err"

failures=()
[ "$status" -eq "$want_status" ] || failures+=("exit status $status, expected $want_status")
if [ -n "$within" ] && [ "$elapsed_ms" -gt $((within * 1000)) ]; then
    failures+=("took ${elapsed_ms} ms, expected at most ${within} s")
fi
for ((i = 0; i < ${#checks[@]}; i += 2)); do
    check=${checks[i]} arg=${checks[i + 1]}
    case $check in *out*) file=$tmp/out name=stdout ;; *) file=$tmp/err name=stderr ;; esac
    case $check in
    --out | --err) grep -Eq -- "$arg" "$file" || failures+=("no $name line matches '$arg'") ;;
    --no-out | --no-err) grep -Eq -- "$arg" "$file" && failures+=("a $name line matches '$arg'") ;;
    --out-all | --err-all) grep -Evq -- "$arg" "$file" && failures+=("a $name line does not match '$arg'") ;;
    --out-lines | --err-lines)
        lines=$(wc -l <"$file")
        [ "$lines" -eq "$arg" ] || failures+=("$name has $lines lines, expected $arg") ;;
    esac
done

if [ ${#failures[@]} -eq 0 ]; then
    echo "ok: $* (status $status, ${elapsed_ms} ms)"
    exit 0
fi
echo "FAILED: $*"
printf '  %s\n' "${failures[@]}"
echo "--- stdout (lines cut at 200 characters)"; cut -c1-200 "$tmp/out"
echo "--- stderr"; cut -c1-200 "$tmp/err"
exit 1
