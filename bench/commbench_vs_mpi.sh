#!/bin/sh
# bench/commbench_vs_mpi.sh - dtrain's transport against raw MPI_Allreduce, the same sizes in one
# run: dtrain-commbench with and without --raw, alternating, each side's best busbw of three, at
# RANKS ranks (2) under mpirun (oversubscribed on a small machine). The goal: the transport's
# allreduce at >= 0.95 of raw MPI's busbw from 4 MB up. Usage: bench/commbench_vs_mpi.sh BINDIR [RANKS]
set -eu
bin=$1
ranks=${2:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader

run() {   # run [--raw]: "BYTES BUSBW" per size from 4M to 64M
    mpirun --oversubscribe -np "$ranks" "$bin/dtrain" --gpus-per-node 0 -- "$bin/dtrain-commbench" --min-bytes 4M \
        --max-bytes 64M --iters 10 --warmup 3 "$@" | awk '!/^#/ { print $1, $6 }'
}

best() {   # best FILE...: per size, the largest busbw of the files
    cat "$@" | awk '{ if ($2 > b[$1]) b[$1] = $2 } END { for (s in b) print s, b[s] }' | sort -n
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in 1 2 3; do
    run > "$tmp/ours.$k"
    run --raw > "$tmp/raw.$k"
done
best "$tmp"/ours.* > "$tmp/ours"
best "$tmp"/raw.* > "$tmp/raw"
echo "| bytes | dtrain transport busbw (GB/s) | raw MPI_Allreduce busbw (GB/s) | ratio |"
echo "|---|---|---|---|"
join "$tmp/ours" "$tmp/raw" | awk '{ printf "| %s | %.3f | %.3f | %.2f |\n", $1, $2, $3, $2 / $3 }'
