#!/bin/sh
# bench/watch_cost.sh - what dtrain --watch costs a step: LeNet on 2 ranks (mpirun through dtrain,
# synthetic data, batch 64 a rank), each rank run as a watched child (its watcher sampling it four
# times a second and reporting to rank 0's) against plain exec, alternating, each side's best of
# RUNS (5). Prints both rates, the cost in percent of a step, and the watchers' own CPU time as
# rank 0's says it (dtrain --watch -v), the largest of the runs. Usage: bench/watch_cost.sh BINDIR [STEPS]
set -eu
bin=$(cd "${1:?usage: watch_cost.sh BINDIR [STEPS]}" && pwd)
steps=${2:-1500}
runs=${RUNS:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rate() {   # samples/s of one run, with dtrain's options $1 (word-split); its output stays in $log
    # shellcheck disable=SC2086  # the options: split on purpose
    mpirun --oversubscribe -np 2 "$bin/dtrain" --gpus-per-node 0 $1 -- "$bin/dtrain-train" --model lenet \
        --dataset synthetic --batch-size 64 --max-steps "$steps" --log-every 200 --eval-every 0 --quiet >"$log" 2>&1
    sed -n 's/.* steps in .* s, \([0-9.]*\) samples\/s.*/\1/p' "$log" | head -n 1
}
max() { echo "$1 $2" | awk '{print ($1 > $2) ? $1 : $2}'; }
with=0 without=0 own=0
i=0
while [ $i -lt "$runs" ]; do
    without=$(max "$(rate "")" "$without")
    with=$(max "$(rate "--watch -v")" "$with")
    own=$(max "$(sed -n 's/^dtrain: watch: rank 0: watching used .* (\([0-9.]*\)% of a core)$/\1/p' "$log")" "$own")
    i=$((i + 1))
done
echo "| LeNet, 2 ranks under mpirun | plain exec samples/s | dtrain --watch samples/s | cost of a step | the watcher's own CPU |"
echo "|---|---|---|---|---|"
echo "| $steps steps, best of $runs, alternating | $without | $with | $(echo "$with $without" | awk '{printf "%.2f%%", (1 - $1 / $2) * 100}') | $own% of a core (at most) |"
