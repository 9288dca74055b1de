#!/bin/sh
# bench/gpu_device_run.sh - on a GPU machine: unpacks .device/bundle.tar.xz (make gpu-bundle),
# finds the machine's CUDA libraries (its /usr/local/cuda, else the nvidia-* Python wheels next to
# PyTorch), then runs the CUDA tests, a short LeNet and ResNet run of each precision, and the
# benchmark against PyTorch eager (bench/gpu_vs_torch.sh). Everything it prints is also written
# to $OUT (or ./gpu-out) as test_cuda.log, test_cuda_exchange.log, methods.log (every exchange
# method host-staged on ranks sharing the GPU: bench/gpu_methods_check.sh), smoke.log and bench.md.
# Usage: sh bench/gpu_device_run.sh [tests|bench|all]   (env: PYTHON, and gpu_vs_torch.sh's)
set -u
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
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$out/gpu.txt"
for exe in dtrain-train test_cuda test_cuda_exchange mpirun; do
    missing=$(ldd "$bin/$exe" | grep 'not found')
    [ -z "$missing" ] || { echo "$exe: $missing"; exit 2; }
done

rc=0
if [ "$what" != bench ]; then
    for t in test_cuda test_cuda_exchange; do
        "$bin/$t" 2>&1 | tee "$out/$t.log"
        { grep -q '^\[  PASSED  \]' "$out/$t.log" && ! grep -q -e '^\[  FAILED  \]' -e '^\[  SKIPPED \]' "$out/$t.log"; } || rc=1
    done
    # every exchange method, host-staged, on 2-3 ranks sharing the GPU, against BSP's parameters
    sh "$top/bench/gpu_methods_check.sh" "$bin" "$bin/mpirun" cuda "$out/methods" 2>&1 | tee "$out/methods.log"
    grep -q '^FAIL' "$out/methods.log" && rc=1
    {
        for precision in fp32 bf16; do
            for model in lenet:synthetic resnet18:synthetic:32x32x3; do
                "$bin/dtrain-train" --device cuda --precision "$precision" --model "${model%%:*}" \
                    --dataset "${model#*:}" --max-steps 100 --log-every 50 --eval-every 1 --lr 0.001 --quiet ||
                    echo "FAILED: $model $precision"
            done
        done
    } 2>&1 | tee "$out/smoke.log"
    grep -q FAILED "$out/smoke.log" && rc=1
fi
if [ "$what" != tests ]; then
    sh "$top/bench/gpu_vs_torch.sh" "$bin" "$python" 2>&1 | tee "$out/bench.md"
fi
exit $rc
