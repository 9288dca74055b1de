#!/bin/sh
# bench/gpu_bundle.sh - packs what a GPU machine without this one's Debian packages needs to run
# dtrain's CUDA tests and GPU benchmark (make gpu-bundle): dtrain-train, the CUDA tests
# (BUILD/gpu/test_cuda*) and Open MPI's mpirun as built here,
# every shared library they load except the C runtime and the GPU's own (libcudart, cuBLAS, cuDNN,
# NCCL: the GPU machine brings those, matching its driver), and Open MPI's plugins, help texts and
# PMIx under the prefix layout that OPAL_PREFIX relocates. Built on Debian 12 (glibc 2.36), they
# run on any newer glibc. One xz archive, since the libraries (OpenBLAS, oneDNN) are ~80 MB as
# files and ~15 MB packed. BASELINE=FILE adds another dtrain-train (an earlier commit's, built
# here) as bin/dtrain-train-baseline: gpu_vs_torch.sh then runs it beside, on the same GPU.
# Usage: [BASELINE=FILE] bench/gpu_bundle.sh BUILD OUTDIR
set -eu
build=$1
out=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/root"
cp "$build/bin/dtrain-train" "$build/bin/dtrain" "$build"/gpu/test_cuda* "$stage/bin/"
[ -z "${BASELINE:-}" ] || cp "$BASELINE" "$stage/bin/dtrain-train-baseline"
# Open MPI's launcher: the GPU machine has none, and the exchange methods' check runs 2-3 ranks
cp -L /usr/bin/orterun "$stage/bin/mpirun"
for exe in "$stage"/bin/*; do ldd "$exe"; done | awk '$3 ~ /^\// { print $3 }' | sort -u |
    while read -r lib; do
        case ${lib##*/} in
            libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | libgcc_s.so* | libstdc++.so* | ld-linux*) ;;
            libcuda.so* | libcudart.so* | libcublas*.so* | libcudnn*.so* | libnccl.so*) ;;
            *) cp -L "$lib" "$stage/lib/" ;;
        esac
    done
for dir in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi; do
    mkdir -p "$stage/root${dir%/*}"
    cp -a "$dir" "$stage/root${dir%/*}/"
done
mkdir -p "$out"
tar -C "$stage" -cf - . | xz -T0 -6 >"$out/bundle.tar.xz.part"
mv "$out/bundle.tar.xz.part" "$out/bundle.tar.xz"
echo "$out/bundle.tar.xz: $(du -h "$out/bundle.tar.xz" | cut -f1) ($(find "$stage/lib" -type f | wc -l) libraries; carry $out)"
