#!/bin/sh
# bench/gpu_device_run.sh - on a GPU machine: unpacks .device/bundle.tar.xz (make gpu-bundle),
# finds the machine's CUDA libraries (its /usr/local/cuda, else the nvidia-* Python wheels next to
# PyTorch), then, stopping nothing on a failure and each part under a time limit: the CUDA tests
# (test_cuda: every kernel against the CPU reference; test_cuda_models: LeNet, a ResNet-18 and the
# language models trained as on the CPU; test_cuda_exchange: staging and NCCL with a world of one), every exchange method host-staged on ranks sharing the GPU (gpu_methods_check.sh),
# short runs of LeNet, ResNet-18 and the transformer in both precisions with and without CUDA
# graphs, GPU profiles of ResNet-50 and BERT-Base (--profile-out) with PyTorch's kernel time by kind
# for the same ResNet-50 step (gpu_torch_layers.py), and the benchmark against
# PyTorch (gpu_vs_torch.sh, whole rounds while they end within TOTAL seconds of the start). It writes at most
# 8 files to $OUT (or ./gpu-out), what a device call brings back: device.txt, tests.log (test_cuda,
# test_cuda_models, test_cuda_exchange), methods.log, smoke.log, bench.md and the two profiles. `speed` is the
# short call for a kernel change: test_cuda, the profiles and the benchmark; a bundle made with
# BASELINE (gpu_bundle.sh) runs that dtrain-train in the benchmark beside this one. `sanitize` runs
# compute-sanitizer (memcheck, racecheck) over test_cuda's kernel tests, one at a time, and a short
# ResNet-18 in both precisions and with CUDA graphs: sanitize.log. `short` is one bounded call for
# issue 51's work: test_cuda_layout, test_cuda and test_cuda_models, a bf16 profile of BERT-Base at
# batch 32, the benchmark (ResNet-50 NCHW and channels-last in both precisions, BERT-Base in bf16,
# against PyTorch eager, channels-last, torch.compile in bf16 and SDPA; one round; TOTAL (330)
# seconds from the start), then compute-sanitizer over the language models' and the channels-last
# kernels (SANITIZE: TOOL:BINARY:TEST words), and with KERNELS=1 the kernel profile below last.
# `kernels` is Nsight Compute over 3 steps of a training run (KERNELS_ARGS), each kernel's time a
# step summed by bench/ncu_steps.py: kernels.txt, kernels.csv.gz.
# Usage: sh bench/gpu_device_run.sh [tests|bench|speed|sanitize|short|kernels|all]
#   (env: PYTHON, TOTAL (420), gpu_vs_torch.sh's; KERNELS, KERNELS_ARGS, KERNELS_LIMIT (240))
set -u
started=$(date +%s)
what=${1:-all}
top=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$top/gpu-out}
python=${PYTHON:-python3}
root=/tmp/dtrain-device
mkdir -p "$out" "$root"
xz -dc "$top/.device/bundle.tar.xz" | tar -C "$root" -xf - || { echo "no bundle: run make gpu-bundle first"; exit 2; }

# The GPU's libraries: cudart and cuBLAS of CUDA 13, cuDNN 9, NCCL 2.
cuda_libs=$("$python" - <<'PY' 2>/dev/null
import glob, os
import nvidia
dirs = set()
for base in nvidia.__path__:
    for lib in glob.glob(os.path.join(base, "*", "lib*", "lib*.so*")):
        dirs.add(os.path.dirname(lib))
print(":".join(sorted(dirs)))
PY
)
export LD_LIBRARY_PATH="$root/lib:/usr/local/cuda/lib64:${cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$root/root/usr"
export PMIX_INSTALL_PREFIX="$root/root/usr/lib/x86_64-linux-gnu/pmix2"
export OMPI_MCA_ess_singleton_isolated=1   # a lone dtrain-train: no orted to start
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bin="$root/bin"
{
    date -u '+%Y-%m-%d %H:%M UTC'
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
    nvcc --version 2>/dev/null | tail -n 2
    "$python" -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    for exe in dtrain-train test_cuda; do ldd "$bin/$exe" | grep -E 'cuda|cublas|cudnn|nccl'; done
} 2>&1 | tee "$out/device.txt"
for exe in dtrain-train test_cuda test_cuda_models test_cuda_exchange mpirun; do
    missing=$(ldd "$bin/$exe" | grep 'not found')
    [ -z "$missing" ] || { echo "$exe: $missing" | tee -a "$out/device.txt"; exit 2; }
done
# dtrain --watch reads the GPU's utilization through NVML (a rank waiting on its GPU uses no CPU)
"$bin/dtrain" --gpus-per-node 1 --watch -v -- sleep 2 2>&1 | grep '^dtrain: watch:' | tee -a "$out/device.txt"
# the device's name in the profiles' file names: "NVIDIA H100 80GB HBM3" -> h100
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 |
    awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[A-Z][0-9]+$/) { print tolower($i); exit } }')
device=${device:-gpu}

train() {   # train LIMIT OPTION...: one dtrain-train on the GPU, its output on stdout, FAILED on failure
    limit=$1
    shift
    echo "== dtrain-train $*"
    timeout "$limit" "$bin/dtrain-train" --device cuda "$@" 2>&1 || echo "FAILED ($?): dtrain-train $*"
}

rc=0
# sanitize TOOL:BINARY:TEST... [-- DTRAIN_TRAIN_OPTIONS...]: compute-sanitizer over each test, one at a
# time, into sanitize.log; 1 when it found anything
sanitize() {
    sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    {
        for item in "$@"; do
            IFS=: read -r tool exe t <<ITEM
$item
ITEM
            echo "== $tool: $exe $t"
            timeout 150 "$sanitizer" --tool "$tool" --error-exitcode 9 "$bin/$exe" "$t" 2>&1 |
                grep -v -e '^\[ RUN' -e '^\[       OK' -e 'max error'
        done
    } >>"$out/sanitize.log" 2>&1
    cat "$out/sanitize.log"
    ! grep -q -e 'ERROR SUMMARY: [1-9]' -e 'RACECHECK SUMMARY: [1-9]' "$out/sanitize.log"
}
# kernels: where a step's GPU time goes, kernel by kernel (Nsight Compute, one metric a launch):
# KERNELS_ARGS, dtrain-train's options (ResNet-50 bf16 channels-last at batch 128 unless given),
# 3 steps with cuDNN's heuristic algorithms (the first step left out: no timed search under ncu),
# summed by bench/ncu_steps.py into kernels.txt, the CSV gzipped beside it; 1 when ncu failed
kernels() {
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    args=${KERNELS_ARGS:-"--precision bf16 --channels-last --model resnet50 --dataset synthetic:224x224x3 --batch-size 128"}
    # shellcheck disable=SC2086 # the options are words
    timeout "${KERNELS_LIMIT:-240}" "$ncu" --metrics gpu__time_duration.sum --csv "$bin/dtrain-train" --device cuda \
        --conv-algo heuristic $args --max-steps 3 --log-every 1 --eval-every 0 >"$root/kernels.csv" 2>"$out/kernels.err"
    ncu_rc=$?
    "$python" "$top/bench/ncu_steps.py" "$root/kernels.csv" 1 30 2>&1 | tee "$out/kernels.txt"
    gzip -c "$root/kernels.csv" >"$out/kernels.csv.gz"
    return $ncu_rc
}
case $what in tests | bench | speed | sanitize | short | kernels | all) ;;
    *) echo "usage: gpu_device_run.sh [tests|bench|speed|sanitize|short|kernels|all]"; exit 2 ;;
esac
if [ "$what" = kernels ]; then
    kernels || rc=1
    exit $rc
fi
if [ "$what" = sanitize ]; then
    sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    : >"$out/sanitize.log"
    kernels=""
    for tool in memcheck racecheck; do
        for t in test_linear test_convolutions test_batchnorm test_elementwise_pooling_and_loss test_optimizers \
            test_language_model_kernels; do
            kernels="$kernels $tool:test_cuda:$t"
        done
        for t in test_convolutions_channels_last test_batchnorm_channels_last test_pooling_channels_last; do
            kernels="$kernels $tool:test_cuda_layout:$t"
        done
    done
    # shellcheck disable=SC2086 # one word a test
    sanitize $kernels || rc=1
    for options in "--precision fp32" "--precision bf16" "--precision fp32 --cuda-graphs" "--channels-last --precision bf16"; do
        echo "== memcheck: ResNet-18 $options"
        # shellcheck disable=SC2086 # the options are words
        timeout 120 "$sanitizer" --tool memcheck --error-exitcode 9 "$bin/dtrain-train" --device cuda $options \
            --model resnet18 --dataset synthetic:28x28x1 --batch-size 16 --max-steps 4 --log-every 2 \
            --eval-every 0 2>&1 | tail -n 4
    done >>"$out/sanitize.log" 2>&1
    grep -q -e 'ERROR SUMMARY: [1-9]' "$out/sanitize.log" && rc=1
    exit $rc
fi
if [ "$what" = short ]; then
    # issue 51's prepared call: the CUDA tests (channels-last's first), the speed table against
    # PyTorch's ways, then compute-sanitizer over the channels-last kernels, each file written as it goes
    : >"$out/tests.log" && : >"$out/sanitize.log"
    for t in test_cuda_layout test_cuda test_cuda_models; do
        log=$root/$t.log
        timeout 200 "$bin/$t" >"$log" 2>&1 || echo "FAILED: $t exited $?" >>"$log"
        { echo "== $t"; cat "$log"; } >>"$out/tests.log"
        { grep -q '^\[  PASSED  \]' "$log" && ! grep -q -e '^\[  FAILED  \]' -e '^\[  SKIPPED \]' -e '^FAILED' "$log"; } ||
            rc=1
        tail -n 5 "$log"
    done
    grep -e '^\[  FAILED' -e 'FAILED:' -e 'error' "$out/tests.log" | head -n 20
    # where BERT-Base's bf16 step goes, layer by layer, at the benchmark's batch
    train 90 --precision bf16 --model bert-base --dataset synthetic-text:30522x128 --batch-size 32 --max-steps 12 \
        --log-every 4 --eval-every 0 --profile-out "$out/bert-base-$device-b32-bf16.json" >>"$out/device.txt"
    short_configs="resnet50:224x224x3:128:fp32:find resnet50:224x224x3:128:fp32:find:cl
resnet50:224x224x3:128:bf16:find resnet50:224x224x3:128:bf16:find:cl bert-base:seq128:32:bf16:heuristic"
    baseline=""
    [ ! -x "$bin/dtrain-train-baseline" ] || baseline="$bin/dtrain-train-baseline"
    BASELINE=$baseline CONFIGS=${CONFIGS:-$short_configs} ROUNDS=${ROUNDS:-1} COMPILE_PRECISIONS=${COMPILE_PRECISIONS:-bf16} \
        DEADLINE=$((${TOTAL:-330} - ($(date +%s) - started))) sh "$top/bench/gpu_vs_torch.sh" "$bin" "$python" \
        >"$out/bench.md" 2>&1
    cat "$out/bench.md"
    # shellcheck disable=SC2086 # one word a test
    sanitize ${SANITIZE:-memcheck:test_cuda:test_language_model_kernels memcheck:test_cuda_layout:test_batchnorm_channels_last \
        memcheck:test_cuda_layout:test_pooling_channels_last racecheck:test_cuda_layout:test_batchnorm_channels_last \
        memcheck:test_cuda_layout:test_convolutions_channels_last memcheck:test_cuda_layout:test_bf16_tensors_between_convolutions_stay_bf16 \
        memcheck:test_cuda_layout:test_bf16_resnet_blocks_keep_bf16_alone racecheck:test_cuda_layout:test_bf16_resnet_blocks_keep_bf16_alone} ||
        rc=1
    [ -z "${KERNELS:-}" ] || kernels || rc=1   # KERNELS=1: the kernel profile last
    echo "short: $(($(date +%s) - started)) s"
    exit $rc
fi
unit_tests="test_cuda test_cuda_models test_cuda_exchange"
[ "$what" != speed ] || unit_tests="test_cuda test_cuda_models"
if [ "$what" != bench ]; then
    : >"$out/tests.log"
    for t in $unit_tests; do
        log=$root/$t.log
        timeout 240 "$bin/$t" >"$log" 2>&1 || echo "FAILED: $t exited $?" >>"$log"
        { echo "== $t"; cat "$log"; } | tee -a "$out/tests.log"
        { grep -q '^\[  PASSED  \]' "$log" && ! grep -q -e '^\[  FAILED  \]' -e '^\[  SKIPPED \]' -e '^FAILED' "$log"; } ||
            rc=1
    done
fi
if [ "$what" = speed ]; then
    # a ResNet trained on the GPU follows the CPU's losses (the same seed and batches)
    for on in cpu cuda; do
        echo "== ResNet-18 on the $on"
        timeout 120 "$bin/dtrain-train" --device "$on" --model resnet18 --dataset synthetic:28x28x1 --batch-size 32 \
            --max-steps 20 --log-every 5 --eval-every 0 --lr 0.001 2>&1 || echo "FAILED ($?): ResNet-18 on the $on"
    done >"$out/smoke.log"
    cat "$out/smoke.log"
    grep -q FAILED "$out/smoke.log" && rc=1
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
    # every exchange method, host-staged, on 2-3 ranks sharing the GPU, against BSP's parameters;
    # the runs' files stay on the machine, a failing run's output is appended
    methods=/tmp/dtrain-device-methods
    timeout 240 sh "$top/bench/gpu_methods_check.sh" "$bin" "$bin/mpirun" cuda "$methods" >"$out/methods.log" 2>&1 ||
        echo "FAILED: gpu_methods_check.sh exited $?" >>"$out/methods.log"
    # the failing runs' logs, listed before any is appended to the file they are listed in
    failing=$(sed -n 's/.*(see \(.*\.log\)).*/\1/p' "$out/methods.log")
    for log in $failing; do
        echo "== $log"
        tail -n 20 "$log"
    done >>"$out/methods.log"
    cat "$out/methods.log"
    grep -q -e '^FAIL' "$out/methods.log" && rc=1
    {
        for precision in fp32 bf16; do
            for graphs in "" --cuda-graphs; do
                train 60 --precision "$precision" $graphs --model lenet --dataset synthetic --max-steps 100 \
                    --log-every 50 --eval-every 1 --lr 0.001
                train 60 --precision "$precision" $graphs --model resnet18 --dataset synthetic:32x32x3 \
                    --max-steps 60 --log-every 20 --eval-every 0 --lr 0.001
                train 60 --precision "$precision" $graphs --model transformer --dataset synthetic-text:30522x128 \
                    --batch-size 32 --max-steps 60 --log-every 20 --eval-every 0 --lr 0.0001
            done
        done
        echo "== NCCL between 2 ranks is refused on one GPU (NCCL's rule); its world of one is in test_cuda_exchange"
    } >"$out/smoke.log" 2>&1
    cat "$out/smoke.log"
    grep -q FAILED "$out/smoke.log" && rc=1
fi
if [ "$what" != tests ]; then
    # layer-by-layer GPU profiles for the emulated studies: the batch the reference method table uses
    train 120 --model resnet50 --dataset synthetic:224x224x3 --batch-size 64 --conv-algo find --max-steps 12 \
        --log-every 4 --eval-every 0 --profile-out "$out/resnet50-$device-b64.json" >>"$out/device.txt"
    train 120 --model bert-base --dataset synthetic-text:30522x128 --batch-size 8 --max-steps 12 \
        --log-every 4 --eval-every 0 --profile-out "$out/bert-base-$device-b8.json" >>"$out/device.txt"
    # PyTorch's kernels of the same ResNet-50 step, by kind, beside the profile's layers
    [ "$what" = speed ] ||
        timeout 120 "$python" "$top/bench/gpu_torch_layers.py" resnet50 224x224x3 64 fp32 >>"$out/device.txt" 2>&1
    tail -n 16 "$out/device.txt"
    baseline=""
    [ ! -x "$bin/dtrain-train-baseline" ] || baseline="$bin/dtrain-train-baseline"
    BASELINE=$baseline DEADLINE=$((${TOTAL:-420} - ($(date +%s) - started))) sh "$top/bench/gpu_vs_torch.sh" "$bin" \
        "$python" >"$out/bench.md" 2>&1
    cat "$out/bench.md"
fi
exit $rc
