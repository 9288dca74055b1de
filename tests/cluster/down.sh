#!/bin/sh
# tests/cluster/down.sh - stop the test cluster up.sh started and remove what it made. Kills only
# its own processes: the daemons by their pid files (munged also by its private socket path), then
# whatever still runs inside its namespaces (job steps). Safe to run twice, or after a failed up.sh.
#   DTRAIN_CLUSTER_KEEP=1  keep DTRAIN_CLUSTER_DIR (logs, jobcomp.txt) for a post-mortem
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.conf.sh"
[ "$(id -u)" = 0 ] || { echo "cluster down: needs root" >&2; exit 1; }

if [ -x "$DTC_DIR/bin/scancel" ] && [ -e "$DTC_DIR/run/up" ]; then
    timeout 5 "$DTC_DIR/bin/scancel" --quiet --user=root 2>/dev/null
fi

pid_of() { [ -f "$1" ] && cat "$1" 2>/dev/null; }
alive() { [ -n "$1" ] && [ -d "/proc/$1" ]; }
pids=""
for f in "$DTC_DIR"/run/slurmctld.pid "$DTC_DIR"/run/slurmd-*.pid "$DTC_DIR"/munge/munged.pid; do
    p=$(pid_of "$f") && alive "$p" && pids="$pids $p"
done
# a munged whose pid file is gone would delete the next one's socket when it exits
for p in $(pgrep -f -- "--socket=$DTC_DIR/munge/munge.socket.2" 2>/dev/null); do pids="$pids $p"; done
for ns in ctl $DTC_NODES; do
    for p in $(ip netns pids "$DTC_PREFIX-$ns" 2>/dev/null); do pids="$pids $p"; done
done
if [ -n "$pids" ]; then
    # shellcheck disable=SC2086  # a list of pids
    kill -TERM $pids 2>/dev/null
    for _ in $(seq 50); do   # up to 5 s, then SIGKILL
        left=""
        for p in $pids; do alive "$p" && left="$left $p"; done
        [ -z "$left" ] && break
        sleep 0.1
    done
    # shellcheck disable=SC2086
    [ -n "$left" ] && kill -KILL $left 2>/dev/null
fi

for n in $DTC_NODES; do "$here/slow_node.sh" "$n" off 2>/dev/null || true; done   # its CPU shares, if any
for ns in ctl $DTC_NODES; do
    ip netns del "$DTC_PREFIX-$ns" 2>/dev/null
    rm -rf "/etc/netns/${DTC_PREFIX:?}-$ns"
done
[ -e "$DTC_DIR/run/route-ours" ] && ip route del unreachable "$DTC_NET.0/24" 2>/dev/null
rm -f "$DTC_DIR/run/up" "$DTC_DIR/run/route-ours"
if [ "${DTRAIN_CLUSTER_KEEP:-0}" != 1 ]; then rm -rf "${DTC_DIR:?}"; fi
exit 0
