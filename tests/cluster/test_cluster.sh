#!/bin/sh
# tests/cluster/test_cluster.sh BINDIR - end-to-end tests on a real Slurm cluster: brings one up
# (up.sh), submits the project's sbatch template and sweep to it, checks what comes back, brings
# it down (down.sh; also when a test fails or the script is interrupted). Prints one
# "[ OK ]"/"[FAIL]" line per test and "cluster tests: P passed, F failed"; exit 1 when any failed.
# Needs root; without it, or without Slurm's daemons, it prints a SKIP line and exits 0.
# check's conditions are eval'd later (single quotes on purpose, their variables used there);
# $train is word-split on purpose.
# shellcheck disable=SC2016,SC2034,SC2086
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bin=$(cd "${1:-$top/build/bin}" && pwd)
# a cluster of its own (namespaces and directory named by the id): another suite may run beside
export DTRAIN_CLUSTER_ID="${DTRAIN_CLUSTER_ID:-dtc$$}"
. "$here/cluster.conf.sh"

# Every shell script of the project must pass shellcheck, at every severity (it needs no cluster):
# the sbatch template and sweep, .ci/run, and every *.sh (found, not listed).
if command -v shellcheck >/dev/null; then
    scripts=$(cd "$top" && { echo .ci/run sbatch/sweep sbatch/dtrain.sbatch;
                             find . -name '*.sh' -not -path './build/*' -not -path './.git/*'; } | tr '\n' ' ')
    if (cd "$top" && shellcheck -x $scripts); then
        echo "[ OK ] shellcheck: $(echo "$scripts" | wc -w) scripts (sbatch/, .ci/run, every *.sh)"
    else
        echo "[FAIL] shellcheck"; echo "cluster tests: 0 passed, 1 failed"; exit 1
    fi
fi
# The sweep's plan without a cluster: --dry-run with a node list prints the sbatch lines.
export DTRAIN_BIN="$bin"
dry=$("$top/sbatch/sweep" --dry-run --nodelist 'gn[01-03]' --nodes 1,2 --ranks-per-node 2 --repeats 2 --gpus \
          --out /tmp/sweep-plan -- --model lenet 2>&1)
if [ "$(echo "$dry" | grep -c '^sbatch ')" = 5 ] &&
   echo "$dry" | grep -q -- '-N 2 --ntasks-per-node=2 --gpus-per-node=2 --exclusive -w .gn\[03,01\]. -J sweep-2x2-1 .*--dependency=afterany:JOB3 .*dtrain.sbatch --model lenet' &&
   echo "$dry" | grep -q -- '--dependency=afterany:JOB1:JOB2:JOB3:JOB4 .*--wrap' &&
   "$top/sbatch/sweep" --dry-run --nodelist gn01 --nodes 2 2>&1 | grep -q "2 nodes asked, the node list gn01 has 1" &&
   "$top/sbatch/sweep" --dry-run --nodelist gn01 --repeats x 2>&1 | grep -q '"x" is not a count'; then
    echo "[ OK ] sweep --dry-run: 4 runs and the table job, repeats rotated, bad counts refused"
else
    echo "$dry"
    echo "[FAIL] sweep --dry-run"; echo "cluster tests: 1 passed, 1 failed"; exit 1
fi
if [ "$(id -u)" != 0 ] || ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null; then
    echo "SKIP: cluster tests need root and slurmctld/slurmd (make deps installs them)"
    exit 0
fi

work=$(mktemp -d /tmp/dtrain-cluster-test.XXXXXX)
# What the jobs' ranks leave in $TMPDIR (a killed rank's status directory; sbatch and srun pass
# the variable on) stays in the run's own directory and goes with it.
mkdir "$work/tmp" && export TMPDIR="$work/tmp"
passed=0 failed=0
other=""
finish() {
    [ "$failed" -gt 0 ] && export DTRAIN_CLUSTER_KEEP=1 && echo "cluster logs kept in $DTC_DIR/log, jobs in $work"
    [ -z "$other" ] || DTRAIN_CLUSTER_ID=$other DTRAIN_CLUSTER_KEEP=0 "$here/down.sh"
    "$here/down.sh"
    [ "$failed" -gt 0 ] || rm -rf "$work"
}
trap finish EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
at() { echo "at $(($(date +%s) - start)) s"; }
ok() { echo "[ OK ] $1 ($(at))"; passed=$((passed + 1)); }
bad() { echo "[FAIL] $1 ($(at))"; failed=$((failed + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }   # check NAME CONDITION

"$here/down.sh"   # leftovers of an interrupted run
t0=$(date +%s.%N)
if ! "$here/up.sh" >"$work/up.log" 2>&1; then
    cat "$work/up.log"
    bad "cluster up"
    exit 1
fi
echo "[ OK ] cluster up: 4 idle nodes in $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-4) s"
export SLURM_CONF="$DTC_DIR/etc/slurm.conf" PATH="$DTC_DIR/bin:$PATH" DTRAIN_BIN="$bin" DTRAIN_THREADS=1
# The test cluster's "nodes" share this machine's cores: the template's pre-flight check measures
# their links one pair at a time (side by side it would measure the scheduler), briefly, and names
# only a node far below the others (jobs running at once on the shared cores make some noise).
export DTRAIN_CHECK_OPTIONS="${DTRAIN_CHECK_OPTIONS:---one-at-a-time --bytes 1M --iters 2 --threshold 0.9}"
cd "$work" || exit 1

# Every srun this script runs goes through srun_within, with a time bound: srun of Slurm 22.05 can
# hang after every rank has ended (a heterogeneous step under PMIx, about 1 in 20: see test 8),
# and an unbounded srun would hang make test. A bare srun here is refused at once, by this:
srun() { echo "test_cluster.sh: srun $* is not bounded: run it through srun_within" >&2; return 99; }
# srun_within SECONDS NAME ARGS...: srun ARGS as job NAME; after SECONDS srun gets SIGTERM, 5 s
# later SIGKILL (a deadlocked srun ignores SIGTERM), and the job NAME is cancelled and waited for,
# so its nodes are free for the next test. Returns srun's status, 124 when it was stopped.
srun_within() {
    limit=$1 name=$2; shift 2
    timeout -k 5 "$limit" srun -J "$name" "$@"
    rc=$?
    [ $rc = 124 ] || [ $rc = 137 ] || return $rc
    echo "srun $name: stopped after $limit s" >&2
    scancel --name="$name" 2>/dev/null
    n=0
    while [ -n "$(squeue -h -n "$name" 2>/dev/null)" ] && [ $n -lt 300 ]; do n=$((n + 1)); sleep 0.1; done
    return 124
}
state() { scontrol show job -o "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# wait_job ID SECONDS: until the job has ended; prints its final state
wait_job() {
    n=0
    while :; do
        s=$(state "$1")
        case "$s" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) echo "$s"; return ;; esac
        n=$((n + 1))
        [ $n -lt $(($2 * 10)) ] || { echo "STILL-$s"; return; }
        sleep 0.1
    done
}
# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN
wait_for() {
    n=0
    until grep -q "$2" "$1" 2>/dev/null; do
        n=$((n + 1)); [ $n -lt $(($3 * 10)) ] || return 1; sleep 0.1
    done
}
programs() {   # programs COMM NODE...: the pids of the processes named COMM (/proc's comm) on these nodes
    comm=$1; shift
    for node in "$@"; do
        for p in $(ip netns pids "$DTC_PREFIX-$node"); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$comm" ] && echo "$p"
        done
    done
}
trainers() { programs dtrain-train "$@"; }   # trainers NODE...: the dtrain-train ranks on these nodes
field() { sed -n "s/.*\"$2\":\"\\{0,1\\}\\([^,\"]*\\).*/\\1/p" "$1"; }   # field RECORDLINEFILE NAME
template=$top/sbatch/dtrain.sbatch

# (0) the bound itself: an srun that would run 300 s is stopped after 3 s, its job cancelled and its
# node idle again; a bare srun is refused
t0=$(date +%s)
srun_within 3 bound-check -N1 -w gn02 sleep 300 >/dev/null 2>&1
rc=$? took=$(($(date +%s) - t0))
n=0
until [ "$(sinfo -h -n gn02 -t idle -o %D)" = 1 ] || [ $n -ge 100 ]; do n=$((n + 1)); sleep 0.1; done
check "srun_within: a 300 s srun stopped after 3 s (status $rc, $took s), its job gone, gn02 idle" \
    '[ $rc = 124 ] && [ $took -le 20 ] && [ -z "$(squeue -h -n bound-check)" ] && [ "$(sinfo -h -n gn02 -t idle -o %D)" = 1 ]'
check "a bare srun in this script is refused" '! srun -N1 hostname >/dev/null 2>&1'
# word-split on purpose where it is used: dtrain-train's options
train="--model lenet --log-every 10 --eval-every 0 -q"

# (1) the template, 2 nodes x 2 CPU ranks: completes, the record names gn[01-02] and 4 ranks, and
# each rank's reported binding is the plan dtrain prints for that node
mkdir t1 && cd t1 || exit 1
id=$(sbatch --parsable -N2 --ntasks-per-node=2 --gpus-per-node=0 "$template" $train --max-steps 30)
s=$(wait_job "$id" 120)
check "template: 2 nodes x 2 CPU ranks completes (job $id: $s)" '[ "$s" = COMPLETED ]'
tail -n 1 runs/records.jsonl >last.json 2>/dev/null
check "template: record names gn[01-02], 4 ranks, completed" \
    '[ "$(field last.json nodelist)" = "gn[01-02]" ] && [ "$(field last.json world_size)" = 4 ] &&
     [ "$(field last.json exit_state)" = completed ]'
plan_ok=1
for node in gn01 gn02; do
    srun_within 60 "plan$node" -N1 -n2 -w "$node" "$bin/dtrain" --nodes 1 --gpus-per-node 0 --plan >"plan-$node" 2>&1 ||
        plan_ok=0
    for local in 0 1; do
        want=$(awk -v l="$local" '$1 == l { print "numa " $6 " cpus " $7; exit }' "plan-$node")
        got=$(sed -n "s/^dtrain: $node rank [0-9]* local $local: .* \\(numa .*\\)$/\\1/p" "dtrain-$id.out")
        if [ -z "$want" ] || [ "$want" != "$got" ]; then
            plan_ok=0
            echo "  $node local $local: plan '$want', rank '$got'"
        fi
    done
done
check "template: the ranks' bindings are dtrain --plan's" '[ $plan_ok = 1 ]'
cd "$work" || exit 1

# (5) a wrong --nodes: the job fails at once, with dtrain's message in its output
mkdir t5 && cd t5 || exit 1
t0=$(date +%s)
# (no pre-flight: it would stop the job first; here dtrain refuses the training step itself)
id=$(DTRAIN_PREFLIGHT=0 DTRAIN_NODES=3 sbatch --parsable -N2 --ntasks-per-node=1 --gpus-per-node=0 "$template" $train \
         --max-steps 30)
s=$(wait_job "$id" 60)
took=$(($(date +%s) - t0))
check "wrong --nodes: job $id $s in ${took} s" '[ "$s" = FAILED ] && [ $took -le 15 ]'
check "wrong --nodes: dtrain's message in dtrain-$id.out" \
    'grep -q "^dtrain: --nodes 3, but this step runs on 2 nodes" "dtrain-$id.out"'
check "wrong --nodes: the failed record says a usage error, not a rank lost" \
    'grep "\"job_id\":\"$id\"" runs/records.jsonl | grep -q "exit status 2: a usage error"'
cd "$work" || exit 1

# (4) one rank killed: the job ends FAILED within seconds, nothing left running. Rank 2 (the first
# on gn02) kills itself before step 20 (the trainer's fault injection, passed on by sbatch and
# srun): the test signals no process itself. The time counts from Step10.
mkdir t4 && cd t4 || exit 1
id=$(DTRAIN_FAULT_KILL=2:20 sbatch --parsable -N2 --ntasks-per-node=2 --gpus-per-node=0 "$template" $train \
         --max-steps 100000)
if wait_for "dtrain-$id.out" '^Step10:' 60; then
    t0=$(date +%s.%N)
    s=$(wait_job "$id" 60)
    took=$(echo "$(date +%s.%N) - $t0" | bc)
    # shellcheck disable=SC2086  # the node list
    left=$(trainers $DTC_NODES)
    check "rank killed: job $id $s after $(echo "$took" | cut -c1-4) s, no rank left" \
        '[ "$s" = FAILED ] && [ "$(echo "$took < 15" | bc)" = 1 ] && [ -z "$left" ]'
    # srun killed the other ranks before they could write: the template records the failure
    grep "\"job_id\":\"$id\"" runs/records.jsonl >failed.json 2>/dev/null
    check "rank killed: one failed record of job $id, 4 ranks on gn[01-02], the status named" \
        '[ "$(wc -l <failed.json)" = 1 ] && [ "$(field failed.json exit_state)" = failed ] &&
         [ "$(field failed.json world_size)" = 4 ] && [ "$(field failed.json nodelist)" = "gn[01-02]" ] &&
         grep -q "ended before any rank recorded it: killed by signal 9 (KILL)" failed.json'
else
    bad "rank killed: job $id never logged a step"
fi
cd "$work" || exit 1

# (3) scontrol requeue of a running job: it comes back, resumes from its checkpoint, and its
# final record says so
mkdir t3 && cd t3 || exit 1
id=$(sbatch --parsable -N2 --ntasks-per-node=1 --gpus-per-node=0 "$template" $train --max-steps 200 \
         --checkpoint-every 40)
if wait_for "dtrain-$id.out" '^Step80:' 90; then
    scontrol requeue "$id"
    s=$(wait_job "$id" 180)
    grep '"exit_state":"completed"' runs/records.jsonl | tail -n 1 >last.json
    check "requeue: job $id $s after a restart" \
        '[ "$s" = COMPLETED ] && grep -q "restart 1" "dtrain-$id.out"'
    check "requeue: the final record says it resumed and reached step 200" \
        '[ "$(field last.json resumed)" = 1 ] && [ "$(field last.json steps_per_rank)" = 200 ]'
else
    bad "requeue: job $id never reached step 80"
fi
cd "$work" || exit 1

# (3b) USR1, what --signal=USR1@120 sends before the time limit: the ranks checkpoint and stop,
# the template requeues the job, which resumes
mkdir t3b && cd t3b || exit 1
id=$(sbatch --parsable -N1 --ntasks-per-node=2 --gpus-per-node=0 "$template" $train --max-steps 200)
if wait_for "dtrain-$id.out" '^Step60:' 90; then
    scancel --signal=USR1 "$id"
    s=$(wait_job "$id" 180)
    grep '"exit_state":"completed"' runs/records.jsonl | tail -n 1 >last.json
    check "USR1: job $id checkpoints, requeues itself, resumes and completes ($s)" \
        '[ "$s" = COMPLETED ] && grep -q "requeueing job $id" "dtrain-$id.out" && grep -q "restart 1" "dtrain-$id.out" &&
         [ "$(field last.json resumed)" = 1 ] && [ "$(field last.json steps_per_rank)" = 200 ]'
else
    bad "USR1: job $id never reached step 60"
fi
cd "$work" || exit 1

# (2) the sweep: 1-4 nodes x 1-2 ranks, 2 repeats, short runs, ends in a table with every
# configuration and an Avg row each; a configuration's repeats run on different nodes
mkdir t2 && cd t2 || exit 1
timeout -k 10 600 "$top/sbatch/sweep" --nodes 1,2,3,4 --ranks-per-node 1,2 --repeats 2 --out sweep --wait -- $train \
    --max-steps 20 >table.md 2>sweep.log
rows_ok=1
for n in 1 2 3 4; do
    for r in 1 2; do
        runs=$(grep -c "^| $n | $r | " table.md)
        avg=$(grep -c "^| \*\*$n\*\* | \*\*$r\*\* | .*\*\*Avg\*\*" table.md)
        if [ "$runs" != 2 ] || [ "$avg" != 1 ]; then
            rows_ok=0
            echo "  $n x $r: $runs runs, $avg Avg rows"
        fi
    done
done
check "sweep: 16 runs, every configuration with its Avg row" '[ $rows_ok = 1 ] && [ "$(grep -c "Avg" table.md)" = 8 ]'
check "sweep --wait: a line as each job ends, with its time (16 runs and the table's)" \
    '[ "$(grep -c "^sweep: job [0-9]* (sweep-[0-9x-]*) ended after [0-9:]*$" sweep.log)" = 16 ] &&
     grep -q "^sweep: job [0-9]* (sweep-table) ended after" sweep.log &&
     [ "$(grep -c "^sweep: job [0-9]* (sweep-[0-9x-]*) started$" sweep.log)" -ge 8 ]'
check "sweep: repeats on different nodes (1 node: gn01, then gn02)" \
    'grep -q "^| 1 | 1 | .* | gn01 |" table.md && grep -q "^| 1 | 1 | .* | gn02 |" table.md'
cd "$work" || exit 1

# (2c) two job steps at once on one node, each an env:// rendezvous (rank 0 listens on MASTER_PORT):
# each step gets its own port, so each rank 0 meets its own step's peer and none joins the other
mkdir t2c && cd t2c || exit 1
step="srun --overlap -N1 -n2 $bin/dtrain --nodes 1 --gpus-per-node 0 --no-bind -- python3 $here/rendezvous.py"
id=$(sbatch --parsable -t 2 -N1 -n2 -w gn01 -o conc-%j.out --wrap "$step & $step & wait")   # -t: its sruns bounded
s=$(wait_job "$id" 60)
check "concurrent steps: each step's rank 0 met its own step's peer, on a port of its own" \
    '[ "$s" = COMPLETED ] && [ "$(grep -c "met 1 peers of steps \([0-9]\),*: ok" "conc-$id.out")" = 2 ] &&
     [ "$(sed -n "s/.* on port \([0-9]*\) .*/\1/p" "conc-$id.out" | sort -u | wc -l)" = 2 ]'
cd "$work" || exit 1

# (2b) a sweep of a user's own program (sweep --program): the template times each step and writes its
# record (dtrain-record), so the sweep ends in the same averaged table; 1-2 nodes, 2 repeats
mkdir t2b && cd t2b || exit 1
# another user's trap in a shared run directory: links at the step logs' old, guessable names
mkdir usweep && echo "theirs" >victim
for n in $(seq 1 400); do ln -s "$PWD/victim" "usweep/step-$n.log"; done
timeout -k 10 300 "$top/sbatch/sweep" --nodes 1,2 --repeats 2 --out usweep --wait --program "sh $here/user_program.sh" \
    >table.md 2>sweep.log
check "sweep of a user program: 2 runs and an Avg row for 1 and 2 nodes" \
    '[ "$(grep -c "^| 1 | 1 | " table.md)" = 2 ] && [ "$(grep -c "^| 2 | 1 | " table.md)" = 2 ] &&
     [ "$(grep -c "Avg" table.md)" = 2 ]'
check "sweep of a user program: records of user_program.sh with its Step line's rate" \
    '[ "$(grep -c "\"model\":\"user_program.sh\".*\"peak_data_per_sec\":200" usweep/records.jsonl)" = 2 ]'
check "sweep of a user program: the step logs are files of their own, the planted links not followed" \
    '[ "$(cat victim)" = theirs ] && [ "$(ls usweep/step-*-??????.log | wc -l)" = 4 ]'
cd "$work" || exit 1

# (6) every gradient-exchange method through the template, srun --mpi=pmix, one rank per node: two
# workers (parameter servers: a third node serves, or, colocated, each node's second rank) end with
# 2-rank BSP's parameters, bitwise. No pre-flight check here (test 7 has its own): eight jobs side
# by side on a 2-core machine measure each other's scheduling, not their links.
mkdir t6 && cd t6 || exit 1
ids=""
export DTRAIN_PREFLIGHT=0
for m in $("$bin/dtrain-train" --list-methods); do
    case $m in
        bytescheduler-ps) n=3 extra="--partition-bytes 20000 --credit-bytes 40000" ;;
        *-ps) n=3 extra="--partition-bytes 20000" ;;
        bytescheduler-a2a) n=2 extra="--partition-bytes 20000 --credit-bytes 40000" ;;
        *) n=2 extra="" ;;
    esac
    id=$(sbatch --parsable -N$n --ntasks-per-node=1 --gpus-per-node=0 -J "m-$m" "$template" $train --max-steps 20 \
             --comm "$m" $extra --params-out "p-$m")
    ids="$ids $m:$id"
done
# colocated parameter servers: 2 nodes x 2 ranks, each node's last rank serving its worker
id=$(sbatch --parsable -N2 --ntasks-per-node=2 --gpus-per-node=0 -J m-colocated "$template" $train --max-steps 20 \
         --comm wfbp-ps --ps-colocated --partition-bytes 20000 --params-out p-colocated)
ids="$ids colocated:$id"
methods_ok=1
for entry in $ids; do
    m=${entry%%:*} id=${entry#*:}
    s=$(wait_job "$id" 120)
    if [ "$s" != COMPLETED ] || ! cmp -s p-bsp-a2a.rank0 "p-$m.rank0" || ! cmp -s p-bsp-a2a.rank0 "p-$m.rank1"; then
        methods_ok=0
        echo "  $m: job $id $s; parameters $(cmp p-bsp-a2a.rank0 "p-$m.rank0" 2>&1 || true); its output ends:"
        tail -n 12 "m-$m-$id.out" | sed 's/^/    | /'
    fi
done
unset DTRAIN_PREFLIGHT
grep '"comm":"bsp-ps"' runs/records.jsonl >ps.json 2>/dev/null
grep '"comm":"bytescheduler-ps"' runs/records.jsonl >bs.json 2>/dev/null
check "methods: all seven on 2 nodes (+ a server), and colocated servers, end bitwise equal" \
    '[ $methods_ok = 1 ] && [ "$(field ps.json comm_options)" = "servers=1 partition=20000" ] &&
     [ "$(field bs.json comm_options)" = "servers=1 partition=20000 credit=40000" ]'
cd "$work" || exit 1

# (6b) BytePS's node-local sums, 2 nodes x 2 workers and a third node's 2 servers: each node's workers
# sum a partition first and push it once (on, the default), or each pushes its own (off); both end
# where 4-rank BSP ends, to the rounding of a sum in another order (the node's two first), and
# the records say which ran. SGD: Adam would turn a rounding's sign on a gradient near 0 into a
# step of the learning rate.
mkdir t6b && cd t6b || exit 1
export DTRAIN_PREFLIGHT=0
ids=""
for m in bsp-a2a:2: on:3:"--comm wfbp-ps --ps-servers 2 --partition-bytes 20000" \
         off:3:"--comm wfbp-ps --ps-servers 2 --partition-bytes 20000 --ps-node-sums off"; do
    name=${m%%:*} rest=${m#*:}
    # shellcheck disable=SC2086  # the options: split on purpose
    id=$(sbatch --parsable -N"${rest%%:*}" --ntasks-per-node=2 --gpus-per-node=0 -J "n-$name" "$template" $train \
             --max-steps 20 --optimizer sgd ${rest#*:} --params-out "p-$name")
    ids="$ids $id"
done
unset DTRAIN_PREFLIGHT
sums_ok=1
for id in $ids; do [ "$(wait_job "$id" 120)" = COMPLETED ] || { sums_ok=0; echo "  job $id:"; tail -n 12 n-*-"$id".out; }; done
# the largest difference from BSP's parameters, of every worker's file
largest() { python3 -c 'import array, sys
def floats(path):
    a = array.array("f"); a.frombytes(open(path, "rb").read()); return a
ref = floats(sys.argv[1])
print(max(max(abs(x - y) for x, y in zip(ref, floats(p))) for p in sys.argv[2:]))' "$@"; }
on=$(largest p-bsp-a2a.rank0 p-on.rank0 p-on.rank1 p-on.rank2 p-on.rank3 2>&1)
off=$(largest p-bsp-a2a.rank0 p-off.rank0 p-off.rank3 2>&1)
echo "  node-local sums: largest difference from BSP's parameters $on (on), $off (off)"
check "node-local sums: 2 nodes x 2 workers end where BSP ends (within 1e-6), on and off, each said in the record" \
    '[ $sums_ok = 1 ] && python3 -c "import sys; sys.exit(not (float(\"$on\") < 1e-6 and float(\"$off\") < 1e-6))" &&
     grep -q "4 workers summed on 2 nodes, 2 servers" n-on-*.out &&
     grep -q "\"comm_options\":\"servers=2 partition=20000 node-sums=on\"" runs/records.jsonl &&
     grep -q "\"comm_options\":\"servers=2 partition=20000 node-sums=off\"" runs/records.jsonl'
cd "$work" || exit 1

# (7) the pre-flight check, one rank per node: with every link equal it passes; with gn03's own
# link shaped to 100 Mbit/s it fails, naming gn03 and the sbatch --exclude= that avoids it
mkdir t7 && cd t7 || exit 1
preflight() {   # preflight OUTFILE: dtrain-check over the 4 nodes; prints its status
    # shellcheck disable=SC2086  # DTRAIN_LAUNCH_OPTIONS: options, split on purpose
    srun_within 180 "preflight-$1" --mpi=pmix -N4 --ntasks-per-node=1 "$bin/dtrain" --nodes 4 --gpus-per-node 0 ${DTRAIN_LAUNCH_OPTIONS:-} -- \
        "$bin/dtrain-check" --one-at-a-time --bytes 1M --iters 2 --dir . --json "$1.json" >"$1" 2>&1
    echo $?
}
pass=$(preflight pass.out)
"$here/link.sh" node gn03 100mbit
slow=$(preflight slow.out)
"$here/link.sh" node gn03 off
check "pre-flight: equal links pass (status $pass)" '[ "$pass" = 0 ] && grep -q "^| gn04 | skip (CPU ranks) | ok, eth0 up at .* | ok, .* GiB free | .* | ok |$" pass.out &&
     grep -q "\"median_bytes_per_s\"" pass.out.json'
check "pre-flight: gn03's slow link named, with the --exclude that avoids it (status $slow)" \
    '[ "$slow" = 1 ] && grep -q "^| gn03 | .* | \*\*slow links\*\* |$" slow.out &&
     grep -q "sbatch --exclude=gn03 avoids it" slow.out && ! grep -q "^| gn0[124] | .*slow links" slow.out'
cd "$work" || exit 1

# (8) an uneven step, 3 ranks on gn01 and 2 on gn04, the node with 2 GPUs (srun -N2 -n5
# --gpus-per-task=1, Slurm's block distribution), through dtrain --gpus-per-node auto: each node
# binds one rank per GPU it was given
# (planned on a saved 8-GPU topology: the nodes' GPUs here are device files without PCI devices),
# and the table of the records shows the run by its 5 GPUs with its split
mkdir t8 && cd t8 || exit 1
topo8=$top/tests/fixtures/topo/2s-8gpu-8hca-pcie-switches.xml
uneven_train="--device cpu --model lenet --dataset synthetic --log-every 5 --eval-every 0 -q --max-steps 10"
# shellcheck disable=SC2086  # uneven_train: options, split on purpose
srun_within 120 uneven-one --mpi=pmix -N1 -n1 --gpus-per-task=1 "$bin/dtrain" --gpus-per-node auto --topology "$topo8" -- \
    "$bin/dtrain-train" $uneven_train --record runs.jsonl >one.out 2>&1
# shellcheck disable=SC2086
srun_within 120 uneven-five --mpi=pmix -N2 -n5 -O -w gn01,gn04 --gpus-per-task=1 "$bin/dtrain" --gpus-per-node auto \
    --topology "$topo8" --report-bindings \
    -- "$bin/dtrain-train" $uneven_train --record runs.jsonl >uneven.out 2>&1
uneven=$?
"$bin/dtrain-analyze" table runs.jsonl >table.md 2>table.err
check "uneven: 3 + 2 ranks, one per GPU each node was given (status $uneven)" \
    '[ "$uneven" = 0 ] && grep -q "^dtrain: gn01 rank 2 local 2: gpu 2 " uneven.out &&
     grep -q "^dtrain: gn04 rank 4 local 1: gpu 1 " uneven.out && ! grep -q "gn04 rank [0-9] local 2" uneven.out'
check "uneven: the table shows the run by its 5 GPUs and its split" \
    'grep -q "^| 2 | 5 | .* | gn01:3, gn04:2 | " table.md && grep -q "^| \*\*2\*\* | \*\*5\*\* |" table.md'
# the same as a heterogeneous step: one component a node, one world of 5 ranks. srun of Slurm
# 22.05 can hang after every rank of such a step has ended: its PMIx plugin starts an abort agent
# per component on one thread handle without a lock (fixed in Slurm 24.11: "mpi/pmix - Prevent
# multiple abort agents"); 5 of 80 two-component /bin/true steps hung here (2026-11-27), 23 of 538
# in an earlier trial. A step that hangs with its record written is Slurm's defect and is tried
# once more, said so; one that hangs twice, or before its ranks finished, fails the test.
het_try=0 het_hung=0
while [ $het_try -lt 2 ]; do
    het_try=$((het_try + 1))
    rm -f het.jsonl
    # shellcheck disable=SC2086
    srun_within 90 "het-$het_try" --mpi=pmix -N1 -n3 -O --gpus-per-task=1 -w gn01 : -N1 -n2 -O --gpus-per-task=1 \
        -w gn04 "$bin/dtrain" --gpus-per-node auto --topology "$topo8" -- "$bin/dtrain-train" $uneven_train \
        --record het.jsonl >het.out 2>&1
    het=$?
    if [ $het != 124 ] || ! grep -q '"world_size":5' het.jsonl 2>/dev/null; then break; fi
    het_hung=$((het_hung + 1))
    echo "  heterogeneous step: srun hung after its ranks had finished (Slurm 22.05's srun/PMIx defect, about 1 in" \
         "20 such steps; fixed in 24.11): stopped, tried again"
done
check "heterogeneous step (srun A : B): 3 + 2 ranks in one world (status $het, $het_hung of $het_try tries hung)" \
    '[ "$het" = 0 ] && grep -q "\"world_size\":5,\"hostnames\":\[\"gn01\",\"gn01\",\"gn01\",\"gn04\",\"gn04\"\]" het.jsonl'
# dtrain's rank 0 warns of the defect once where srun is older than 24.11, and not at all from 24.11 on
slurm=$(sinfo --version | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1\2/p')
warned=$(grep -c "warning: a heterogeneous step (srun A : B) under srun --mpi=pmix from Slurm" het.out)
check "heterogeneous step: dtrain warns once under Slurm $slurm older than 2411, else not ($warned warnings)" \
    '{ [ "${slurm:-0}" -lt 2411 ] && [ "$warned" = 1 ]; } || { [ "${slurm:-0}" -ge 2411 ] && [ "$warned" = 0 ]; }'
cd "$work" || exit 1

# (9) dtrain --watch over programs dtrain did not write: an mpi4py job and a PyTorch DDP (gloo) job
# of 3 ranks on gn[01-03], rank 1's program stopped (SIGSTOP) or asleep in a read at its step 5:
# rank 0's watcher names it, with its host and state, within 10 s past the 5 s threshold and ends
# the step (status 3, the stall kept in a JSON line); 20 undisturbed runs raise no alarm
mkdir t9 && cd t9 || exit 1
watched() {   # watched NAME BACKEND STALL STEPS: one step of 3 watched ranks; its status
    srun_within 120 "watch-$1" --mpi=pmix -N3 -n3 -w 'gn[01-03]' --kill-on-bad-exit=1 "$bin/dtrain" \
        --gpus-per-node 0 --no-bind --watch --watch-stall 5 --watch-report "$1.json" \
        -- /usr/bin/python3 "$here/watched.py" "$2" "$3" "$4" >"$1.out" 2>&1
}
# stalled NAME BACKEND STALL STATE: the stalled rank named as it should be, soon enough (from the
# "stalling at" its program printed to the moment the watch's line appeared)
stalled() {
    name=$1 state=$4
    watched "$1" "$2" "$3" 200 &
    job=$!
    named=0
    ! wait_for "$1.out" "dtrain: watch:" 90 || named=$(date +%s.%N)
    wait "$job"
    stalled_at=$(sed -n 's/^stalling at \([0-9.]*\)$/\1/p' "$1.out")
    late=$(awk -v n="$named" -v s="${stalled_at:-0}" 'BEGIN { printf "%.1f", n - s - 5 }')
    check "watch, $2: rank 1 $3 named with host and state, $late s past the threshold" \
        'grep -q "task 0: Exited with exit code 3" "$name.out" &&
         grep -q "dtrain: watch: rank 1 on gn02 has made no progress for [0-9.]* s ($state" "$name.out" &&
         [ -n "$stalled_at" ] && [ "$named" != 0 ] && awk -v l="$late" "BEGIN { exit !(l <= 10) }" &&
         grep -q "\"rank\":1,.*\"host\":\"gn02\"" "$name.json"'
}
backends=mpi
if /usr/bin/python3 -c "import torch.distributed" 2>/dev/null; then
    backends="mpi gloo"
else
    echo "[SKIP] watch, gloo: no PyTorch here (python3-torch, in deps/bench-packages.txt)"
fi
if /usr/bin/python3 -c "import mpi4py" 2>/dev/null; then
    for b in $backends; do
        stalled "$b-stop" "$b" stop "stopped (SIGSTOP"
        stalled "$b-read" "$b" read "asleep in"
    done
    alarms=0 failures=0 runs=0
    while [ $runs -lt 20 ]; do
        for b in $backends; do
            [ $runs -lt 20 ] || break
            runs=$((runs + 1))
            watched "quiet-$runs" "$b" none 20 || failures=$((failures + 1))
            ! grep -q "dtrain: watch:" "quiet-$runs.out" || alarms=$((alarms + 1))
        done
    done
    check "watch: $runs undisturbed runs ($backends), $alarms alarms, $failures failed" \
        '[ $alarms = 0 ] && [ $failures = 0 ] && [ "$(grep -c "^step 19$" quiet-*.out | grep -c ":1$")" = 20 ]'
else
    echo "[SKIP] watch: no mpi4py here (python3-mpi4py: make deps)"
fi
cd "$work" || exit 1

# (10) what the slow node cost: LeNet with real compute on gn01 and gn03, gn03 given half a core (its
# CPU share halved: tests/cluster/slow_node.sh), then the same run on gn01 and gn02, twice in turn:
# the cost dtrain-analyze nodes gives gn03 (steps x its own work a step over the other rank's), its
# mean over the two slowed runs, is within 20% of the time the rerun without it saved (the means'
# difference). (Two ranks: on this machine's two cores a third would share one, and its pace would
# change with the slow node's going. 20%, not 10: beside a slowed gn03 the other rank has a core
# nearly to itself, beside gn02 it shares the two with it and the cluster's daemons, and each step
# waits for the slower of two ranks; on a 2-vCPU VM whose runs spread 9-18% that made the rerun 1.2
# s slower than the estimate, 8.9 s told against 7.7 saved, 16%, 2026-11-28. Two pairs, not one:
# one pair missed by 30% there, 9.5 s told against 7.3 saved, 2026-11-29.)
mkdir t10 && cd t10 || exit 1
slow_train="--device cpu --threads 1 --model lenet --dataset synthetic --batch-size 512 --log-every 50 --eval-every 0 -q
--max-steps 300"
if "$here/slow_node.sh" gn03 50 && "$here/slow_node.sh" gn03 off; then
    for pair in 1 2; do
        for nodes in 'gn[01,03]' 'gn[01-02]'; do
            case $nodes in 'gn[01,03]') "$here/slow_node.sh" gn03 50 ;; esac   # slowed for its own run only
            srun_within 300 "slow-$nodes" --mpi=pmix -N2 -w "$nodes" "$bin/dtrain" --gpus-per-node 0 --no-bind \
                -- "$bin/dtrain-train" $slow_train --record "runs-$nodes.$pair.jsonl" >"run-$nodes.$pair.out" 2>&1
            "$here/slow_node.sh" gn03 off
        done
        "$bin/dtrain-analyze" nodes -f csv "runs-gn[01,03].$pair.jsonl" >"cost.$pair.csv" 2>&1
    done
    told=$(awk -F, '/^job,ranks,slowest_rank/ { getline; n++; node = node " " $4; s += $7 - $8 }
                    END { printf "%s %.2f", node, n ? s / n : 0 }' cost.1.csv cost.2.csv)
    seconds=$(for f in 'runs-gn[01,03].1' 'runs-gn[01-02].1' 'runs-gn[01,03].2' 'runs-gn[01-02].2'; do
        field "$f.jsonl" runtime_seconds; done | tr '\n' ' ')
    saved=$(echo "$seconds" | awk '{ printf "%.2f", ($1 + $3 - $2 - $4) / 2 }')
    runs=$(echo "$seconds" | awk '{ printf "%.1f, %.1f, %.1f and %.1f", $1, $2, $3, $4 }')
    check "slow node: nodes says gn03 cost ${told##* } s, the reruns without it saved $saved s (runs of $runs s, with and without in turn)" \
        '[ "${told% *}" = " gn03 gn03" ] && echo "${told##* } $saved" | awk "{ d = \$1 - \$2; if (d < 0) d = -d; exit !(\$2 > 1 && d <= 0.2 * \$2) }"'
else
    echo "[SKIP] slow node: no cgroup cpu controller here to give a node a CPU share (tests/cluster/slow_node.sh)"
fi
cd "$work" || exit 1

# (11) spares in the same job: sbatch -N 4 with DTRAIN_SPARES=1, three nodes train and gn04 stands
# by. gn02 lost mid-run (every process of it killed: node.sh); in a second job rank 1's program (on
# gn02) stopped; in a third rank 2's (on gn03) killed (SIGKILL): each time the template leaves that
# node out, gn04 takes its place and training resumes from the last checkpoint within 60 s of the
# failure, the record says so, the table counts each run once, and the final parameters are an
# undisturbed run's of the same steps
mkdir t11 && cd t11 || exit 1
spare_train="--model lenet --dataset synthetic --batch-size 256 --log-every 10 --eval-every 0 -q --max-steps 300"
srun_within 300 spare-ref --mpi=pmix -N3 -w 'gn[01-03]' "$bin/dtrain" --gpus-per-node 0 -- "$bin/dtrain-train" \
    --device cpu --threads 1 $spare_train --params-out ref.params >ref.out 2>&1
spares() {   # spares NAME lose|stop|kill NODE: a job with a spare, NODE failed that way once Step100 is out
    name=$1 node=$3
    id=$(DTRAIN_SPARES=1 DTRAIN_WATCH_STALL=10 sbatch --parsable -N4 --ntasks-per-node=1 --gpus-per-node=0 \
             -w 'gn[01-04]' -o "$1-%j.out" -e "$1-%j.out" "$template" $spare_train --checkpoint-every 20 --params-out "$PWD/$1.params")
    failed_at=0
    if wait_for "$1-$id.out" '^Step100:' 120; then
        failed_at=$(date +%s)
        # shellcheck disable=SC2046  # the pids of the node's rank
        case $2 in lose) "$here/node.sh" "$node" lose ;; stop) kill -STOP $(trainers "$node") ;;
                   kill) kill -KILL $(trainers "$node") ;; esac
    fi
    s=$(wait_job "$id" 300)
    grep "\"job_id\":\"$id\"" runs/records.jsonl | grep '"exit_state":"completed"' >"$1.json"
    started=$(date -d "$(field "$1.json" start_time)" +%s 2>/dev/null || echo 0)
    resumed_in=$((started - failed_at))
    "$bin/dtrain-analyze" table --baseline 3x1 runs/records.jsonl >"$1-table.md" 2>&1
    # the record's stand-still, from when the template saw the failure begin, is this script's own
    # measure within a few seconds (it read 0 s for a 6 s one, timed from srun's end in whole seconds)
    still=$(sed -n "s/.*\"replaced\":\"$node by gn04 (.*); training stood still \([0-9]*\) s.*/\1/p" "$1.json")
    check "spares, $node $2: gn04 took over, resumed in $resumed_in s, the record says training stood still ${still:-?} s, the same parameters (job $id: $s)" \
        '[ "$s" = COMPLETED ] && [ "$failed_at" -gt 0 ] && [ "$resumed_in" -le 60 ] &&
         cmp -s ref.params.rank0 "$name.params.rank0" && grep -q "$node failed (.*): gn04 takes its place" "$name-$id.out" &&
         [ -n "$still" ] && [ "$still" -ge $((resumed_in - 3)) ] && [ "$still" -le $((resumed_in + 3)) ] &&
         [ "$(wc -l <"$name.json")" = 1 ]'
}
if [ -s ref.params.rank0 ]; then
    spares lost lose gn02
    "$here/node.sh" gn02 back
    spares stopped stop gn02
    spares killed kill gn03
    check "spares: the table counts each job's run once (the failed steps wrote no completed record)" \
        'grep -q "^table: 3 runs read," killed-table.md'
else
    bad "spares: the undisturbed run of the same steps failed (t11/ref.out)"
fi
# (11b) spares for a program of your own (-- PROGRAM): an mpi4py program that resumes from its own
# checkpoints (resumable.py), after its Step100 line gn02's rank stopped, and in a second job gn03
# lost (every process of it killed): gn04 takes its place, the program starts again from its
# checkpoint within 60 s, told DTRAIN_RESTART_COUNT=1, its total is an undisturbed run's (sum over
# 300 steps and 3 ranks of rank + step: 135450), and its record says which node was replaced
own_spares() {   # own_spares NAME stop|lose NODE
    name=$1 node=$3
    mkdir "$1"
    id=$(DTRAIN_SPARES=1 DTRAIN_WATCH_STALL=10 sbatch --parsable -N4 --ntasks-per-node=1 --gpus-per-node=0 \
             -w 'gn[01-04]' -o "$1-%j.out" -e "$1-%j.out" "$template" -- /usr/bin/python3 "$here/resumable.py" "$PWD/$1" 300)
    failed_at=0
    if wait_for "$1-$id.out" '^Step100:' 120; then
        failed_at=$(date +%s)
        # shellcheck disable=SC2046  # the pids of the node's rank
        case $2 in stop) kill -STOP $(programs python3 "$node") ;; lose) "$here/node.sh" "$node" lose ;; esac
    fi
    s=$(wait_job "$id" 300)
    resumed=$(sed -n 's/^resumed from step [0-9]* at \([0-9]*\).*(restart 1)$/\1/p' "$1-$id.out" | head -n 1)
    resumed_in=$((${resumed:-0} - failed_at))
    grep "\"job_id\":\"$id\"" runs/records.jsonl >"$1.json"
    others=$(echo gn01 gn02 gn03 gn04 | tr ' ' '\n' | grep -v "^$node$" | sed 's/.*/"&"/' | paste -sd,)
    check "spares, a program of your own: $node $2, gn04 took over, resumed in $resumed_in s, the same total (job $id: $s)" \
        '[ "$s" = COMPLETED ] && [ "$failed_at" -gt 0 ] && [ -n "$resumed" ] && [ "$resumed_in" -le 60 ] &&
         grep -q "^total 135450$" "$name-$id.out" && grep -q "$node failed (.*): gn04 takes its place" "$name-$id.out" &&
         grep -q "\"replaced\":\"$node by gn04 (.*); the step started again [0-9]* s after the failure" "$name.json" &&
         grep -q "\"exit_state\":\"completed\"" "$name.json" && grep -q "\"hostnames\":\[$others\]" "$name.json" &&
         [ "$(wc -l <"$name.json")" = 1 ]'
}
own_spares own-stopped stop gn02
own_spares own-lost lose gn03
"$here/node.sh" gn03 back
cd "$work" || exit 1

# (last) a second cluster beside this one (both used /run/dtrain-cluster and the
# dtc-* namespaces): it comes up, runs a job, goes down, and this cluster's nodes stay idle and its
# namespaces and directory stay where they are
other=${DTC_ID}b   # finish brings it down too if this script is interrupted
other_ok=0
if DTRAIN_CLUSTER_ID=$other "$here/up.sh" >"$work/up-$other.log" 2>&1; then
    other_host=$(PATH="/run/dtrain-cluster-$other/bin:$PATH" && srun_within 60 other -N1 -w gn03 hostname 2>&1)
    [ "$other_host" = gn03 ] && other_ok=1
fi
DTRAIN_CLUSTER_ID=$other DTRAIN_CLUSTER_KEEP=0 "$here/down.sh"
check "a second cluster ($other) beside this one ($DTC_ID) runs a job and leaves this one whole" \
    '[ $other_ok = 1 ] && [ ! -e "/run/netns/$other-ctl" ] && [ ! -e "/run/dtrain-cluster-$other" ] &&
     [ -e "/run/netns/$DTC_PREFIX-ctl" ] && [ -e "$DTC_DIR/run/up" ] &&
     [ "$(sinfo -h -t idle -o %D | head -n 1)" = 4 ]'

echo "cluster tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
