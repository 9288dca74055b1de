#!/bin/sh
# bench/gpu_vs_torch.sh - dtrain-train --device cuda against PyTorch on one GPU, the same model,
# batch, precision and Adam, PyTorch run as people run it: the ResNets (bench/gpu_peer.py,
# images/s) eager NCHW, eager channels-last (the model and batches in torch.channels_last) and
# torch.compile of the channels-last model; the language models (bench/seq_peer.py with
# PEER_DEVICE=cuda: tokens/s, the words/s of reference experiment 002) with attention written out
# and with F.scaled_dot_product_attention. fp32 allows TF32 on both sides, bf16 is autocast on
# PyTorch's; cuDNN's algorithms are timed on both sides (--conv-algo find; cudnn.benchmark = True).
# Rounds alternate the two sides in one command; each side's best round counts. Both leave out the
# first WARMUP steps (cuDNN's timing, cuBLAS's first calls; torch.compile's compile, reported on
# stderr): dtrain's rate comes from its cumulative Step lines (step k ends at k x batch / rate_k
# seconds), PyTorch's from a timer around the later steps. After the first, a round starts only
# if, lasting as long as the last one, it would end within DEADLINE seconds of the start: a
# bounded device call ends with whole rounds. The ratios are dtrain's rate over each PyTorch way's.
# BASELINE=FILE runs another dtrain-train (an earlier commit's) in the same rounds: its own column,
# the change's effect measured on the same GPU beside the same PyTorch.
# Usage: bench/gpu_vs_torch.sh BINDIR [PYTHON]
#   (env: STEPS, WARMUP, ROUNDS, CONFIGS, DEADLINE, BASELINE, PEER_MODES, COMPILE_LIMIT)
# CONFIGS: MODEL:INPUT:BATCH:fp32|bf16:heuristic|find[:FLAGS], blank-separated; INPUT is HxWxC
# (images) or seqN (token ids of length N); FLAGS, '+'-joined, are dtrain's alone: graphs
# (--cuda-graphs), cl (--channels-last). PEER_MODES: the ResNet peer's ways (eager,channels-last,
# compile); a peer runs once per configuration that differs in more than dtrain's flags. Without
# a GPU the script itself can be checked with PEER_DEVICE=cpu (the peers on the CPU, needs
# python3-torchvision) and a BINDIR whose dtrain-train drops --device, --precision, --conv-algo
# and --channels-last.
set -eu
bin=$1
python=${2:-python3}
here=$(dirname "$0")
steps=${STEPS:-30}
warmup=${WARMUP:-5}
rounds=${ROUNDS:-2}
deadline=${DEADLINE:-100000}
vocab=30522
peer_modes=${PEER_MODES:-eager,channels-last,compile}
all_configs="resnet50:224x224x3:128:fp32:find resnet50:224x224x3:128:fp32:find:cl
resnet50:224x224x3:128:bf16:find resnet50:224x224x3:128:bf16:find:cl resnet50:224x224x3:128:bf16:find:cl+graphs
resnet18:28x28x1:128:fp32:find resnet18:28x28x1:128:fp32:find:cl
transformer:seq128:32:bf16:heuristic bert-base:seq128:32:bf16:heuristic"
configs=${CONFIGS:-$all_configs}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
started=$(date +%s)

dataset_of() {   # INPUT -> dtrain-train's --dataset
    case $1 in seq*) echo "synthetic-text:${vocab}x${1#seq}" ;; *) echo "synthetic:$1" ;; esac
}

ours() {   # DTRAIN_TRAIN CONFIG -> samples/s over the steps after the warm-up (0 if the run failed)
    IFS=: read -r model shape batch precision algo flags <<CONFIG
$2
CONFIG
    extra=""
    case +$flags+ in *+graphs+*) extra="$extra --cuda-graphs" ;; esac
    case +$flags+ in *+cl+*) extra="$extra --channels-last" ;; esac
    # shellcheck disable=SC2086 # the flags are words
    timeout 120 "$1" --device cuda --model "$model" --dataset "$(dataset_of "$shape")" \
        --batch-size "$batch" --precision "$precision" --conv-algo "$algo" $extra --optimizer adam \
        --lr 0.001 --epochs 1000 --max-steps $((steps + warmup)) --log-every 1 --eval-every 0 --quiet 2>&1 |
        awk -v b="$batch" -v w="$warmup" -v n=$((steps + warmup)) '
            /^Step[0-9]+: / { k = substr($1, 5) + 0; t[k] = k * b / $2 }
            /dtrain-train: / { print > "/dev/stderr" }
            END { if (t[n] > t[w]) printf "%.1f\n", (n - w) * b / (t[n] - t[w]); else print 0 }'
}

peer_key() {   # CONFIG -> its first five fields: what the peer runs
    echo "$1" | cut -d: -f1-5
}

theirs() {   # CONFIG... -> "KEY MODE SAMPLES_PER_SEC" lines: one process for the images, one a language model way
    images=""
    for key in $(for config in "$@"; do peer_key "$config"; done | sort -u); do
        case $key in
            *:seq*:*)
                IFS=: read -r model shape batch precision _ <<CONFIG
$key
CONFIG
                for attention in eager sdpa; do
                    rate=$(PEER_DEVICE=${PEER_DEVICE:-cuda} PEER_PRECISION=$precision PEER_ATTENTION=$attention \
                        timeout 180 "$python" "$here/seq_peer.py" "$model" "$batch" "${shape#seq}" 4 "$steps" "$vocab" ||
                        echo 0)
                    echo "$key $attention ${rate%% *}"
                done ;;
            *) images="$images $key" ;;
        esac
    done
    # shellcheck disable=SC2086 # one argument per configuration
    [ -z "$images" ] || timeout 400 "$python" "$here/gpu_peer.py" "$steps" "$warmup" "$peer_modes" $images || true
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
echo "GPU: ${gpu:-unknown}; PyTorch $torch; Adam; best of $((round - 1)) rounds of $steps steps after $warmup"
echo
[ -z "${BASELINE:-}" ] || echo "baseline: $BASELINE"
echo
echo "PyTorch's ways: eager (NCHW); best practice: channels-last eager for the ResNets, scaled_dot_product_attention"
echo "for the language models; compiled: torch.compile of the channels-last model. Each ratio is dtrain-train's rate over it."
echo
echo "| model | input | batch | precision | dtrain-train | PyTorch eager | best practice | compiled | unit | ratio eager | ratio best practice | ratio compiled |${BASELINE:+ baseline | ratio best practice |}"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|${BASELINE:+---|---|}"
for config in $configs; do
    awk -v c="$config" -v key="$(peer_key "$config")" -v baseline="${BASELINE:+1}" '
        $1 == "theirs" && $2 == key && $4 > best[$3] { best[$3] = $4 }
        $1 != "theirs" && $2 == c && $3 > best[$1] { best[$1] = $3 }
        function ratio(a, b) { return b > 0 ? sprintf("%.2fx", a / b) : "-" }
        function rate(r) { return r > 0 ? sprintf("%.0f", r * scale) : "-" }
        END { split(c, f, ":"); scale = 1; unit = "images/s"; practice = "channels-last"
              if (f[2] ~ /^seq/) { scale = substr(f[2], 4) + 0; unit = "tokens/s"; practice = "sdpa" }
              flags = f[6] == "" ? "" : " (" f[6] ")"
              printf "| %s | %s | %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %s |", f[1], f[2], f[3], f[4],
                     rate(best["ours"]), flags, rate(best["eager"]), rate(best[practice]), rate(best["compile"]),
                     unit, ratio(best["ours"], best["eager"]), ratio(best["ours"], best[practice]),
                     ratio(best["ours"], best["compile"])
              if (baseline) printf " %s | %s |", rate(best["baseline"]), ratio(best["baseline"], best[practice])
              printf "\n" }' "$results"
done
