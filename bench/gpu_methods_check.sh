#!/bin/sh
# bench/gpu_methods_check.sh - every gradient-exchange method on ranks that share one GPU,
# host-staged (--gpu-transport host: NCCL refuses two ranks on one GPU, so no NCCL method can run
# on more than one rank here), each against BSP host-staged on the same ranks: the same
# parameters within 1e-5 relative. On the GPU only cuDNN's deterministic algorithms run (--conv-algo
# deterministic): with the heuristics' choice, two runs of BSP itself ended 4e-5 apart (H100,
# 2026-11-27), as cuDNN's atomics summed the backward in another order.
# Parameter servers take a third rank. One PASS or FAIL line a method; exit 1 on any FAIL.
# With DEVICE cpu it runs the same on CPU ranks (how it is checked without a GPU).
# Usage: sh bench/gpu_methods_check.sh BINDIR MPIRUN [cuda|cpu] [OUTDIR]
set -u
bin=$1 mpirun=$2 device=${3:-cuda} out=${4:-$(mktemp -d)}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DTRAIN_GPU=0   # every rank on the one GPU
common="--device $device --model lenet --dataset synthetic --max-steps 12 --log-every 4 --eval-every 0 --quiet
        --batch-size 32 --lr 0.001 --gpu-transport host"
[ "$device" = cpu ] || common="$common --conv-algo deterministic"

train() {   # train RANKS NAME OPTION...: the run's parameters in $out/NAME.rank*, its output in NAME.log
    ranks=$1 name=$2
    shift 2
    # shellcheck disable=SC2086
    "$mpirun" --oversubscribe -x DTRAIN_GPU -np "$ranks" "$bin/dtrain-train" $common --params-out "$out/$name" "$@" \
        >"$out/$name.log" 2>&1
}

close_to() {   # close_to A B: prints the largest relative difference; true when within 1e-5
    python3 - "$1" "$2" <<'PY'
import array, sys
a, b = array.array("f"), array.array("f")
a.frombytes(open(sys.argv[1], "rb").read())
b.frombytes(open(sys.argv[2], "rb").read())
worst = max((abs(x - y) / (1 + abs(y)) for x, y in zip(a, b)), default=0.0)
print(f"{worst:.1e}")
sys.exit(0 if len(a) == len(b) and len(a) > 0 and worst <= 1e-5 else 1)
PY
}

failed=0
if ! train 2 bsp; then
    echo "FAIL: bsp-a2a host-staged on 2 ranks did not run (see $out/bsp.log)"
    exit 1
fi
for method in $("$bin/dtrain-train" --list-methods); do
    ranks=2 partition=""
    case $method in *-ps) ranks=3 ;; esac
    case $method in *-ps | bytescheduler-*) partition="--partition-bytes 8000" ;; esac   # several pieces a layer
    # shellcheck disable=SC2086
    if ! train "$ranks" "$method" --comm "$method" $partition; then
        echo "FAIL: $method host-staged on $ranks ranks did not run (see $out/$method.log)"
        failed=1
        continue
    fi
    if diff=$(close_to "$out/$method.rank1" "$out/bsp.rank0") &&
        grep -q "gradient exchange $method over host memory (staged)" "$out/$method.log"; then
        echo "PASS: $method host-staged on $ranks ranks ($device): BSP's parameters within $diff"
    else
        echo "FAIL: $method host-staged on $ranks ranks ($device): parameters differ from BSP's by $diff (see $out/$method.log)"
        failed=1
        # what kind of difference: a second run of the method apart from the first is an order
        # of summation that changes (atomics, a race); the same bits twice is arithmetic of its own
        # shellcheck disable=SC2086
        train "$ranks" "$method-again" --comm "$method" $partition &&
            echo "  $method run twice: $(close_to "$out/$method-again.rank1" "$out/$method.rank1") apart"
    fi
done
exit $failed
