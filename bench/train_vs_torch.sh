#!/bin/sh
# bench/train_vs_torch.sh - dtrain-train against PyTorch (Debian's python3-torch, OpenBLAS) on the
# same models, batch 128, Adam, the same thread count, both pinned to the same cores, run
# alternately in one command; each side's best of three. Both sides leave out the first 3 steps
# (allocation, oneDNN's JIT compilation): PyTorch runs them untimed, dtrain's rate is computed
# from its cumulative Step lines (step k ends at k x batch / rate_k seconds). PEAK (GFLOP/s, from
# bench/sgemm_peak) adds dtrain's share of it. Usage: bench/train_vs_torch.sh BINDIR [THREADS] [MODELS...]
set -eu
bin=$1
threads=${2:-1}
shift $(( $# > 1 ? 2 : 1 ))
models=${*:-mlp lenet cnn resnet18}
cores=$(seq -s, 0 $((threads - 1)))
batch=128
here=$(dirname "$0")
peak=${PEAK:-}

warmup=3

steps_for() {   # a few seconds of timed work per measurement on one core
    case $1 in mlp) echo 600 ;; lenet) echo 300 ;; cnn) echo 60 ;; *) echo 6 ;; esac
}

ours() {   # prints "SAMPLES_PER_SEC GFLOPS" of the steps after the warm-up
    taskset -c "$cores" "$bin/dtrain-train" --model "$1" --dataset synthetic --batch-size $batch --threads "$threads" \
        --epochs 1000 --max-steps $(($2 + warmup)) --log-every 1 --eval-every 0 --quiet 2>&1 |
        awk -v b=$batch -v w=$warmup -v n=$(($2 + warmup)) '
            /^Step[0-9]+: / { k = substr($1, 5) + 0; t[k] = k * b / $2 }
            / GFLOP\/s/ { for (i = 1; i <= NF; i++) if ($i == "GFLOP/s,") g = $(i - 1);
                          for (i = 1; i <= NF; i++) if ($i == "samples/s") r = $(i - 1) }
            END { s = (n - w) * b / (t[n] - t[w]); printf "%.2f %.1f\n", s, g / r * s }'
}

theirs() {
    taskset -c "$cores" /usr/bin/python3 "$here/torch_peer.py" "$1" $batch "$threads" "$2" | awk '{print $2}'
}

max() { echo "$1 $2" | awk '{print ($1 > $2) ? $1 : $2}'; }

version=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)
echo "| model | dtrain-train samples/s | PyTorch $version samples/s | ratio | dtrain GFLOP/s |${peak:+ of SGEMM peak |}"
echo "|---|---|---|---|---|${peak:+---|}"
for model in $models; do
    steps=$(steps_for "$model")
    best_ours=0 best_theirs=0 best_gflops=0
    for _ in 1 2 3; do
        result=$(ours "$model" "$steps")
        best_ours=$(max "${result% *}" "$best_ours")
        best_gflops=$(max "${result#* }" "$best_gflops")
        best_theirs=$(max "$(theirs "$model" "$steps")" "$best_theirs")
    done
    ratio=$(echo "$best_ours $best_theirs" | awk '{printf "%.2fx", $1 / $2}')
    share=${peak:+$(echo "$best_gflops $peak" | awk '{printf " %.0f%% |", 100 * $1 / $2}')}
    echo "| $model | $best_ours | $best_theirs | $ratio | $best_gflops |$share"
done
