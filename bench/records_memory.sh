#!/bin/sh
# bench/records_memory.sh BINDIR [MB] - what dtrain-analyze table holds for a big records file: MB
# (1024) of run records of each of two kinds (dtrain-train's record of an emulated 3-rank run,
# about 950 bytes a line, and a version-1 record of one rank, about 650: tests/test_records_memory.c's
# lines), each line another job, tabled with the largest resident size measured (/usr/bin/time),
# beside the file's size: the goal is a 1 GB file in at most 1.5 GB. Scratch files in a directory
# of this run's own, removed at the end.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:?usage: records_memory.sh BINDIR [MB]}" && pwd)
mb=${2:-1024}
[ -x /usr/bin/time ] || { echo "records_memory: needs /usr/bin/time (Debian's time package)" >&2; exit 1; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/dtrain-records-memory.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
lines=$here/../tests/fixtures/memory/record-lines.txt   # the test's two lines, "@" where the job id goes
echo "| records | file | lines | largest resident size | to the file | seconds |"
echo "|---|---|---|---|---|---|"
kind=0
while IFS= read -r line; do
    kind=$((kind + 1))
    awk -v line="$line" -v bytes=$((mb * 1048576)) 'BEGIN {
        split(line, part, "@")
        for (i = 0; size < bytes; i++) { s = part[1] (100000 + i) part[2]; print s; size += length(s) + 1 } }' \
        > "$scratch/records.jsonl"
    size=$(wc -c < "$scratch/records.jsonl")
    count=$(wc -l < "$scratch/records.jsonl")
    # (exit 2 where a kind has no 1-rank baseline to speed up from: the runs are read all the same)
    /usr/bin/time -f "%M %e" -o "$scratch/time" "$bin/dtrain-analyze" table "$scratch/records.jsonl" \
        > "$scratch/table.md" 2> "$scratch/err" || true
    grep -q "^table: $count runs read" "$scratch/err" ||
        { echo "records_memory: dtrain-analyze table did not read the $count runs:" >&2; cat "$scratch/err" >&2; exit 1; }
    read -r kb seconds <<EOF
$(tail -n 1 "$scratch/time")
EOF
    what=$([ "$kind" = 1 ] && echo "3-rank emulated runs" || echo "1-rank version-1 runs")
    awk -v w="$what" -v s="$size" -v l="$count" -v k="$kb" -v t="$seconds" 'BEGIN {
        printf "| %s | %.0f MB | %d | %.0f MB | %.2f | %s |\n", w, s / 1048576, l, k / 1024, k * 1024 / s, t }'
done < "$lines"
