#!/bin/sh
# bench/straggler_cost.sh - what the straggler report costs a step: LeNet on 2 ranks (mpirun
# through dtrain, synthetic data, batch 64 a rank), the report every 20 steps (ten times as often
# as the default --log-every 200) against --straggler-threshold 0 (no report; the step's timing
# stays), alternating, each side's best of RUNS (5). Prints both rates and the cost in percent of
# a step, and the reports' own time as rank 0 measured it around them (an upper bound: the
# collective also absorbs the wait for the slower rank that the next allreduce would have had),
# the largest of the runs. Usage: bench/straggler_cost.sh BINDIR [STEPS]
set -eu
bin=$(cd "${1:?usage: straggler_cost.sh BINDIR [STEPS]}" && pwd)
steps=${2:-600}
runs=${RUNS:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rate() {   # samples/s of one run with the given threshold; its report line stays in $log
    mpirun --oversubscribe -np 2 "$bin/dtrain" --gpus-per-node 0 -- "$bin/dtrain-train" --model lenet \
        --dataset synthetic --batch-size 64 --max-steps "$steps" --log-every 20 --eval-every 0 --quiet \
        --straggler-threshold "$1" >"$log" 2>&1
    sed -n 's/.* steps in .* s, \([0-9.]*\) samples\/s.*/\1/p' "$log" | head -n 1
}
max() { echo "$1 $2" | awk '{print ($1 > $2) ? $1 : $2}'; }
with=0 without=0 own=0
i=0
while [ $i -lt "$runs" ]; do
    without=$(max "$(rate 0)" "$without")
    with=$(max "$(rate 0.25)" "$with")
    own=$(max "$(sed -n 's/.*straggler report: .*, \([0-9.]*\)% of the run/\1/p' "$log")" "$own")
    i=$((i + 1))
done
echo "| LeNet, 2 ranks, report every 20 steps | without (--straggler-threshold 0) samples/s | with samples/s | cost of a step | the reports' own time |"
echo "|---|---|---|---|---|"
echo "| $steps steps, best of $runs, alternating | $without | $with | $(echo "$with $without" | awk '{printf "%.2f%%", (1 - $1 / $2) * 100}') | $own% of the run (at most) |"
