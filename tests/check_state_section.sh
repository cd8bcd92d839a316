#!/bin/sh
# check_state_section.sh LIBDSM.a — every mutable global of the library is
# in its dsm_state section (src/base/state.h): fork style copies the
# master's .data and .bss to the other nodes at dsm_create, and a library
# global there is overwritten with the master's value. Under mpirun, where
# the nodes' address layouts differ, ucx.c's table of libucp's functions,
# copied from the master, sent node 1 into libucp's read-only data (a
# SIGSEGV at dsm_create over DSM_NET=ucx). Lists each offender (object
# file, symbol, section) and fails. AddressSanitizer's one-definition-rule
# indicators (__odr_asan.NAME, a byte per exported global) are its own,
# not the library's state.
set -u
lib=$1
bad=$(objdump -t "$lib" | awk '
    /file format/ { obj = $1 }
    $1 ~ /^[0-9a-f]+$/ && $3 == "O" && $NF !~ /^__odr_asan/ && ($4 == ".data" || $4 == ".bss" || $4 ~ /^\.(data|bss)\./) && $4 !~ /^\.data\.rel\.ro/ { print "  " obj " " $NF " (" $4 ")" }')
if [ -n "$bad" ]; then
    echo "mutable globals of $lib outside its dsm_state section (declare them DSM_STATE, src/base/state.h):"
    echo "$bad"
    exit 1
fi
echo "every mutable global of $(basename "$lib") is DSM_STATE"
