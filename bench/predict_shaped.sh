#!/bin/sh
# bench/predict_shaped.sh BINDIR DIR PROFILE RATE DILATE LINK [PREDICT-OPTIONS...] - the cost model
# beside a bench/methods_shaped.sh run in DIR: dtrain-analyze predict --records over the runs of tag
# LINK, with the link's dtrain-commbench table (DIR/link-LINK.json, predict --inter) and the
# allreduce measured over each job size's ranks (DIR/allreduce-LINK-*.json, predict --allreduce)
# and, where the servers sat beside the workers, their round (DIR/colocated-LINK-*.json, predict
# --servers-round), the link a direction at a time where measured (DIR/pushpull-LINK.json, predict
# --servers-link), ByteScheduler-PS's traffic alone where measured (DIR/pieces-LINK-*.json and
# DIR/pieces-pushpull-LINK-*.json, predict --servers-pieces), a node's own link where workers
# shared one (DIR/intra-LINK.json, predict --intra), the profile scaled to RATE samples/s a device, times divided by the run's
# dilation. The test cluster's nodes sit two behind each shaped link (gn01+gn02, gn03+gn04):
# --nodes-per-link 2. SAVE=FILE: before the runs, the predictions saved to FILE for dtrain-analyze
# compare (predict --save, the runs' tag LINK) instead of held against DIR/runs.
set -eu
bin=$1 dir=$2 profile=$3 rate=$4 dilate=$5 link=$6
shift 6
for f in "$dir"/allreduce-"$link"-*.json; do
    [ ! -e "$f" ] || set -- "$@" --allreduce "$f"
done
for f in "$dir"/colocated-"$link"-*.json; do
    [ ! -e "$f" ] || set -- "$@" --servers-round "$f"
done
for f in "$dir"/pieces-"$link"-*.json "$dir"/pieces-pushpull-"$link"-*.json; do
    [ ! -e "$f" ] || set -- "$@" --servers-pieces "$f"
done
[ ! -e "$dir/pushpull-$link.json" ] || set -- "$@" --servers-link "$dir/pushpull-$link.json"
[ ! -e "$dir/intra-$link.json" ] || set -- "$@" --intra "$dir/intra-$link.json"
if [ -n "${SAVE:-}" ]; then
    set -- --save "$SAVE" "$@"
else
    set -- --records "$dir/runs" "$@"
fi
exec "$bin/dtrain-analyze" predict "$profile" --rate "$rate" --inter "$dir/link-$link.json" --dilate "$dilate" \
    --tag "$link" --nodes-per-link 2 "$@"
