#!/bin/sh
# bench/seq_accuracy.sh BINDIR [MODEL] [EPOCHS] [LR] - does dtrain's language model learn as
# PyTorch's does? dtrain-train --export-run writes its initial weights and WordNet's encoded
# glosses; dtrain-train then trains from there and PyTorch (bench/seq_accuracy.py, Debian's
# python3-torch) trains the same model from the same weights on the same tokens with the same
# optimizer, batch, epochs and dropout (its own batch order and dropout draws). Both on 2 threads.
# Prints the test accuracy of each and the difference (the goal: within 1 point).
set -eu
bin=$1 model=${2:-transformer:2x64x2} epochs=${3:-1} lr=${4:-0.0005}
here=$(dirname "$0")
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
    { echo "seq_accuracy: needs python3-torch (make bench installs it)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
options="--model $model --dataset wordnet --batch-size 32 --epochs $epochs --lr $lr --threads 2"
# shellcheck disable=SC2086  # the options are words
"$bin/dtrain-train" $options --export-run "$dir/run" 2>/dev/null
# shellcheck disable=SC2086
ours=$("$bin/dtrain-train" $options --log-every 100000 --quiet 2>&1 | sed -n 's/.*final test accuracy \([0-9.]*\).*/\1/p')
theirs=$(/usr/bin/python3 "$here/seq_accuracy.py" "$dir/run" 2 "$lr")
version=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)')
echo "| model | data | epochs, batch, lr | dtrain-train test accuracy | PyTorch $version (${theirs% *} steps) | difference |"
echo "|---|---|---|---|---|---|"
echo "$model $epochs $lr $ours ${theirs#* }" |
    awk '{printf "| %s | wordnet | %d, 32, %s | %.4f | %.4f | %+.2f points |\n", $1, $2, $3, $4, $5, 100 * ($4 - $5)}'
