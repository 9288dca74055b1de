#!/bin/sh
# bench/blind.sh BINDIR [OUTDIR] - make blind: the cost model held against runs it never saw. For
# each setting of bench/blind-grid.txt (a model's profile, a link, a job size, all seven methods):
# the test cluster up and the link shaped, the link, the job's allreduce and ByteScheduler-PS's
# traffic alone measured (dtrain-commbench), then the predictions made from the profile and those measurements alone and
# saved (dtrain-analyze predict --save, printed), then the runs (bench/methods_shaped.sh), then
# dtrain-analyze compare: every cell's error, the mean absolute error, the worst cell, the best
# method picked or not. At the end each half of the grid (tune, check) summed on its own.
# Needs root (the test cluster). Environment: HALVES ("tune check"), SETTINGS (names from the grid;
# all of HALVES by default), REPEATS (2), STEPS (40), GRID (bench/blind-grid.txt), KEEP_DISTORTED
# (sum a setting's cells even where bench/link_check.sh finds that this machine distorts the link;
# by default such a setting is run and printed, left out of its half's sum), DILATE (K: every
# setting's time dilated K instead of the grid's: time's scale on this machine, not the setting;
# the link is shaped to LINK / K, the devices wait K times their profile, and link_check, the
# predictions and the runs all see the same K: for a machine that distorts the link at the grid's
# dilation and keeps up at a higher one). About 12 minutes a setting on this project's 2-core
# machine at the grid's dilation (the links measured, 14 runs). SETTINGS=- runs nothing and sums
# again what OUTDIR holds.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:?usage: blind.sh BINDIR [OUTDIR]}" && pwd)
out=${2:-$here/../build/blind}
mkdir -p "$out"
out=$(cd "$out" && pwd)
grid=${GRID:-$here/blind-grid.txt}
if [ -n "${DILATE:-}" ] && ! echo "$DILATE" | awk '{ exit !($0 ~ /^[0-9]+(\.[0-9]+)?$/ && $0 + 0 > 0) }'; then
    echo "blind.sh: DILATE \"$DILATE\" is not a number above 0 (8: time runs 8 times slower)" >&2
    exit 2
fi
halves=${HALVES:-tune check}

# setting HALF NAME PROFILE RATE BATCH DILATE LINK SIZE: one setting, predicted, run, compared
setting() {
    name=$2 profile=$here/profiles/$3 rate=$4 batch=$5 dilate=${DILATE:-$6} link=$7 size=$8
    n=${size%%:*} per=${size#*:}
    servers=colocated   # where methods_shaped.sh puts them
    [ "$per" != 1 ] || [ "$n" -ge 4 ] || servers=1
    # the nodes behind each shaped link, as methods_shaped.sh places the job: two a leaf (gn01+gn02,
    # gn03+gn04), but a 2-node job without a server node of its own is gn[01,03], a node a leaf
    # (told 2, the model had its servers' traffic cross no link: +250% on r50-2.5g-2x2)
    per_link=2
    [ "$n" != 2 ] || [ "$servers" = 1 ] || per_link=1
    model=$(sed -n 's/^ *"model": *"\([^"]*\)".*/\1/p' "$profile" | head -n 1)
    case $model in   # the links measured up to a whole gradient (ResNet-18's 45 MB, BERT-Base's 440 MB)
        bert*) data=synthetic-text:30522x64 bytes=512M ;;
        resnet18) data=synthetic:224x224x3 bytes=64M ;;
        resnet50) data=synthetic:224x224x3 bytes=128M ;;
        *) data=synthetic:224x224x3 bytes=256M ;;
    esac
    echo "== $1 $name: $model at $size, $link dilated $dilate, $rate samples/s a device" >&2
    rm -rf "${out:?}/$name" && mkdir -p "$out/$name"
    # run by methods_shaped.sh once the links are measured, before the runs: the predictions, saved
    # and printed (on stderr: the runs' table goes to runs.md)
    BEFORE_RUNS="SAVE='$out/$name/predictions.json' sh '$here/predict_shaped.sh' '$bin' '$out/$name/dir' '$profile' \
'$rate' '$dilate' '$link' --batch '$batch' --nodes '$n' --gpus-per-node '$per' --servers '$servers' \
--nodes-per-link '$per_link' \
> '$out/$name/predicted.md' && cat '$out/$name/predicted.md' >&2" \
        PIECES=1 REPEATS=${REPEATS:-2} STEPS=${STEPS:-40} BASELINE=0 COMMBENCH=1 MAX_BYTES=$bytes EMULATE=$profile \
        EMULATE_RATE=$rate DILATE=$dilate RATES=$link SIZES=$size MODEL=$model DATASET=$data BATCH=$batch \
        sh "$here/methods_shaped.sh" "$bin" "$out/$name/dir" > "$out/$name/runs.md"
    "$bin/dtrain-analyze" compare --predictions "$out/$name/predictions.json" "$out/$name/dir/runs" |
        tee "$out/$name/compare.md"
    if ! sh "$here/link_check.sh" "$out/$name/dir/ours-$link.1.out" "$link" "$dilate" > "$out/$name/distorted"; then
        echo "$name: $(cat "$out/$name/distorted"); left out of the $1 half's sum (KEEP_DISTORTED=1 keeps it)" |
            tee -a "$out/$name/compare.md" >&2
    else
        rm -f "$out/$name/distorted"
    fi
}

mkdir -p "$out"
for half in $halves; do
    while read -r h name profile rate batch dilate link size; do
        case "$h" in "$half") ;; *) continue ;; esac
        case " ${SETTINGS:-$name} " in *" $name "*) ;; *) continue ;; esac
        setting "$h" "$name" "$profile" "$rate" "$batch" "$dilate" "$link" "$size"
    done < "$grid"
done
for half in $halves; do   # each half on its own: the checking half is the model's grade
    set --
    left_out=""
    for f in "$out"/*/predictions.json; do
        [ -f "$f" ] || continue   # none yet: the pattern itself
        name=$(basename "$(dirname "$f")")
        grep -q "^$half  *$name " "$grid" || continue
        if [ -f "$out/$name/distorted" ] && [ -z "${KEEP_DISTORTED:-}" ]; then
            left_out="$left_out
left out of the $half half: $name ($(cat "$out/$name/distorted"))"
            continue
        fi
        set -- "$@" --predictions "$f" "$out/$name/dir/runs"
    done
    [ $# -gt 0 ] || [ -n "$left_out" ] || continue
    echo
    echo "## the $half half"
    [ -z "$left_out" ] || echo "${left_out#?}"
    if [ $# -gt 0 ]; then
        "$bin/dtrain-analyze" compare "$@" | grep -E '^(Error|All settings):|^## ' || true
    else
        echo "no setting of the $half half left to sum"
    fi
done
