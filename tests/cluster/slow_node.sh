#!/bin/sh
# tests/cluster/slow_node.sh NODE PERCENT|off - a node of the test cluster given PERCENT of one core
# (a CPU share: the kernel's CFS quota, PERCENT ms of every 10 ms), the way a node slows down that
# shares its cores or runs throttled: the node's processes (its slurmd, so every step it starts
# too) move into a cgroup of their own, named after the cluster and the node. "off" moves them back
# and removes the cgroup (down.sh does too). cgroup v1's cpu controller (/sys/fs/cgroup/cpu) or
# cgroup v2's cpu.max; exit 3 where neither can be used (the caller skips). Needs root.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.conf.sh"
node=${1:?usage: slow_node.sh NODE PERCENT|off} share=${2:?usage: slow_node.sh NODE PERCENT|off}
name=$DTC_PREFIX-$node
if [ -f /sys/fs/cgroup/cpu/cgroup.procs ]; then
    root=/sys/fs/cgroup/cpu
elif grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    root=/sys/fs/cgroup
else
    echo "slow_node.sh: no cgroup cpu controller here (/sys/fs/cgroup/cpu, or cpu in cgroup.subtree_control)" >&2
    exit 3
fi
cg=$root/$name
if [ "$share" = off ]; then
    [ -d "$cg" ] || exit 0
    while read -r p; do echo "$p" >"$root/cgroup.procs" 2>/dev/null || true; done <"$cg/cgroup.procs"
    rmdir "$cg"
    exit 0
fi
case $share in *[!0-9]* | "" | 0) echo "slow_node.sh: PERCENT \"$share\" is not a whole number above 0" >&2; exit 2 ;; esac
mkdir -p "$cg" || exit 3
if [ "$root" = /sys/fs/cgroup/cpu ]; then
    echo 10000 >"$cg/cpu.cfs_period_us"
    echo $((share * 100)) >"$cg/cpu.cfs_quota_us"
else
    echo "$((share * 100)) 10000" >"$cg/cpu.max"
fi
for p in $(ip netns pids "$name"); do echo "$p" >"$cg/cgroup.procs" 2>/dev/null || true; done
