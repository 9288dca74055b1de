#!/bin/sh
# tests/demo.sh - `make demo`: what dtrain does, on this machine, in a few seconds.
set -eu
bin=$1
echo "== dtrain starts 2 local ranks of a program that prints what it was given"
echo "\$ dtrain --ranks 2 --label -- dtrain-rankinfo"
"$bin/dtrain" --ranks 2 --label -- "$bin/dtrain-rankinfo"
echo
echo "== what task 3 of a 2-node x 2-task srun step (an environment captured on a real Slurm"
echo "   22.05 cluster) would export and exec"
echo "\$ srun -N2 --ntasks-per-node=2 dtrain --nodes 2 --gpus-per-node 0 --dry-run -- dtrain-train"
# shellcheck disable=SC2046  # split on purpose: one NAME=value a line, no blanks in values
env -i PATH="$PATH" $(grep -v '^#' "$(dirname "$0")/fixtures/env/srun_N2x2_task3.env") \
    "$bin/dtrain" --nodes 2 --gpus-per-node 0 --dry-run -- dtrain-train
echo
echo "== asking for more than Slurm gave stops the step at once, with the fix"
echo "\$ srun -N2 --ntasks-per-node=2 dtrain --nodes 4 -- dtrain-train"
# shellcheck disable=SC2046  # split on purpose: one NAME=value a line, no blanks in values
env -i PATH="$PATH" $(grep -v '^#' "$(dirname "$0")/fixtures/env/srun_N2x2_task0.env") \
    "$bin/dtrain" --nodes 4 -- dtrain-train || echo "(exit status $?)"
echo
echo "== hostlists, as Slurm reads them"
echo "\$ dtrain-hostlist expand -s' ' 'gn[01-02,07-08]'"
"$bin/dtrain-hostlist" expand -s' ' 'gn[01-02,07-08]'
echo "\$ dtrain-hostlist compress gn01 gn02 gn03 gn05"
"$bin/dtrain-hostlist" compress gn01 gn02 gn03 gn05
echo "\$ dtrain-hostlist count 'gn[03-07-09]'   # the malformed list in the seeds' bigMNIST table"
"$bin/dtrain-hostlist" count 'gn[03-07-09]' || echo "(exit status $?)"
