#!/bin/sh
# tests/cluster/demo.sh BINDIR [OUTDIR] - make cluster-demo: the reference experiments' "bandwidth bottleneck" on one
# machine. Brings the test cluster up, runs the same small sweep (MLP, 1 epoch of Fashion-MNIST,
# 1/2/4 nodes x 1 rank, 2 repeats) with the leaf<->spine links shaped to 10 Gbit/s and then to
# 1 Gbit/s, prints both tables and draws both as one plot (a line per link speed), brings the
# cluster down. The node order gn01,gn03,... puts a 2-node run on both leaves: its traffic
# crosses the shaped links.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bin=$(cd "${1:-$top/build/bin}" && pwd)
out=${2:-$top/build/cluster-demo}
# a cluster of its own (namespaces and directory named by the id): another suite may run beside
export DTRAIN_CLUSTER_ID="${DTRAIN_CLUSTER_ID:-dtc$$}"
. "$here/cluster.conf.sh"
[ "$(id -u)" = 0 ] || { echo "cluster-demo: needs root (it starts a Slurm cluster)" >&2; exit 1; }

rm -rf "$out" && mkdir -p "$out"
"$here/down.sh"
trap '"$here/down.sh"' EXIT
"$here/up.sh" >/dev/null
export SLURM_CONF="$DTC_DIR/etc/slurm.conf" PATH="$DTC_DIR/bin:$PATH" DTRAIN_BIN="$bin" DTRAIN_THREADS=1
# The test cluster's "nodes" share this machine's cores: the template's pre-flight check measures
# their links one pair at a time (side by side it would measure the scheduler), briefly, and names
# only a node far below the others (jobs running at once on the shared cores make some noise).
export DTRAIN_CHECK_OPTIONS="${DTRAIN_CHECK_OPTIONS:---one-at-a-time --bytes 1M --iters 2 --threshold 0.9}"
for rate in 10gbit 1gbit; do
    "$here/link.sh" "$rate"
    echo "== links between the leaves at $rate"
    # the table on stdout; of stderr only the sweep's line a job as it starts and ends
    { "$top/sbatch/sweep" --nodes 1,2,4 --ranks-per-node 1 --repeats 2 --nodelist 'gn[01,03,02,04]' --tag "$rate" \
        --output "$out/$rate" --wait -- --model mlp --epochs 1 --eval-every 0 --log-every 100 -q 2>&1 1>&3 |
        { grep '^sweep: job' >&2 || true; }; } 3>&1
    echo
done
"$bin/dtrain-analyze" plot --series tag --output "$out/links" "$out/10gbit" "$out/1gbit"
echo "cluster-demo: tables in $out/*/table.md, plots $out/links-{speedup,throughput}.{png,svg}"
echo "(the nodes share this machine's cores: with more ranks than cores, a run measures the CPU more than the links)"
