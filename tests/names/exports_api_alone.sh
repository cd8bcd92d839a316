#!/bin/sh
# exports_api_alone.sh LIBDSM.so LIBDSM.a — every global either library
# defines is a name of dsm's API (the public header's dsm_, the OpenMP
# API, LLVM's __kmpc_ interface, OMPT's ompt_start_tool, the atomics'
# __tsan_, the reserved __dsm_, _end, which every shared object
# exports, and the five pthread inits over the C library's, which refuse a
# process-shared object in shared memory, src/sync/pshared.c, and the C
# library's calls that take pointers, which reach shared memory through
# private copies, and those on descriptors and streams that another node
# may have opened, src/mem/kernel_*.c — the static library has neither):
# none of the layers' internal prefixes (mem_, coh_, ipc_, net_, sync_,
# omp_team_...) nor a bare internal name (mem, coh, ipc).
set -u
so=$1 a=$2
libc='read|pread|pread64|readv|preadv|preadv64|preadv2|preadv64v2|write|pwrite|pwrite64|writev|pwritev|pwritev64|pwritev2|pwritev64v2|recvfrom|recv|sendto|send|sendmsg|recvmsg|accept|accept4|__read_chk|__pread_chk|__pread64_chk|__recv_chk|__recvfrom_chk|stat|lstat|fstat|fstatat|stat64|lstat64|fstat64|fstatat64|statx|__xstat|__lxstat|__fxstat|__fxstatat|__xstat64|__lxstat64|__fxstat64|__fxstatat64|getdents64|readlinkat|readlink|getcwd|__readlink_chk|__getcwd_chk|openat|open|open64|openat64|creat|creat64|__open_2|__open64_2|__openat_2|fopen|fopen64|freopen|freopen64|opendir|access|faccessat|mkdir|rmdir|unlink|remove|rename|truncate|pipe|pipe2|socketpair|poll|ppoll|select|pselect|epoll_wait|nanosleep|clock_nanosleep|clock_gettime|gettimeofday|getsockopt|setsockopt|getsockname|getpeername|uname|getrusage|getrlimit|getrlimit64|sysinfo|times|statfs|fstatfs|statfs64|fstatfs64|getrandom|getentropy|fread|fread_unlocked|fwrite|fwrite_unlocked|fputs|puts|__fread_chk|__fread_unlocked_chk|setvbuf|setbuffer|setbuf|ioctl|fcntl|fcntl64|getdelim|__getdelim|getline|__poll_chk|__ppoll_chk|__readlinkat_chk|fprintf|vfprintf|__fprintf_chk|__vfprintf_chk|fputc|putc|fflush|fclose|fdopen|dprintf|vdprintf|__dprintf_chk|__vdprintf_chk|close|dup|socket|fgets|__fgets_chk|fgetc|getc|fileno|fseek|ftell|rewind|flockfile|ftrylockfile|funlockfile'
api="^(_end\$|(${libc})\$|ompt_start_tool$|pthread_(mutex|cond|barrier|rwlock)_init$|sem_init$|dsm_|__dsm_|__kmpc_|__tsan_|ompc_|kmp_(set|get)_|kmp_(malloc|calloc|realloc|free|aligned_malloc)|omp_(get|set|init|destroy|test|unset|in|is|pause|fulfill|display|capture|target|alloc|aligned|calloc|realloc|free|control_tool)_?)"
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
