#!/bin/sh
# bench/analyze_corpus.sh BIN CORPUS_DIR - how fast dtrain-analyze reads a study of 10,000 runs.
# Makes the corpus once (bench/make_corpus.py: records + slurm-%j.out logs, ~560 MB), then times,
# best of 3 with the files in the page cache: the table from the records, the throughput table from
# the logs, and as the peer on the same bytes grep -c (reading and scanning lines, no parsing).
set -eu
bin=$1 corpus=$2
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$corpus/done" ] || { /usr/bin/python3 "$here/make_corpus.py" "$corpus" 10000 && touch "$corpus/done"; }

best() {   # best CMD...: the least wall time of 3 runs, in seconds
    b=
    for _ in 1 2 3; do
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>&1
        t=$(echo "$(date +%s.%N) - $t0" | bc)
        if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
    done
    echo "$b"
}
mb() { du -sbc "$@" | tail -n 1 | cut -f 1 | awk '{printf "%.1f", $1 / 1e6}'; }
rate() { awk -v b="$1" -v t="$2" 'BEGIN { printf "%.0f", b / t }'; }
secs() { awk -v t="$1" 'BEGIN { printf "%.3f", t }'; }

records=$corpus/records.jsonl logs=$corpus/logs
runs=$(wc -l <"$records")
rec_mb=$(mb "$records") log_mb=$(mb "$logs")
cat "$records" "$logs"/* >/dev/null   # into the page cache
t_table=$(best "$bin/dtrain-analyze" table "$records")
t_rgrep=$(best grep -c '"exit_state":"completed"' "$records")
t_tput=$(best "$bin/dtrain-analyze" throughput "$logs")
t_lgrep=$(best grep -rc 'data/sec' "$logs")
echo "dtrain-analyze on $runs runs: $rec_mb MB of records, $log_mb MB of logs (best of 3, warm cache, 1 process)"
echo "| input | command | seconds | MB/s | peer: grep -c over the same bytes, MB/s |"
echo "|---|---|---|---|---|"
echo "| records, $rec_mb MB | table | $(secs "$t_table") | $(rate "$rec_mb" "$t_table") | $(rate "$rec_mb" "$t_rgrep") |"
echo "| logs, $log_mb MB | throughput | $(secs "$t_tput") | $(rate "$log_mb" "$t_tput") | $(rate "$log_mb" "$t_lgrep") |"
