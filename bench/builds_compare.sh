#!/bin/sh
# bench/builds_compare.sh - two builds of dtrain-train on the same models, alternating in one run,
# each side's best of three (bench/dtrain_rate.sh): what a change did to training speed, as the
# ratio NEW / OLD (1.00x: no change; the machine's noise is a few percent).
# Usage: bench/builds_compare.sh OLD_BINDIR NEW_BINDIR [THREADS] [MODELS...]
set -eu
old=$1 new=$2
threads=${3:-1}
shift $(( $# > 2 ? 3 : 2 ))
models=${*:-mlp lenet cnn resnet18}
here=$(dirname "$0")

steps_for() {   # a few seconds of timed work per measurement on one core
    case $1 in mlp) echo 600 ;; lenet) echo 300 ;; cnn) echo 60 ;; *) echo 6 ;; esac
}
max() { echo "$1 $2" | awk '{print ($1 > $2) ? $1 : $2}'; }

echo "| model | $old samples/s | $new samples/s | new / old |"
echo "|---|---|---|---|"
for model in $models; do
    steps=$(steps_for "$model")
    best_old=0 best_new=0
    for _ in 1 2 3; do
        r=$(sh "$here/dtrain_rate.sh" "$old" "$model" "$steps" "$threads")
        best_old=$(max "${r% *}" "$best_old")
        r=$(sh "$here/dtrain_rate.sh" "$new" "$model" "$steps" "$threads")
        best_new=$(max "${r% *}" "$best_new")
    done
    echo "| $model | $best_old | $best_new | $(echo "$best_new $best_old" | awk '{printf "%.2fx", $1 / $2}') |"
done
