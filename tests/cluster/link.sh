#!/bin/sh
# tests/cluster/link.sh RATE|off - shape the test cluster's leaf<->spine links with tc tbf (RATE as
# tc writes it: 1gbit, 10gbit, 500mbit), both directions, or remove the shaping. Traffic between
# gn01 and gn02 (one leaf) stays unshaped; anything crossing leaf1<->leaf2 gets RATE: the reference experiments'
# slow inter-node link on one machine. netem is not in this kernel: bandwidth only, no delay.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.conf.sh"
rate=${1:?usage: link.sh RATE|off}
for dev in l1-up l1-dn l2-up l2-dn; do
    ip netns exec "$DTC_PREFIX-ctl" tc qdisc del dev "$dev" root 2>/dev/null || true
    if [ "$rate" != off ]; then
        ip netns exec "$DTC_PREFIX-ctl" tc qdisc add dev "$dev" root tbf rate "$rate" burst 256kb latency 50ms
    fi
done
