#!/bin/sh
# bench/methods_study.sh BINDIR [OUTDIR] - make methods-study: the reference experiments' scaling experiments (the method comparison's
# seven methods, the AllReduce-against-PS table's 1 Gbit/s bottleneck) on this machine, emulated, each cell predicted beside
# measured. Each part runs bench/methods_shaped.sh on the test cluster (every rank waits a profile's
# layer times, scaled to the reference experiments' 1-GPU rate, instead of computing; links between the leaves
# shaped), then dtrain-analyze predict --records with that link's own dtrain-commbench table and the
# allreduce measured over each job size's ranks (predict --allreduce), and a plot, a line per method:
#   resnet50-10gbit  ResNet-50, batch 32, 253.1 samples/s a device, all seven methods at 1, 2, 4,
#                    8 (2 a node) and 16 (4 a node) ranks, 10 Gbit/s, time dilated 16x (compute
#                    16 times slower, link shaped to 625 Mbit/s, reported at real time: the
#                    machine's own copies and sums shrink beside the work); parameter servers up
#                    to 8 workers (a node of the test cluster does not take 4 workers and a server)
#   resnet50-fast    the same over the unshaped links (veth at whatever this CPU moves: a fast link)
#   bert-base-10gbit BERT-Base pre-training, length 64, batch 64, 212.8 samples/s a device, all
#                    seven methods at 1, 2 and 4 ranks (110 M parameters: 8 ranks' gradients,
#                    sums and buffers outgrow this machine's memory), 10 Gbit/s dilated 16x
#   seed002          ResNet-18 and ResNet-101, batch 128, 74.31 and 19.70 images/s (the AllReduce-against-PS reference's
#                    2080 Ti), BSP and WFBP at 1, 2 and 3 nodes of 4 ranks, 1 Gbit/s between the
#                    nodes, not dilated (the link, not the CPU, is slow)
# PARTS picks ("resnet50-10gbit resnet50-fast bert-base-10gbit seed002"); REPEATS (1); SEED002_MODELS
# ("resnet18:74.31 resnet101:19.70", MODEL:RATE); RESNET50_SIZES ("2:1 4:1 4:2 4:4", NODES:RANKS a
# node, the parameter servers at those up to 8 workers); PROFILES: whose layer times the ranks wait,
# cpu (the default, bench/profiles/*-cpu-b8.json), h100 or h200 (ResNet-50's and BERT-Base's measured
# on that GPU, *-h100-*.json; the 1 Gbit/s reference's ResNet-18 and ResNet-101 keep the CPU's, having no GPU profile yet).
# Needs root.
# About 50 minutes for resnet50-10gbit, 50 for resnet50-fast, 50 for bert-base-10gbit, 25 for seed002
# (measured on this project's 2-core machine, 2026-11-23).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:?usage: methods_study.sh BINDIR [OUTDIR]}" && pwd)
out=${2:-$here/../build/methods-study}
mkdir -p "$out"
out=$(cd "$out" && pwd)
profiles=$here/profiles
repeats=${REPEATS:-1}
case ${PROFILES:-cpu} in
cpu) resnet50_profile=resnet50-cpu-b8 bert_profile=bert-base-cpu-b8 ;;
h100 | h200) resnet50_profile=resnet50-$PROFILES-b64 bert_profile=bert-base-$PROFILES-b8 ;;
*) echo "methods_study: PROFILES=${PROFILES}: cpu, h100 or h200 (bench/profiles/)" >&2; exit 2 ;;
esac

# part NAME PROFILE RATE DILATE LINK: runs the part (the environment given before it) and predicts it
part() {
    name=$1 profile=$2 rate=$3 dilate=$4 link=$5
    echo "== $name" >&2
    REPEATS=$repeats EMULATE=$profile EMULATE_RATE=$rate DILATE=$dilate RATES=$link COMMBENCH=1 \
        sh "$here/methods_shaped.sh" "$bin" "$out/$name" > "$out/$name.md"
    predict_part "$name" "$profile" "$rate" "$dilate" "$link"
    "$bin/dtrain-analyze" plot --series method --where "tag=$link" -o "$out/$name" "$out/$name/runs" >/dev/null
}

# predict_part NAME PROFILE RATE DILATE LINK: the part's runs beside the cost model's prediction,
# from the link's commbench table and the allreduce measured at each job size
predict_part() {
    name=$1 profile=$2 rate=$3 dilate=$4 link=$5
    echo
    echo "## $name: measured beside predicted (dtrain-analyze predict --records, the link's and each size's commbench tables)"
    sh "$here/predict_shaped.sh" "$bin" "$out/$name" "$profile" "$rate" "$dilate" "$link" --batch "$BATCH" |
        tee "$out/$name-predicted.md"
}

for p in ${PARTS:-resnet50-10gbit resnet50-fast bert-base-10gbit seed002}; do
    case $p in
    resnet50-10gbit|resnet50-fast)
        link=10gbit
        [ "$p" = resnet50-10gbit ] || link=off
        sizes=${RESNET50_SIZES:-2:1 4:1 4:2 4:4}
        ps_sizes=$(for s in $sizes; do [ "$s" = 4:4 ] || printf '%s ' "$s"; done)
        MODEL=resnet50 DATASET=synthetic:224x224x3 BATCH=32 STEPS=16 SIZES="$sizes" PS_SIZES="$ps_sizes" \
            part "$p" "$profiles/$resnet50_profile.json" 253.1 16 "$link" ;;
    bert-base-10gbit)
        MODEL=bert-base DATASET=synthetic-text:30522x64 BATCH=64 STEPS=8 SIZES="2:1 4:1" \
            part "$p" "$profiles/$bert_profile.json" 212.8 16 10gbit ;;
    seed002)
        for m in ${SEED002_MODELS:-resnet18:74.31 resnet101:19.70}; do
            model=${m%%:*}
            MODEL=$model DATASET=synthetic:224x224x3 BATCH=128 STEPS=8 SIZES="1:4 2:4 3:4" METHODS="bsp-a2a wfbp-a2a" \
                part "seed002-$model" "$profiles/$model-cpu-b8.json" "${m#*:}" 1 1gbit
        done ;;
    *) echo "methods_study: unknown part \"$p\" (resnet50-10gbit resnet50-fast bert-base-10gbit seed002)" >&2; exit 2 ;;
    esac
done
echo
echo "methods-study: tables, records and predictions in $out"
