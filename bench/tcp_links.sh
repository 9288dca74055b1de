#!/bin/sh
# bench/tcp_links.sh BINDIR [RATE] - dtrain's two TCP connections a pair of ranks against Open MPI's
# default one, in the same run: on the test cluster with the leaves' link shaped to RATE (tc's form,
# 1250mbit: the studies' 5gbit dilated 4), dtrain-commbench's 2-rank allreduce across it (gn01 and
# gn03; each of its steps a message both ways at once) from 1 MiB to 64 MiB, OMPI_MCA_btl_tcp_links
# 1 and 2 alternating, ROUNDS (3) rounds. Prints per size each side's mean busbw over the rounds,
# its worst round, and the ratio of the means; the shaped rate is the ceiling. Why it matters:
# trainer/comm/comm_mpi.c. Needs root (it starts the test cluster).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin=$(cd "${1:?usage: tcp_links.sh BINDIR [RATE]}" && pwd)
rate=${2:-1250mbit}
cluster=$top/tests/cluster
export DTRAIN_CLUSTER_ID="${DTRAIN_CLUSTER_ID:-dtc$$}"
# shellcheck source=../tests/cluster/cluster.conf.sh
. "$cluster/cluster.conf.sh"
[ "$(id -u)" = 0 ] || { echo "tcp_links: needs root (it starts the test cluster)" >&2; exit 1; }
bits=$(tc_rate_bits "$rate") || { echo "tcp_links: RATE \"$rate\": a rate as tc writes it (5gbit, 500mbit)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"; "$cluster/down.sh"' EXIT
trap 'exit 130' INT TERM
"$cluster/down.sh"
"$cluster/up.sh" >/dev/null
"$cluster/link.sh" "$rate"
export SLURM_CONF="$DTC_DIR/etc/slurm.conf" PATH="$DTC_DIR/bin:$PATH"

for round in $(seq "${ROUNDS:-3}"); do
    for links in 1 2; do   # each job bounded: eight connections a pair hung a job here once
        OMPI_MCA_btl_tcp_links=$links sbatch --wait -N 2 --ntasks-per-node=1 --exclusive -w 'gn[01,03]' -t 5 \
            -o "$out/links$links.$round.out" -J tcp-links --wrap "srun --mpi=pmix $bin/dtrain --gpus-per-node 0 \
--no-bind -- $bin/dtrain-commbench --min-bytes 1M --max-bytes 64M --iters 4 --warmup 1" >/dev/null
        awk '!/^#/ && NF >= 6 { print $1, $6 }' "$out/links$links.$round.out" >> "$out/links$links"
    done
done

echo "2-rank allreduce across a link shaped to $rate ($(echo "$bits" | awk '{ printf "%.3f", $1 / 8e9 }') GB/s), busbw in GB/s: mean of ${ROUNDS:-3} rounds (worst)"
echo
echo "| bytes | one connection a pair (Open MPI's default) | two (dtrain's) | two / one |"
echo "|---|---|---|---|"
for links in 1 2; do
    awk '{ n[$1]++; s[$1] += $2; if (!($1 in w) || $2 < w[$1]) w[$1] = $2 }
         END { for (k in n) printf "%s %.3f %.3f\n", k, s[k] / n[k], w[k] }' "$out/links$links" | sort -n > "$out/sum$links"
done
join "$out/sum1" "$out/sum2" | awk '{ printf "| %s | %.3f (%.3f) | %.3f (%.3f) | %.2f |\n", $1, $2, $3, $4, $5, $4 / $2 }'
