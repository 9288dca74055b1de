#!/bin/sh
# bench/dtrain_rate.sh - one dtrain-train measurement: prints "SAMPLES_PER_SEC GFLOPS" of the steps
# after the first WARMUP (allocation, oneDNN's JIT compilation), from the cumulative Step lines (step
# k ends at k x batch / rate_k seconds). Synthetic data (DATASET, default synthetic), Adam, no
# evaluation, pinned to the first THREADS cores. Usage: bench/dtrain_rate.sh BINDIR MODEL STEPS THREADS [BATCH] [WARMUP]
set -eu
bin=$1 model=$2 steps=$3 threads=$4 batch=${5:-128} warmup=${6:-3}
cores=$(seq -s, 0 $((threads - 1)))
taskset -c "$cores" "$bin/dtrain-train" --model "$model" --dataset "${DATASET:-synthetic}" --batch-size "$batch" --threads "$threads" \
    --epochs 1000 --max-steps $((steps + warmup)) --log-every 1 --eval-every 0 --quiet 2>&1 |
    awk -v b="$batch" -v w="$warmup" -v n=$((steps + warmup)) '
        /^Step[0-9]+: / { k = substr($1, 5) + 0; t[k] = k * b / $2 }
        / GFLOP\/s/ { for (i = 1; i <= NF; i++) if ($i == "GFLOP/s,") g = $(i - 1);
                      for (i = 1; i <= NF; i++) if ($i == "samples/s") r = $(i - 1) }
        END { s = (n - w) * b / (t[n] - t[w]); printf "%.2f %.1f\n", s, g / r * s }'
