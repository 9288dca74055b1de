#!/bin/sh
# bench/train_vs_torch.sh - dtrain-train against PyTorch (Debian's python3-torch, OpenBLAS) on the
# same models, batch 128, Adam, the same thread count, both pinned to the same cores, run
# alternately in one command. Usage: bench/train_vs_torch.sh BINDIR [THREADS] [MODELS...]
set -eu
bin=$1
threads=${2:-1}
shift $(( $# > 1 ? 2 : 1 ))
models=${*:-mlp lenet cnn resnet18}
cores=$(seq -s, 0 $((threads - 1)))
batch=128
here=$(dirname "$0")

steps_for() {   # about 3-10 s of work per measurement on one core
    case $1 in mlp) echo 600 ;; lenet) echo 300 ;; cnn) echo 60 ;; *) echo 4 ;; esac
}

ours() {
    taskset -c "$cores" "$bin/dtrain-train" --model "$1" --dataset synthetic --batch-size $batch --threads "$threads" \
        --epochs 1000 --max-steps "$2" --log-every "$2" --quiet 2>/dev/null | sed -n 's/^Step[0-9]*: \([0-9.]*\) data\/sec/\1/p'
}

theirs() {
    taskset -c "$cores" /usr/bin/python3 "$here/torch_peer.py" "$1" $batch "$threads" "$2" | awk '{print $2}'
}

echo "| model | dtrain-train samples/s | PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) samples/s | ratio |"
echo "|---|---|---|---|"
for model in $models; do
    steps=$(steps_for "$model")
    best_ours=0 best_theirs=0
    for _ in 1 2 3; do   # alternate, keep each side's best of three
        o=$(ours "$model" "$steps")
        t=$(theirs "$model" "$steps")
        best_ours=$(echo "$o $best_ours" | awk '{print ($1 > $2) ? $1 : $2}')
        best_theirs=$(echo "$t $best_theirs" | awk '{print ($1 > $2) ? $1 : $2}')
    done
    echo "| $model | $best_ours | $best_theirs | $(echo "$best_ours $best_theirs" | awk '{printf "%.2fx", $1 / $2}') |"
done
