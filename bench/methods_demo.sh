#!/bin/sh
# bench/methods_demo.sh BINDIR [OUTDIR] - make methods-demo: the reference method comparison,
# small, end to end, in a few minutes: the test cluster's links between the leaves shaped to
# 1 Gbit/s and then 10 Gbit/s, every exchange method at 2 and 4 emulated workers (every rank
# waits a CNN profile's layer times, scaled to 1000 samples/s a device, instead of computing: the
# links are what is measured), one run each, in time dilated 4 times (compute 4 times slower,
# links shaped to a quarter, rates reported at real time: the machine's own copies and sums
# shrink beside the work); then the reference table (mean +- std), the cost model's prediction
# beside each cell (the link's and each job size's allreduce times, measured by dtrain-commbench
# in the same run, brought to real time) and a plot, a line per method. Needs root (it starts the test cluster).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:?usage: methods_demo.sh BINDIR [OUTDIR]}" && pwd)
out=${2:-$here/../build/methods-demo}
profile=$here/profiles/cnn-cpu-b32.json
dilate=4
# (the CNN's gradients are 1.7 MB: links measured to 16M, each size also with 4 under way)
RATES="1gbit 10gbit" REPEATS=1 SIZES="2:1 4:1" STEPS=30 COMMBENCH=1 EMULATE=$profile EMULATE_RATE=1000 DILATE=$dilate \
    MAX_BYTES=16M \
    sh "$here/methods_shaped.sh" "$bin" "$out"
for rate in 1gbit 10gbit; do
    echo
    echo "## predicted beside measured at $rate (dtrain-analyze predict --records: the link's and each size's commbench tables)"
    sh "$here/predict_shaped.sh" "$bin" "$out" "$profile" 1000 "$dilate" "$rate" 2>/dev/null
done
"$bin/dtrain-analyze" plot --series method --where tag=10gbit -o "$out/methods-10gbit" "$out/runs" >/dev/null
echo
echo "methods-demo: records in $out/runs, the 10 Gbit/s plot in $out/methods-10gbit-{speedup,throughput}.png"
