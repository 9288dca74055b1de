#!/bin/sh
# tests/cluster/link.sh RATE|off - shape the test cluster's leaf<->spine links with tc tbf (RATE as
# tc writes it: 1gbit, 10gbit, 500mbit), both directions, or remove the shaping. Traffic between
# gn01 and gn02 (one leaf) stays unshaped; anything crossing leaf1<->leaf2 gets RATE: the reference experiments'
# slow inter-node link on one machine. netem is not in this kernel: bandwidth only, no delay.
# tests/cluster/link.sh node NODE RATE|off - shape one node's own link instead (its veth, both
# directions): a node slower than the others, for the pre-flight check's test.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.conf.sh"

# tbf's bucket: a millisecond of traffic at the rate, at least 64 KB (a TSO segment must fit in it).
# It was 256 KB: a bucket refilled while a job computes let each step's first transfer through
# faster than the link's rate (at 250 Mbit/s, 256 KB is 8 ms of traffic), which a NIC never does.
burst_of() {
    tc_rate_bits "$1" | awk '{ b = $1 / 8 / 1000; if (b < 65536) b = 65536; printf "%d", b }'
}
node=""   # set: one node's own link, not the leaves'
if [ "${1:-}" = node ]; then
    node=${2:?usage: link.sh node NODE RATE|off} rate=${3:?usage: link.sh node NODE RATE|off}
else
    rate=${1:?usage: link.sh RATE|off}
fi
[ "$rate" = off ] || tc_rate_bits "$rate" >/dev/null ||
    { echo "link.sh: RATE \"$rate\": a rate as tc writes it (5gbit, 500mbit) or off" >&2; exit 2; }

shape() {   # shape NAMESPACE DEVICE: its shaping removed, then RATE's put on unless off
    ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null || true
    [ "$rate" = off ] ||
        ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst "$(burst_of "$rate")" latency 50ms
}
if [ -n "$node" ]; then
    shape "$DTC_PREFIX-ctl" "v-$node"
    shape "$DTC_PREFIX-$node" eth0
else
    for dev in l1-up l1-dn l2-up l2-dn; do shape "$DTC_PREFIX-ctl" "$dev"; done
fi
