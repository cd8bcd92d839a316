#!/bin/sh
# local_rsh.sh — stands in for ssh in tests that need no second host:
# `local_rsh.sh HOST COMMAND` runs COMMAND here through the shell, with the
# SSH_CONNECTION that sshd would set (this host reached on the loopback).
# A HOST named "fail-*" fails as ssh does when it cannot connect; one named
# "slow-*" starts its command a second late, as a distant or loaded host
# answers after the others.
host=$1
shift
case $host in
fail-*) echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255 ;;
slow-*) sleep 1 ;;
esac
SSH_CONNECTION="127.0.0.1 50000 127.0.0.1 22" exec sh -c "$*"
