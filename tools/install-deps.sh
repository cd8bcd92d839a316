#!/usr/bin/env bash
# Installs the system packages the build and tests need, when they are missing.
set -euo pipefail
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc    >/dev/null 2>&1 || need+=(gcc)
command -v make  >/dev/null 2>&1 || need+=(make)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v clang >/dev/null 2>&1 || need+=(clang)  # the fuzz targets (libFuzzer)
[ ${#need[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${need[*]}"
sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
