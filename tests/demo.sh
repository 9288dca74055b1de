#!/bin/sh
# tests/demo.sh - `make demo`: what dtrain does, on this machine, in about half a minute.
set -eu
bin=$1
fixtures="$(dirname "$0")/fixtures"
if [ "$(id -u)" -eq 0 ]; then   # Open MPI refuses root unless told twice
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Every command is printed as it runs (show), so what the demo says is what it does.
show() { echo "\$ $*"; "$@"; }
out="$(dirname "$bin")/demo"   # build/demo: the records and pictures stay, to be tabled again
mkdir -p "$out"
records="$out/runs.jsonl"
rm -f "$records"   # this demo's runs only
echo "== dtrain launches a real training run: LeNet on Fashion-MNIST, one epoch, bound to its cores"
show "$bin/dtrain" --gpus-per-node 0 --report-bindings -- "$bin/dtrain-train" --model lenet --epochs 1 \
    --log-every 100 --quiet
echo
echo "== the same epoch data-parallel: 1 rank, then 2 ranks with MPI (mpirun starts them, dtrain binds"
echo "   each to its own cores); each run appends a record (one JSON line, formats/FORMAT.md) to $records"
for ranks in 1 2; do
    show mpirun --oversubscribe --mca btl self,vader -np "$ranks" "$bin/dtrain" --gpus-per-node 0 --report-bindings -- \
        "$bin/dtrain-train" --model lenet --batch-size 64 --lr-scale linear --lr 0.001 --epochs 1 --log-every 400 \
        --quiet --record "$records"
done
echo
echo "== the records as the reference experiments' speedup table (#GPUs counts CPU ranks here)"
show "$bin/dtrain-analyze" table --extra "$records"
show "$bin/dtrain-analyze" plot -o "$out/scaling" "$records"
echo
echo "== how 4 GPU ranks would be bound on a 2-socket node with 8 GPU+HCA pairs under PCIe switches"
show "$bin/dtrain" --plan --gpus-per-node 4 --topology "$fixtures/topo/2s-8gpu-8hca-pcie-switches.xml"
echo
echo "== what task 3 of a 2-node x 2-task srun step (an environment captured on a real Slurm"
echo "   22.05 cluster) would export and exec"
echo "\$ env -i PATH=\$PATH \$(grep -v '^#' $fixtures/env/srun_N2x2_task3.env) \\"
echo "    $bin/dtrain --nodes 2 --gpus-per-node 0 --dry-run -- dtrain-train"
# shellcheck disable=SC2046  # split on purpose: one NAME=value a line, no blanks in values
env -i PATH="$PATH" $(grep -v '^#' "$fixtures/env/srun_N2x2_task3.env") \
    "$bin/dtrain" --nodes 2 --gpus-per-node 0 --dry-run -- dtrain-train
echo
echo "== asking for more than Slurm gave stops the step at once, with the fix"
echo "\$ env -i PATH=\$PATH \$(grep -v '^#' $fixtures/env/srun_N2x2_task0.env) $bin/dtrain --nodes 4 -- dtrain-train"
# shellcheck disable=SC2046  # as above
env -i PATH="$PATH" $(grep -v '^#' "$fixtures/env/srun_N2x2_task0.env") \
    "$bin/dtrain" --nodes 4 -- dtrain-train || echo "(exit status $?)"
echo
echo "== hostlists, as Slurm reads them"
show "$bin/dtrain-hostlist" compress gn01 gn02 gn03 gn05
echo "   (the malformed list in the reference bigMNIST table:)"
show "$bin/dtrain-hostlist" count 'gn[03-07-09]' || echo "(exit status $?)"
echo
echo "== a language model on real text: the reference experiments' Transformer (2 of its 6 layers here, hidden 64)"
echo "   classifying WordNet's noun glosses (Debian's wordnet-base) as animal, artifact, food, person"
echo "   or plant, 300 steps of 32 glosses (the majority class is 28% of them)"
show "$bin/dtrain-train" --model transformer:2x64x2 --dataset wordnet --batch-size 32 --max-steps 300 --lr 0.0005 \
    --log-every 100 --threads 2 --quiet
echo
echo "demo: its records and pictures are in $out (dtrain-analyze table $records)"
