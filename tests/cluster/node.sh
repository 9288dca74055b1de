#!/bin/sh
# tests/cluster/node.sh NODE lose|back - a node of the test cluster lost as a machine is lost, and
# brought back. lose: every process of the node (its slurmd, the steps and ranks it runs) gets
# SIGKILL at once; Slurm learns of it when the node stops answering (SlurmdTimeout). back: its
# slurmd started again, the node returned to service, and waited for until idle (30 s at most).
# Needs root; the cluster is the one cluster.conf.sh names (DTRAIN_CLUSTER_ID).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.conf.sh"
. "$here/start_in.sh"
node=${1:?usage: node.sh NODE lose|back} what=${2:?usage: node.sh NODE lose|back}
case " $DTC_NODES " in *" $node "*) ;; *) echo "node.sh: $node is not a node of the test cluster ($DTC_NODES)" >&2; exit 2 ;; esac
export SLURM_CONF="$DTC_DIR/etc/slurm.conf"
case $what in
lose)
    # shellcheck disable=SC2046  # a list of pids
    kill -KILL $(ip netns pids "$DTC_PREFIX-$node") 2>/dev/null || true ;;
back)
    start_in "$node" "$node" slurmd -f "$DTC_DIR/etc/slurm.conf" -N "$node"
    "$DTC_DIR/bin/scontrol" update nodename="$node" state=resume 2>/dev/null || true
    n=0
    until [ "$("$DTC_DIR/bin/sinfo" -h -n "$node" -t idle -o %D 2>/dev/null | head -n 1)" = 1 ]; do
        n=$((n + 1)); [ $n -lt 300 ] || { echo "node.sh: $node not idle in 30 s" >&2; exit 1; }
        sleep 0.1
    done ;;
*) echo "node.sh: say lose or back, not \"$what\"" >&2; exit 2 ;;
esac
