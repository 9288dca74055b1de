#!/bin/sh
# bench/seq_vs_torch.sh BINDIR - the language models against PyTorch (Debian's python3-torch) on the
# same model, batch, sequence length and threads, random token ids, Adam, both pinned to the same
# cores and run alternately; each side's best of three, the first steps left out (dtrain: 2, from
# its cumulative Step lines; PyTorch: 3 untimed). The shapes: transformer at batch 32,
# length 128, and bert-base at batch 8, length 64, on 1 and 2 threads. samples/s are sentences a
# second (the reference experiments' data/sec), tokens/s = samples/s x length.
set -eu
bin=$1
here=$(dirname "$0")
vocab=30522
max() { echo "$1 $2" | awk '{print ($1 > $2) ? $1 : $2}'; }
version=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) ||
    { echo "seq_vs_torch: needs python3-torch (make bench installs it)" >&2; exit 1; }
echo "| model | batch x length | threads | dtrain-train samples/s | tokens/s | PyTorch $version samples/s | ratio |"
echo "|---|---|---|---|---|---|---|"
for shape in transformer:32:128:6 bert-base:8:64:4; do
    model=${shape%%:*} rest=${shape#*:}
    batch=${rest%%:*} rest=${rest#*:}
    len=${rest%%:*} steps=${rest#*:}
    for threads in 1 2; do
        cores=$(seq -s, 0 $((threads - 1)))
        ours=0 theirs=0
        for _ in 1 2 3; do
            r=$(DATASET=synthetic-text:${vocab}x$len sh "$here/dtrain_rate.sh" "$bin" "$model" "$steps" "$threads" "$batch" 2)
            ours=$(max "${r% *}" "$ours")
            t=$(taskset -c "$cores" /usr/bin/python3 "$here/seq_peer.py" "$model" "$batch" "$len" "$threads" "$steps" "$vocab")
            theirs=$(max "${t% *}" "$theirs")
        done
        echo "$model $batch $len $threads $ours $theirs" |
            awk '{printf "| %s | %d x %d | %d | %.2f | %.0f | %.2f | %.2fx |\n", $1, $2, $3, $4, $5, $5 * $3, $6, $5 / $6}'
    done
done
