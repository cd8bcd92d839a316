#!/usr/bin/env bash
# Installs the system packages the build and tests need, when they are missing.
set -euo pipefail
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc    >/dev/null 2>&1 || need+=(gcc)
command -v make  >/dev/null 2>&1 || need+=(make)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v m4    >/dev/null 2>&1 || need+=(m4)     # dsmcc expands PARMACS sources
# tools/dsm-profile: program counters to source lines (addr2line: LLVM's,
# which the llvm package below brings, where there, else binutils') and
# addresses to shared globals (nm), from the programs' debug information.
{ command -v addr2line >/dev/null 2>&1 && command -v nm >/dev/null 2>&1; } || need+=(binutils)
# and a shared stack's local variables by name (gdb's `info scope`).
command -v gdb >/dev/null 2>&1 || need+=(gdb)
# OpenMP (dsmcc -fopenmp, bench/omp, tests/omp) and the fuzz targets: clang, and LLVM's libomp
# with its omp.h (the reference runs use libomp).
command -v clang >/dev/null 2>&1 || need+=(clang)
if ! command -v clang >/dev/null 2>&1 ||
   ! echo '#include <omp.h>' | clang -fopenmp -x c -E - >/dev/null 2>&1; then
    need+=(libomp-dev)
fi
# dsmcc compiles through LLVM IR (atomics made coherent: LLVM's opt and llc
# of clang's own version, beside it).
if ! command -v clang >/dev/null 2>&1 ||
   ! [ -x "$(dirname "$(readlink -f "$(command -v clang)")")/opt" ] ||
   ! [ -x "$(dirname "$(readlink -f "$(command -v clang)")")/llc" ]; then
    need+=(llvm)
fi
# Fortran OpenMP programs (dsmfort, tests/langs): LLVM's flang, whose OpenMP
# is the same __kmpc_* interface as clang's (gfortran's is libgomp's).
command -v flang-new-19 >/dev/null 2>&1 || command -v flang-19 >/dev/null 2>&1 ||
    command -v flang-new >/dev/null 2>&1 || need+=(flang-19)
# Fortran's atomics go through opt and llc of flang's own LLVM (19).
command -v opt-19 >/dev/null 2>&1 && command -v llc-19 >/dev/null 2>&1 || need+=(llvm-19)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
# bench/scale-bundle points its programs at the libraries beside them.
command -v patchelf >/dev/null 2>&1 || need+=(patchelf)
# PMIx's header, for startup under srun and mpirun without dsmrun
# (libpmix itself is loaded at run time, only then).
pkg-config --exists pmix 2>/dev/null || need+=(libpmix-dev)
# UCX, for DSM_NET=ucx (header and pkg-config file at build time; libucp and
# ucx_info at run time).
pkg-config --exists ucx 2>/dev/null || need+=(libucx-dev)
command -v ucx_info >/dev/null 2>&1 || need+=(ucx-utils)
# The multi-host tests: hosts are network namespaces (ip), each with an sshd;
# mpirun starts nodes through PMIx.
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v ps >/dev/null 2>&1 || need+=(procps)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
[ ${#need[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${need[*]}"
sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
$sudo apt-get update -qq
# The tests start their own sshd inside their own namespaces: the package's
# service must not start on this machine's network (policy-rc.d says no).
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee $policy >/dev/null
    $sudo chmod +x $policy
    made_policy=1
fi
status=0
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" || status=$?
[ $made_policy -eq 1 ] && $sudo rm -f $policy
exit $status
