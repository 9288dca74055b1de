#!/bin/sh
# bench/methods_shaped.sh BINDIR [OUTDIR] - the reference experiments' method comparison on this machine:
# the test cluster (tests/cluster/: 4 nodes, gn01+gn02 on one leaf, gn03+gn04 on the other) with the
# links between the leaves shaped to each of RATES, every gradient-exchange method at 2 and 4
# workers, REPEATS runs each, one job at a time (chained by --dependency) through the project's sbatch
# template; dtrain-analyze throughput turns the records into the reference table (mean +- std of
# samples/s). Beside it, in the same run, dtrain-commbench's busbw against raw MPI_Allreduce between
# two nodes across the shaped link (the goal: >= 0.95 from 4 MB up).
#
# Placement: 2 workers on gn01 and gn03 (their allreduce crosses the shaped link), 4 on gn01-gn04,
# one rank per node; parameter servers at 2 workers get a node of their own (gn01, gn02 train, gn03
# serves: both pushes cross the link), at 4 workers they are colocated (--ps-colocated, 2 ranks per
# node). The nodes share this machine's 2 cores: from 8 workers the CPU, not the link, bounds what
# is measured (4 workers with their servers, 8 ranks, are not bound: the same rates at twice the
# dilation, docs/studies/2026-11-26-colocated-servers.md); the rates are real, the compute is not
# a GPU's.
# Needs root (it starts the test cluster). Environment: RATES ("1gbit 10gbit"), REPEATS (3), MODEL
# (cnn), DATASET (fashion-mnist; a profile's shapes must match: synthetic:224x224x3 for the
# ResNet profiles), BATCH (32), STEPS (60), METHODS (all seven), SIZES (workers as NODES:RANKS_PER_NODE,
# "2:1 4:1"; parameter servers get a node of their own where one is free and a node has one
# worker, else sit beside the workers, one per node), PS_SIZES (the sizes the parameter-server methods
# run at, SIZES unless given: a node of the test cluster does not take 4 workers and a server), EMULATE (a profile: every rank waits its
# layers' times instead of computing, dtrain-train --emulate), EMULATE_RATE, DILATE (K: the
# emulated compute K times slower and the links shaped to RATE / K, rates reported at real time:
# the machine's own copies and sums shrink beside the work), COMMBENCH
# (repeats of the busbw comparison, 3; the first writes OUTDIR/link-RATE.json, the link's
# measured times for dtrain-analyze predict --inter, 4K to MAX_BYTES, 256M: a model's whole
# gradient in one allreduce is measured, not extrapolated; each size also with INFLIGHT, 4,
# operations under way at once: the rate the layer-wise methods' and the servers' pieces see);
# where parameter-server methods run, the same link a direction at a time (--op pushpull, a worker
# and a server: a push, then its sum back), OUTDIR/pushpull-RATE.json (predict --servers-link).
# Then the allreduce over all the ranks of each size, OUTDIR/allreduce-RATE-WORKERS.json
# (predict --allreduce), with INFLIGHT too; where parameter servers sit beside the workers, their
# round (dtrain-commbench --op colocated-ranks: a worker and a server rank a node, as dtrain-train
# lays them out), OUTDIR/colocated-RATE-NODES.json.
# PIECES=1, where bytescheduler-ps is among METHODS: its traffic alone in each layout it ran in
# (dtrain-commbench --partition-bytes 4096000, from PIECES_MIN_BYTES, 1M, to MAX_BYTES; --op
# colocated-ranks as above, or --op pushpull to a server of its own), OUTDIR/pieces-RATE-NODES.json
# and pieces-pushpull-RATE-WORKERS.json, to hold the cost model's schedule against.
# REPEATS=0: the links and allreduces measured, no training runs. The links are measured before
# the runs; BEFORE_RUNS (a shell command) runs between the two, with the cluster up and the link
# shaped (bench/blind.sh predicts there). BASELINE=0: no 1-worker run. TRAIN_OPTIONS: more
# dtrain-train options for every run (--timeline OUTDIR/tl, --credit-bytes N).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin=$(cd "${1:?usage: methods_shaped.sh BINDIR [OUTDIR]}" && pwd)
out=${2:-$top/build/bench-methods}
cluster=$top/tests/cluster
# a cluster of its own (namespaces and directory named by the id): another suite may run beside
export DTRAIN_CLUSTER_ID="${DTRAIN_CLUSTER_ID:-dtc$$}"
# shellcheck source=../tests/cluster/cluster.conf.sh
. "$cluster/cluster.conf.sh"
[ "$(id -u)" = 0 ] || { echo "methods_shaped: needs root (it starts the test cluster)" >&2; exit 1; }
rates=${RATES:-1gbit 10gbit}
for rate in $rates; do
    [ "$rate" = off ] || tc_rate_bits "$rate" >/dev/null ||
        { echo "methods_shaped: RATES: \"$rate\" is not a rate as tc writes it (5gbit, 500mbit) or off" >&2; exit 2; }
done
repeats=${REPEATS:-3}
methods=${METHODS:-$("$bin/dtrain-train" --list-methods | tr "\n" " ")}
sizes=${SIZES:-2:1 4:1}
ps_sizes=${PS_SIZES:-$sizes}
train="--model ${MODEL:-cnn} --dataset ${DATASET:-fashion-mnist} --batch-size ${BATCH:-32} --max-steps ${STEPS:-60} --eval-every 0 \
--log-every 10 -q --timeout 5 ${TRAIN_OPTIONS:-}"
if [ -n "${EMULATE:-}" ]; then
    train="$train --emulate $(cd "$(dirname "$EMULATE")" && pwd)/$(basename "$EMULATE") --dilate ${DILATE:-1}"
    [ -z "${EMULATE_RATE:-}" ] || train="$train --emulate-rate $EMULATE_RATE"
    # More ranks than cores, most of them waiting: Open MPI's progress loop yields the core
    # instead of spinning (what it does by itself when it knows a node is oversubscribed; under
    # srun it does not know), so a rank with work to do gets it.
    export OMPI_MCA_mpi_yield_when_idle=1
fi

rm -rf "$out" && mkdir -p "$out"
out=$(cd "$out" && pwd)   # the jobs run elsewhere
"$cluster/down.sh"
trap '"$cluster/down.sh"' EXIT
trap 'exit 130' INT TERM   # so that the EXIT trap brings the cluster down
"$cluster/up.sh" >/dev/null
# The nodes share this machine's cores: binding each node's first rank to "its" core 0 would pile
# every node's first rank onto one core (and busy-polling MPI collectives starve the rest).
export SLURM_CONF="$DTC_DIR/etc/slurm.conf" PATH="$DTC_DIR/bin:$PATH" DTRAIN_BIN="$bin" DTRAIN_THREADS=1 \
    DTRAIN_LAUNCH_OPTIONS=--no-bind
# The "nodes" share this machine's cores: the template's pre-flight check measures one pair at a time.
export DTRAIN_CHECK_OPTIONS="${DTRAIN_CHECK_OPTIONS:---one-at-a-time --bytes 1M --iters 2 --threshold 0.9}"
export DTRAIN_RUN_DIR="$out/runs"
cd "$out"

last=""   # the job submitted last: each job waits for it (one run at a time, none sharing a link)
submit() {   # submit SBATCH-ARGS...: queued after the last one
    last=$(sbatch --parsable ${last:+--dependency=afterany:$last} "$@")
}

wait_last() {   # until the last job has left the queue
    while [ -n "$(squeue -h -j "$last" 2>/dev/null)" ]; do sleep 0.5; done
}

job() {   # job NODES TASKS_PER_NODE NODELIST TRAINER-OPTIONS...: one run, queued
    n=$1 per=$2 nodes=$3
    shift 3
    # shellcheck disable=SC2086  # $train: options, split on purpose
    submit -N "$n" --ntasks-per-node="$per" --gpus-per-node=0 --exclusive -w "$nodes" -o "$out/%x-%j.out" \
        -J bench "$top/sbatch/dtrain.sbatch" $train "$@"
}

nodes_of() {   # nodes_of N: the N nodes a job takes (2: one on each leaf, so the link is crossed)
    case $1 in 1) echo gn01 ;; 2) echo 'gn[01,03]' ;; 3) echo 'gn[01-03]' ;; *) echo 'gn[01-04]' ;; esac
}

# commbench_at NAME NODELIST N PER OPTIONS...: dtrain-commbench over N x PER ranks on NODELIST, into
# NAME.out (its own variable names: the callers' loops use n and per)
commbench_at() {
    cb_name=$1 cb_list=$2 cb_n=$3 cb_per=$4
    shift 4
    submit -N "$cb_n" --ntasks-per-node="$cb_per" --exclusive -w "$cb_list" -o "$out/$cb_name.out" -J commbench --wrap \
        "srun --mpi=pmix $bin/dtrain --gpus-per-node 0 -- $bin/dtrain-commbench --min-bytes 4M --max-bytes 32M --iters 4 --warmup 1 $*"
}

commbench_on() {   # commbench_on NAME NODES PER OPTIONS...: the same on nodes_of NODES
    cb_on_name=$1 cb_on_n=$2 cb_on_per=$3
    shift 3
    commbench_at "$cb_on_name" "$(nodes_of "$cb_on_n")" "$cb_on_n" "$cb_on_per" "$@"
}

commbench() {   # commbench NAME [--raw]: dtrain-commbench on 2 nodes across the link, into NAME.out
    name=$1
    shift
    commbench_on "$name" 2 1 "$@"
}

dilate=${DILATE:-1}
shaped() {   # shaped RATE: the link's speed in dilated time, RATE / DILATE in tc's words (10gbit/4: 2500mbit)
    [ "$1" != off ] || { echo off; return; }
    tc_rate_bits "$1" | awk -v k="$dilate" '{ kbit = int($1 / 1000 / k)
        if (kbit % 1000 == 0) printf "%dmbit\n", kbit / 1000; else printf "%dkbit\n", kbit }'
}
for rate in $rates; do
    "$cluster/link.sh" "$(shaped "$rate")"
    export DTRAIN_TAG="$rate"
    for k in $(seq "${COMMBENCH:-3}"); do
        if [ "$k" = 1 ]; then   # from 4K: the link's measured curve at a small layer's size too
            commbench "ours-$rate.$k" --min-bytes 4K --max-bytes "${MAX_BYTES:-256M}" --inflight "${INFLIGHT:-4}" \
                --json "$out/link-$rate.json"
        else
            commbench "ours-$rate.$k"
        fi
        commbench "raw-$rate.$k" --raw
    done
    case $methods in *-ps*)   # the link a direction at a time, as a server's pushes and pulls cross it
        commbench "pushpull-$rate" --op pushpull --min-bytes 4K --max-bytes "${MAX_BYTES:-256M}" \
            --inflight "${INFLIGHT:-4}" --json "$out/pushpull-$rate.json" ;;
    esac
    for size in $sizes; do   # the allreduce at every job size, all its ranks: predict --allreduce
        n=${size%%:*} per=${size#*:}
        [ $((n * per)) -lt 2 ] || commbench_on "allreduce-$rate-$n-$per" "$n" "$per" --min-bytes 4K \
            --max-bytes "${MAX_BYTES:-256M}" --inflight "${INFLIGHT:-4}" --json "$out/allreduce-$rate-$((n * per)).json"
    done
    case " $sizes" in *" "*:[2-9]*)   # workers sharing a node: a node's own link (predict --intra), as
        # its ranks get it here (Open MPI's shared memory between processes of one node, not
        # shaped), where node-local sums hand every piece to the node's root and back
        commbench_on "intra-$rate" 1 2 --min-bytes 4K --max-bytes "${MAX_BYTES:-256M}" --inflight "${INFLIGHT:-4}" \
            --json "$out/intra-$rate.json" ;;
    esac
    rounds=" "   # the node counts whose round is measured (4:1 and 4:2 are both 4 nodes)
    for size in $ps_sizes; do   # where the servers sit beside the workers: their round, laid out as theirs
        n=${size%%:*} per=${size#*:}
        case "$methods|$rounds" in *-ps*"|"*" $n "*) continue ;; *-ps*) ;; *) continue ;; esac
        [ "$per" != 1 ] || [ "$n" -ge 4 ] || continue
        rounds="$rounds$n "
        commbench_on "colocated-$rate-$n" "$n" 2 --op colocated-ranks --min-bytes 4K --max-bytes "${MAX_BYTES:-256M}" \
            --inflight "${INFLIGHT:-4}" --json "$out/colocated-$rate-$n.json"
    done
    for size in $ps_sizes; do   # PIECES=1: bytescheduler-ps's traffic alone, in each layout it ran in
        n=${size%%:*} per=${size#*:}
        case "${PIECES:-0} $methods " in 1*" bytescheduler-ps "*) ;; *) continue ;; esac
        pieces="--partition-bytes 4096000 --min-bytes ${PIECES_MIN_BYTES:-1M} --max-bytes ${MAX_BYTES:-256M}"
        if [ "$per" = 1 ] && [ "$n" -lt 4 ]; then   # a server of its own, as the runs below
            # shellcheck disable=SC2086  # $pieces: options, split on purpose
            commbench_at "pieces-pushpull-$rate-$n" "gn[01-0$((n + 1))]" $((n + 1)) 1 --op pushpull $pieces \
                --json "$out/pieces-pushpull-$rate-$n.json"
        else
            # shellcheck disable=SC2086
            commbench_on "pieces-$rate-$n" "$n" 2 --op colocated-ranks $pieces --json "$out/pieces-$rate-$n.json"
        fi
    done
    if [ -n "${BEFORE_RUNS:-}" ]; then   # the links measured, nothing trained yet: a blind prediction
        wait_last
        sh -c "$BEFORE_RUNS"
    fi
    echo "== links between the leaves at $rate: $repeats repeats of 1 worker and of every method at $sizes" >&2
    for k in $(seq "$repeats"); do
        [ "${BASELINE:-1}" = 0 ] || job 1 1 gn01 --comm bsp-a2a
        for m in $methods; do
            for size in $sizes; do
                n=${size%%:*} per=${size#*:}
                case "$m: $ps_sizes " in *-ps:*" $size "*|*-a2a:*|mg-wfbp:*) ;; *) continue ;; esac
                nodes=$(nodes_of "$n")
                case $m in
                    *-ps) if [ "$per" = 1 ] && [ "$n" -lt 4 ]; then
                              job $((n + 1)) 1 "gn[01-0$((n + 1))]" --comm "$m"
                          else
                              job "$n" $((per + 1)) "$nodes" --comm "$m" --ps-colocated
                          fi ;;
                    *) job "$n" "$per" "$nodes" --comm "$m" ;;
                esac
            done
        done
    done
    wait_last   # the next rate reshapes the links
done
[ "$repeats" -gt 0 ] || exit 0   # the links measured, no runs
"$bin/dtrain-analyze" throughput "$out/runs/records.jsonl" > "$out/methods.md"
echo "## samples/s, mean +- std of $repeats runs (model ${MODEL:-cnn}, batch ${BATCH:-32} per worker, ${STEPS:-60} steps)"
cat "$out/methods.md"
[ "${COMMBENCH:-3}" -gt 0 ] || exit 0   # the links not measured: no busbw table
for rate in $rates; do
    echo
    echo "## busbw across the $rate link, 2 nodes (best of 3): dtrain's transport vs raw MPI_Allreduce"
    echo "| bytes | dtrain transport busbw (GB/s) | raw MPI_Allreduce busbw (GB/s) | ratio |"
    echo "|---|---|---|---|"
    for side in ours raw; do
        awk '!/^#/ && NF >= 6 { if ($6 > b[$1]) b[$1] = $6 } END { for (s in b) print s, b[s] }' "$out/$side-$rate".*.out |
            sort -k1,1 > "$out/$side-$rate"   # join's order; the table is put in size order after
    done
    join "$out/ours-$rate" "$out/raw-$rate" | sort -n | awk '{ printf "| %s | %.4f | %.4f | %.2f |\n", $1, $2, $3, $2 / $3 }'
done
