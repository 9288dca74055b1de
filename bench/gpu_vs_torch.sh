#!/bin/sh
# bench/gpu_vs_torch.sh - dtrain-train --device cuda against PyTorch eager on one GPU, the same
# model, batch, precision and Adam: the ResNets (bench/gpu_peer.py: images/s) and the language
# models (bench/seq_peer.py with PEER_DEVICE=cuda: tokens/s, the words/s of reference experiment
# 002). fp32 allows TF32 on both sides, bf16 is autocast on PyTorch's; cuDNN's algorithms are timed
# on both sides (--conv-algo find; cudnn.benchmark = True). Rounds alternate the two sides in one
# command; each side's best round counts. Both leave out the first WARMUP steps (cuDNN's timing,
# cuBLAS's first calls): dtrain's rate comes from its cumulative Step lines (step k ends at
# k x batch / rate_k seconds), PyTorch's from a timer around the later steps. After the first, a
# round starts only if, lasting as long as the last one, it would end within DEADLINE seconds of
# the start: a bounded device call ends with whole rounds.
# BASELINE=FILE runs another dtrain-train (an earlier commit's) in the same rounds: its own column,
# the change's effect measured on the same GPU beside the same PyTorch.
# Usage: bench/gpu_vs_torch.sh BINDIR [PYTHON]   (env: STEPS, WARMUP, ROUNDS, CONFIGS, DEADLINE, BASELINE)
# CONFIGS: MODEL:INPUT:BATCH:fp32|bf16:heuristic|find[:graphs], blank-separated; INPUT is HxWxC
# (images) or seqN (token ids of length N); graphs adds --cuda-graphs on dtrain's side only
# (PyTorch's side stays eager, the baseline the issue names). Without a GPU the script itself can be
# checked with PEER_DEVICE=cpu (the peers on the CPU, needs python3-torchvision) and a BINDIR whose
# dtrain-train drops --device, --precision and --conv-algo.
set -eu
bin=$1
python=${2:-python3}
here=$(dirname "$0")
steps=${STEPS:-30}
warmup=${WARMUP:-5}
rounds=${ROUNDS:-2}
deadline=${DEADLINE:-100000}
vocab=30522
all_configs="resnet50:224x224x3:128:fp32:find resnet50:224x224x3:128:bf16:find
resnet50:224x224x3:128:fp32:find:graphs resnet50:224x224x3:128:bf16:find:graphs
resnet18:28x28x1:128:fp32:find resnet18:28x28x1:128:fp32:find:graphs
transformer:seq128:32:fp32:heuristic bert-base:seq128:8:fp32:heuristic"
configs=${CONFIGS:-$all_configs}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
started=$(date +%s)

dataset_of() {   # INPUT -> dtrain-train's --dataset
    case $1 in seq*) echo "synthetic-text:${vocab}x${1#seq}" ;; *) echo "synthetic:$1" ;; esac
}

ours() {   # DTRAIN_TRAIN CONFIG -> samples/s over the steps after the warm-up (0 if the run failed)
    IFS=: read -r model shape batch precision algo graphs <<CONFIG
$2
CONFIG
    timeout 120 "$1" --device cuda --model "$model" --dataset "$(dataset_of "$shape")" \
        --batch-size "$batch" --precision "$precision" --conv-algo "$algo" ${graphs:+--cuda-graphs} --optimizer adam \
        --lr 0.001 --epochs 1000 --max-steps $((steps + warmup)) --log-every 1 --eval-every 0 --quiet 2>&1 |
        awk -v b="$batch" -v w="$warmup" -v n=$((steps + warmup)) '
            /^Step[0-9]+: / { k = substr($1, 5) + 0; t[k] = k * b / $2 }
            /dtrain-train: / { print > "/dev/stderr" }
            END { if (t[n] > t[w]) printf "%.1f\n", (n - w) * b / (t[n] - t[w]); else print 0 }'
}

theirs() {   # CONFIG... -> "CONFIG SAMPLES_PER_SEC" lines: one process for the images, one a language model
    images=""
    for config in "$@"; do
        case $config in
            *:seq*:*)
                IFS=: read -r model shape batch _ <<CONFIG
$config
CONFIG
                rate=$(PEER_DEVICE=${PEER_DEVICE:-cuda} timeout 180 "$python" "$here/seq_peer.py" "$model" "$batch" \
                    "${shape#seq}" 4 "$steps" "$vocab" || echo 0)
                echo "$config ${rate%% *}" ;;
            *) images="$images $config" ;;
        esac
    done
    # shellcheck disable=SC2086 # one argument per configuration
    [ -z "$images" ] || timeout 400 "$python" "$here/gpu_peer.py" "$steps" "$warmup" $images || true
}

round=1 last=0
while [ "$round" -le "$rounds" ] && [ $(($(date +%s) - started + last)) -le "$deadline" ]; do
    round_start=$(date +%s)
    for config in $configs; do
        echo "ours $config $(ours "$bin/dtrain-train" "$config")" | tee -a "$results" >&2   # progress, kept if cut short
        [ -z "${BASELINE:-}" ] || echo "baseline $config $(ours "$BASELINE" "$config")" | tee -a "$results" >&2
    done
    # shellcheck disable=SC2086
    theirs $configs | sed 's/^/theirs /' | tee -a "$results" >&2
    round=$((round + 1)) last=$(($(date +%s) - round_start))
done

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
torch=$("$python" -c 'import torch; print(torch.__version__)')
echo "GPU: ${gpu:-unknown}; PyTorch $torch eager; Adam; best of $((round - 1)) rounds of $steps steps after $warmup"
echo
[ -z "${BASELINE:-}" ] || echo "baseline: $BASELINE"
echo
echo "| model | input | batch | precision | cuDNN algorithms | dtrain-train | PyTorch eager | unit | ratio |${BASELINE:+ baseline | ratio |}"
echo "|---|---|---|---|---|---|---|---|---|${BASELINE:+---|---|}"
for config in $configs; do
    awk -v c="$config" -v baseline="${BASELINE:+1}" '
        $2 == c && $3 > best[$1] { best[$1] = $3 }
        function ratio(a, b) { return b > 0 ? sprintf("%.2fx", a / b) : "-" }
        END { split(c, f, ":"); scale = 1; unit = "images/s"
              if (f[2] ~ /^seq/) { scale = substr(f[2], 4) + 0; unit = "tokens/s" }
              printf "| %s | %s | %s | %s | %s | %.0f%s | %.0f | %s | %s |", f[1], f[2], f[3], f[4], f[5],
                     best["ours"] * scale, (f[6] == "graphs" ? " (CUDA graphs)" : ""), best["theirs"] * scale, unit,
                     ratio(best["ours"], best["theirs"])
              if (baseline) printf " %.0f | %s |", best["baseline"] * scale, ratio(best["baseline"], best["theirs"])
              printf "\n" }' "$results"
done
