#!/bin/sh
# exports_api_alone.sh LIBDSM.so LIBDSM.a — every global either library
# defines is a name of dsm's API (the public header's dsm_, the OpenMP
# API, LLVM's __kmpc_ interface, OMPT's ompt_start_tool, the atomics'
# __tsan_, the reserved __dsm_, _end, which every shared object
# exports, and the five pthread inits over the C library's, which refuse a
# process-shared object in shared memory, src/sync/pshared.c):
# none of the layers' internal prefixes (mem_, coh_, ipc_, net_, sync_,
# omp_team_...) nor a bare internal name (mem, coh, ipc).
set -u
so=$1 a=$2
api='^(_end$|ompt_start_tool$|pthread_(mutex|cond|barrier|rwlock)_init$|sem_init$|dsm_|__dsm_|__kmpc_|__tsan_|ompc_|kmp_(set|get)_|kmp_(malloc|calloc|realloc|free|aligned_malloc)|omp_(get|set|init|destroy|test|unset|in|is|pause|fulfill|display|capture|target|alloc|aligned|calloc|realloc|free|control_tool)_?)'
fail=0
for names in "$(nm -D --defined-only "$so" | awk 'NF == 3 {print $3}')" \
             "$(nm -g --defined-only "$a" | awk 'NF == 3 {print $3}')"; do
    bad=$(printf '%s\n' "$names" | grep -Ev "$api" | grep -v '^$')
    if [ -n "$bad" ]; then
        echo "exported but not of the API:"; printf '  %s\n' $bad; fail=1
    fi
done
[ "$fail" = 0 ] && echo "$(basename "$so") exports $(nm -D --defined-only "$so" | wc -l) names, all of its API (so does $(basename "$a"))"
exit "$fail"
