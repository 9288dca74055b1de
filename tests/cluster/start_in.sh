# shellcheck shell=sh
# tests/cluster/start_in.sh - sourced by up.sh and node.sh (after cluster.conf.sh): start_in NS NAME
# COMMAND...: a daemon in the namespace NS with its own host name NAME and /etc/hosts: nsenter keeps
# /sys (and so the cgroup mounts slurmd insists on; ip netns exec would remount it), unshare gives
# UTS and mounts.
start_in() {
    ns=$1 name=$2; shift 2
    # shellcheck disable=SC2016  # the inner script expands its own arguments
    nsenter --net="/run/netns/$DTC_PREFIX-$ns" -- unshare --uts --mount --propagation private -- sh -c '
        mount --bind "/etc/netns/$0/hosts" /etc/hosts && mount --bind "/etc/netns/$0/resolv.conf" /etc/resolv.conf &&
        hostname "$1" && shift && exec "$@"' "$DTC_PREFIX-$ns" "$name" "$@"
}
