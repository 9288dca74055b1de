"""bench/ncu_steps.py - where a training step's GPU time goes, kernel by kernel, from Nsight
Compute's CSV of a dtrain-train run (`ncu --csv --metrics gpu__time_duration.sum`: one row a kernel
launch, in launch order). Steps end at the optimizer's kernel (k_adam, k_sgd: one launch a step);
the first SKIP steps (cuDNN's and cuBLAS's first calls, the scratch buffers' growth) are left out
and the rest averaged. Printed: microseconds a step by kind (batch norm, convolution, GEMM, the bf16
casts, layout transposes, attention, layer norm, elementwise, optimizer), then the TOP kernels (template arguments
dropped), each with its launches a step and its share. ncu serialises the kernels and, by default,
runs them at base clocks with caches flushed: the sum is not the step's wall time, but the shares
say where it goes. Standard library only (the GPU machine has no package registry).
Usage: python3 bench/ncu_steps.py NCU_CSV [SKIP (1)] [TOP (25)]"""
import collections
import csv
import re
import sys

STEP_END = re.compile(r"\bk_(adam|sgd)\b")
KINDS = [  # the first pattern a kernel's name matches names its kind
    ("batch norm", r"k_partial_stats|k_normalise|k_finish_stats|k_partial_grads|k_input_grads|k_finish_grads|"
                   r"k_running_stats"),
    ("bf16 casts", r"k_to_bf16|k_from_bf16"),
    ("layout", r"k_filter_|k_to_channels_last|nhwcAddPadding"),
    ("optimizer", r"k_adam|k_sgd"),
    ("attention", r"k_fused_|attention|k_heads|softmax|k_drop_weights"),
    ("layer norm", r"layernorm"),
    ("convolution", r"xmma|cudnn|fprop|dgrad|wgrad|cask"),
    ("GEMM", r"nvjet|gemm|splitKreduce|cublas"),
    ("elementwise, pooling, loss", r"k_"),
]


def launches(path):
    """(kernel name, microseconds) for each launch in the file, in order."""
    header = None
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if "Kernel Name" in row and "Metric Value" in row:
                header = row
                continue
            if not header or len(row) != len(header):
                continue  # the program's own output, ncu's ==PROF== lines
            d = dict(zip(header, row))
            if d.get("Metric Name") != "gpu__time_duration.sum":
                continue
            value = float(d["Metric Value"].replace(",", ""))
            scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "nsecond": 1e-3, "ms": 1e3, "msecond": 1e3}
            yield d["Kernel Name"], value * scale.get(d["Metric Unit"], 1.0)


def short_name(name):
    """The kernel's name without its arguments and namespaces; dtrain's own (k_...) without their
    template arguments too (a library's kernel is told apart by its template's)."""
    name = re.sub(r"\(.*", "", name).replace("<unnamed>::", "").replace("dtrain_cuda::", "").replace("void ", "")
    return (re.sub(r"<.*>", "", name) if name.startswith("k_") else name)[-80:]


def kind_of(name):
    for kind, pattern in KINDS:
        if re.search(pattern, name):
            return kind
    return "other"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path, skip = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    steps, current = [], []
    for name, us in launches(path):
        current.append((name, us))
        if STEP_END.search(name):
            steps.append(current)
            current = []
    if len(steps) <= skip:
        sys.exit("%s: %d whole steps (each ends at k_adam or k_sgd), none left after skipping %d: profile more"
                 " steps" % (path, len(steps), skip))
    kept = steps[skip:]
    per_kernel, calls, per_kind = collections.Counter(), collections.Counter(), collections.Counter()
    for step in kept:
        for name, us in step:
            per_kernel[short_name(name)] += us / len(kept)
            calls[short_name(name)] += 1 / len(kept)
            per_kind[kind_of(name)] += us / len(kept)
    total = sum(per_kind.values())
    print("%s: %d steps averaged (%d left out), %.0f launches and %.2f ms of kernel time a step"
          % (path, len(kept), skip, sum(calls.values()), total / 1000))
    for kind, us in per_kind.most_common():
        print("  %-28s %9.1f us %5.1f%%" % (kind, us, 100 * us / total))
    print("kernels:")
    for name, us in per_kernel.most_common(top):
        print("  %9.1f us %5.1f%% %6.1f a step  %s" % (us, 100 * us / total, calls[name], name))


if __name__ == "__main__":
    main()
