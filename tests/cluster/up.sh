#!/bin/sh
# tests/cluster/up.sh - start a real 4-node Slurm cluster on this machine: one private munged, one
# slurmctld (netns dtc-ctl, host "slurmctl", also the login node) and one slurmd per node gn01..gn04,
# each in its own network namespace, behind leaf bridges under a spine (gn01,gn02 on leaf1; gn03,gn04
# on leaf2) as topology.conf tells Slurm. gn01-gn03 offer gpu:4 and gn04 gpu:2 (character devices with the nvidia
# major and no driver behind them: Slurm hands them out, nothing can open them).
#   DTRAIN_CLUSTER_ID   which cluster (cluster.conf.sh: namespaces ID-*, default dtc)
#   DTRAIN_CLUSTER_DIR  where it all lives (/run/dtrain-cluster[-ID])
#   DTRAIN_CLUSTER_LINK leaf<->spine rate for tc tbf (e.g. 1gbit; unset: unshaped)
# Prints the client wrappers' directory; put it first in PATH (or source env.sh). Needs root.
# Every packet stays on loopback or inside these namespaces: no NAT, no default route, no DNS
# (resolver 127.0.0.1), and the root netns gets an unreachable route for the cluster's range.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.conf.sh"

fail() { echo "cluster up: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (network namespaces, mknod, daemons)"
for c in slurmctld slurmd munged ip nsenter unshare runuser tc; do
    command -v "$c" >/dev/null || fail "$c not found (make deps installs the cluster's packages)"
done
[ -e "$DTC_DIR/run/up" ] && fail "a cluster is already up in $DTC_DIR (tests/cluster/down.sh first)"

mkdir -p "$DTC_DIR"/etc "$DTC_DIR"/state "$DTC_DIR"/log "$DTC_DIR"/run "$DTC_DIR"/dev "$DTC_DIR"/bin
for n in $DTC_NODES; do mkdir -p "$DTC_DIR/nodes/$n/tmp"; done

start_munge() {
    m=$DTC_DIR/munge
    mkdir -p "$m" && chown munge:munge "$m" && chmod 0755 "$m"   # 0755: clients must reach the socket
    [ -f "$m/munge.key" ] || { dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 2>/dev/null;
                               chown munge:munge "$m/munge.key"; chmod 0400 "$m/munge.key"; }
    runuser -u munge -- munged --socket="$m/munge.socket.2" --key-file="$m/munge.key" \
        --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" --origin=127.0.0.1
}

ns_exec() { ns=$1; shift; ip netns exec "$DTC_PREFIX-$ns" "$@"; }

make_network() {
    ip netns add "$DTC_PREFIX-ctl"
    ns_exec ctl ip link set lo up
    ns_exec ctl ip link add br0 type bridge
    ns_exec ctl ip addr add "$DTC_NET.1/24" dev br0
    ns_exec ctl ip link set br0 up
    for leaf in 1 2; do
        ns_exec ctl ip link add "br-leaf$leaf" type bridge
        ns_exec ctl ip link set "br-leaf$leaf" up
        ns_exec ctl ip link add "l$leaf-up" type veth peer name "l$leaf-dn"
        ns_exec ctl ip link set "l$leaf-up" master br0 up
        ns_exec ctl ip link set "l$leaf-dn" master "br-leaf$leaf" up
    done
    i=1
    for n in $DTC_NODES; do
        leaf=$(( (i + 1) / 2 ))
        ip netns add "$DTC_PREFIX-$n"
        ns_exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
        ns_exec "$n" ip link set lo up
        ns_exec ctl ip link add "v-$n" type veth peer name eth0 netns "$DTC_PREFIX-$n"
        ns_exec ctl ip link set "v-$n" master "br-leaf$leaf" up
        ns_exec "$n" ip addr add "$DTC_NET.$((10 + i))/24" dev eth0
        ns_exec "$n" ip link set eth0 up
        i=$((i + 1))
    done
    ns_exec ctl sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    # RPS on every veth, over all CPUs: a flow's packets then wait on one CPU's backlog (by the
    # flow's hash), in order. Without it a veth queues each packet on the backlog of the CPU that
    # sent it (or that ran tbf's timer), a flow sent from both CPUs arrives reordered, and TCP takes
    # that for loss: 3,000-5,000 fast retransmits a node in a 10 Gbit/s servers run, none with RPS
    # (docs/studies/2026-11-27-veth-reordering.md). A NIC's queue keeps a flow's order.
    cpus=$(printf '%x' $(( (1 << $(nproc)) - 1 )))
    for ns in ctl $DTC_NODES; do
        # shellcheck disable=SC2016  # $1 and $q are the inner shell's
        ns_exec "$ns" sh -c 'for q in /sys/class/net/*/queues/rx-*/rps_cpus; do echo "$1" >"$q"; done' rps "$cpus" ||
            echo "up.sh: RPS not set in $ns (the links may reorder packets)" >&2
    done
    # one guard route for every cluster on the machine: the first to add it removes it
    if ip route add unreachable "$DTC_NET.0/24" 2>/dev/null; then touch "$DTC_DIR/run/route-ours"; fi
    if [ -n "${DTRAIN_CLUSTER_LINK:-}" ]; then "$here/link.sh" "$DTRAIN_CLUSTER_LINK"; fi
}

# What each namespace resolves: the cluster's names only; any other lookup goes to 127.0.0.1.
write_names() {
    hosts="127.0.0.1 localhost
$DTC_NET.1 slurmctl"
    i=1
    for n in $DTC_NODES; do hosts="$hosts
$DTC_NET.$((10 + i)) $n"; i=$((i + 1)); done
    for ns in ctl $DTC_NODES; do
        mkdir -p "/etc/netns/$DTC_PREFIX-$ns"
        printf '%s\n' "$hosts" >"/etc/netns/$DTC_PREFIX-$ns/hosts"
        echo "nameserver 127.0.0.1" >"/etc/netns/$DTC_PREFIX-$ns/resolv.conf"
    done
}

write_configs() {
    sed -e "s#@DIR@#$DTC_DIR#g" -e "s#@NET@#$DTC_NET#g" "$here/slurm.conf.in" >"$DTC_DIR/etc/slurm.conf"
    sed -e "s#@DIR@#$DTC_DIR#g" "$here/gres.conf.in" >"$DTC_DIR/etc/gres.conf"
    cp "$here/topology.conf.in" "$DTC_DIR/etc/topology.conf"
    for g in 0 1 2 3; do
        [ -c "$DTC_DIR/dev/nvidia$g" ] || mknod -m 666 "$DTC_DIR/dev/nvidia$g" c 195 "$g"
    done
}

. "$here/start_in.sh"

write_wrappers() {
    for c in srun sbatch salloc sinfo squeue scontrol scancel sattach; do
        cat >"$DTC_DIR/bin/$c" <<WRAP
#!/bin/sh
# $c of the dtrain test cluster: from the root netns it runs on the login node (netns $DTC_PREFIX-ctl),
# inside a cluster namespace (a job's srun) as it is.
export SLURM_CONF=$DTC_DIR/etc/slurm.conf
case "\$(ip netns identify \$\$ 2>/dev/null)" in
$DTC_PREFIX-*) exec /usr/bin/$c "\$@" ;;
*) exec ip netns exec $DTC_PREFIX-ctl /usr/bin/$c "\$@" ;;
esac
WRAP
        chmod 755 "$DTC_DIR/bin/$c"
    done
}

wait_idle() {
    export SLURM_CONF="$DTC_DIR/etc/slurm.conf"
    tries=0
    while [ "$("$DTC_DIR/bin/sinfo" -h -t idle -o %D 2>/dev/null | head -n 1)" != 4 ]; do
        tries=$((tries + 1))
        [ $tries -lt 300 ] || fail "the nodes did not become idle in 30 s (logs: $DTC_DIR/log)"
        sleep 0.1
    done
}

start_munge
write_names
make_network
write_configs
write_wrappers
start_in ctl slurmctl slurmctld -f "$DTC_DIR/etc/slurm.conf"
for n in $DTC_NODES; do start_in "$n" "$n" slurmd -f "$DTC_DIR/etc/slurm.conf" -N "$n"; done
wait_idle
touch "$DTC_DIR/run/up"
echo "$DTC_DIR/bin"
