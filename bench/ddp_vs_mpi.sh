#!/bin/sh
# bench/ddp_vs_mpi.sh - data-parallel training on 1 and 2 ranks of one thread each: dtrain-train
# under mpirun (through dtrain) against PyTorch DDP over gloo under torchrun; same models, batch
# 128 per rank, Adam; samples/s of all ranks after 3 warm-up steps, best of three, alternately.
# Usage: bench/ddp_vs_mpi.sh BINDIR [MODELS...]
set -eu
bin=$1
shift
models=${*:-mlp lenet cnn}
batch=128
warmup=3
here=$(dirname "$0")
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

steps_for() {
    case $1 in mlp) echo 300 ;; lenet) echo 200 ;; cnn) echo 40 ;; *) echo 4 ;; esac
}

ours() {   # WORLD MODEL STEPS
    taskset -c "0-$(($1 - 1))" mpirun --oversubscribe --bind-to none --mca btl self,vader -np "$1" \
        "$bin/dtrain" --gpus-per-node 0 -- "$bin/dtrain-train" --model "$2" --dataset synthetic --batch-size $batch \
        --epochs 1000 --max-steps $(($3 + warmup)) --log-every 1 --eval-every 0 --quiet 2>/dev/null |
        awk -v b=$((batch * $1)) -v w=$warmup -v n=$(($3 + warmup)) '
            /^Step[0-9]+: / { k = substr($1, 5) + 0; t[k] = k * b / $2 }
            END { printf "%.2f\n", (n - w) * b / (t[n] - t[w]) }'
}

theirs() {   # WORLD MODEL STEPS
    taskset -c "0-$(($1 - 1))" /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node "$1" \
        --redirects 2 --tee 2 "$here/ddp_peer.py" "$2" $batch 1 "$3" 2>/dev/null | awk 'NF == 3 { print $3 }' | tail -n 1
}

max() { echo "$1 $2" | awk '{print ($1 > $2) ? $1 : $2}'; }

echo "| model | dtrain 1 rank | dtrain 2 ranks | speedup | DDP 1 rank | DDP 2 ranks | speedup | dtrain / DDP at 2 ranks |"
echo "|---|---|---|---|---|---|---|---|"
for model in $models; do
    steps=$(steps_for "$model")
    o1=0 o2=0 t1=0 t2=0
    for _ in 1 2 3; do
        o1=$(max "$(ours 1 "$model" "$steps")" "$o1")
        o2=$(max "$(ours 2 "$model" "$steps")" "$o2")
        t1=$(max "$(theirs 1 "$model" "$steps")" "$t1")
        t2=$(max "$(theirs 2 "$model" "$steps")" "$t2")
    done
    echo "$model $o1 $o2 $t1 $t2" | awk '{printf "| %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx | %.2fx |\n",
        $1, $2, $3, $3 / $2, $4, $5, $5 / $4, $3 / $5}'
done
