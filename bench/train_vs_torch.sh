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
    sh "$here/dtrain_rate.sh" "$bin" "$1" "$2" "$threads" $batch $warmup
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
