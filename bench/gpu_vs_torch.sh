#!/bin/sh
# bench/gpu_vs_torch.sh - dtrain-train --device cuda against PyTorch eager (bench/gpu_peer.py) on
# one GPU: ResNet-18 and ResNet-50, batch 128, 224x224x3 synthetic and 28x28x1 inputs, fp32 (TF32
# allowed on both sides) and bf16 (autocast on PyTorch's), Adam, cuDNN algorithms timed on both
# sides (--conv-algo find; cudnn.benchmark = True). Rounds alternate the two sides in one command;
# each side's best round counts. Both leave out the first WARMUP steps (cuDNN's timing, cuBLAS's
# first calls): dtrain's rate comes from its cumulative Step lines (step k ends at k x batch /
# rate_k seconds), PyTorch's from a timer around the later steps.
# Usage: bench/gpu_vs_torch.sh BINDIR [PYTHON]    (env: STEPS, WARMUP, ROUNDS, CONFIGS)
# CONFIGS: MODEL:HxWxC:BATCH:fp32|bf16:heuristic|find[:graphs], blank-separated; graphs adds
# --cuda-graphs on dtrain's side only (PyTorch's side stays eager, the baseline the issue names). Without a GPU the script
# itself can be checked with PEER_DEVICE=cpu (gpu_peer.py on the CPU, needs python3-torchvision)
# and a BINDIR whose dtrain-train drops --device, --precision and --conv-algo.
set -eu
bin=$1
python=${2:-python3}
here=$(dirname "$0")
steps=${STEPS:-30}
warmup=${WARMUP:-5}
rounds=${ROUNDS:-2}
all_configs="resnet18:224x224x3:128:fp32:find resnet18:224x224x3:128:bf16:find
resnet50:224x224x3:128:fp32:find resnet50:224x224x3:128:bf16:find resnet18:28x28x1:128:fp32:find
resnet18:28x28x1:128:bf16:find resnet50:28x28x1:128:fp32:find resnet50:28x28x1:128:bf16:find
resnet18:28x28x1:128:fp32:find:graphs resnet50:224x224x3:128:bf16:find:graphs"
configs=${CONFIGS:-$all_configs}
results=$(mktemp)
trap 'rm -f "$results"' EXIT

ours() {   # CONFIG -> images/s over the steps after the warm-up
    IFS=: read -r model shape batch precision algo graphs <<CONFIG
$1
CONFIG
    "$bin/dtrain-train" --device cuda --model "$model" --dataset "synthetic:$shape" --batch-size "$batch" \
        --precision "$precision" --conv-algo "$algo" ${graphs:+--cuda-graphs} --optimizer adam --lr 0.001 --epochs 1000 \
        --max-steps $((steps + warmup)) --log-every 1 --eval-every 0 --quiet 2>&1 |
        awk -v b="$batch" -v w="$warmup" -v n=$((steps + warmup)) '
            /^Step[0-9]+: / { k = substr($1, 5) + 0; t[k] = k * b / $2 }
            /dtrain-train: .*(error|GPU|rank)/ { print > "/dev/stderr" }
            END { if (t[n] > t[w]) printf "%.1f\n", (n - w) * b / (t[n] - t[w]); else print 0 }'
}

round=1
while [ "$round" -le "$rounds" ]; do
    for config in $configs; do
        echo "ours $config $(ours "$config")" | tee -a "$results" >&2   # progress, kept if cut short
    done
    # shellcheck disable=SC2086 # one argument per configuration
    "$python" "$here/gpu_peer.py" "$steps" "$warmup" $configs | sed 's/^/theirs /' | tee -a "$results" >&2
    round=$((round + 1))
done

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
torch=$("$python" -c 'import torch; print(torch.__version__)')
echo "GPU: ${gpu:-unknown}; PyTorch $torch eager; Adam; best of $rounds rounds of $steps steps after $warmup"
echo
echo "| model | input | batch | precision | cuDNN algorithms | dtrain-train images/s | PyTorch eager images/s | ratio |"
echo "|---|---|---|---|---|---|---|---|"
for config in $configs; do
    awk -v c="$config" '
        $2 == c && $3 > best[$1] { best[$1] = $3 }
        END { split(c, f, ":");
              printf "| %s | %s | %s | %s | %s | %.1f%s | %.1f | %s |\n", f[1], f[2], f[3], f[4], f[5],
                     best["ours"], (f[6] == "graphs" ? " (CUDA graphs)" : ""), best["theirs"],
                     (best["theirs"] > 0 ? sprintf("%.2fx", best["ours"] / best["theirs"]) : "-") }' "$results"
done
