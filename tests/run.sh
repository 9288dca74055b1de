#!/bin/sh
# tests/run.sh - run every test program, then a short libFuzzer run, and print one summary line.
# Usage: tests/run.sh BINDIR TEST...   (make test calls it; each test is a cmocka program)
set -u
bindir=$1
shift
top=$(cd "$(dirname "$0")/.." && pwd)
export DTRAIN_TEST_BIN="$top/$bindir"
export DTRAIN_FIXTURES="$top/tests/fixtures"
# The shared documents (seeds, topologies, notes) sit beside the checkout when present (CI has them);
# DTRAIN_NO_SHARED=1 runs as a clone without them would (the tests on those files then skip).
[ -d "$top/../shared" ] && [ -z "${DTRAIN_NO_SHARED:-}" ] && export DTRAIN_SHARED="$top/../shared"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1"
fuzz_time=${FUZZ_TIME:-15}
# dtrain caches each node's topology; tests keep theirs apart from the machine's /dev/shm one.
DTRAIN_TOPO_CACHE=$(mktemp -d)
export DTRAIN_TOPO_CACHE

# What the programs under test leave in $TMPDIR (a killed rank's status directory) goes with this run.
scratch=$(mktemp -d)
export TMPDIR="$scratch"

# No program may hang the suite (an MPI job that waits for a lost rank, a deadlock): each is stopped
# after DTRAIN_TEST_TIMEOUT seconds (SIGTERM, then SIGKILL 10 s later), said so and counted
# failed. The whole suite, cluster included, ran in under 10 minutes on CI's 2 cores.
limit=${DTRAIN_TEST_TIMEOUT:-1200}
passed=0 failed=0 skipped=0
log=$(mktemp)
trap 'rm -f "$log"; rm -rf "$DTRAIN_TOPO_CACHE" "$scratch"' EXIT

count() {   # count LOG: add the cmocka summary of one program to the totals
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
    passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
}

for t in "$@"; do
    case $t in
        test_fuzz_*) args="$top/tests/fuzz/corpus/${t#test_fuzz_}" ;;
        *) args="" ;;
    esac
    # The CUDA driver maps memory where ASan keeps its shadow gap, and leaks by design at exit.
    case $t in test_cuda*) asan="$ASAN_OPTIONS:protect_shadow_gap=0:detect_leaks=0" ;; *) asan=$ASAN_OPTIONS ;; esac
    # shellcheck disable=SC2086
    ASAN_OPTIONS=$asan timeout -k 10 "$limit" "$top/$bindir/$t" $args >"$log" 2>&1
    rc=$?
    cat "$log"
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        echo "$t: stopped after $limit s (DTRAIN_TEST_TIMEOUT), a hang or a test far slower than it was"
        failed=$((failed + 1))
        continue
    fi
    case $t in
        test_fuzz_*)
            if [ $rc -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi ;;
        *)
            count "$log"
            if [ $rc -ne 0 ] && ! grep -q '^\[  FAILED  \]' "$log"; then
                echo "$t: exited with status $rc before its summary (crash or sanitizer report)"
                failed=$((failed + 1))
            fi ;;
    esac
done

# libFuzzer, one target per parser (the Makefile's FUZZERS, its one list); the hostlist parser gets
# the larger share of the time
for name in ${FUZZERS-hostlist}; do   # FUZZERS set and empty: none
    seconds=$((fuzz_time / 5))
    [ "$name" = hostlist ] && seconds=$((fuzz_time / 3))
    fuzzer="$top/build/fuzz/fuzz_$name"
    if [ ! -x "$fuzzer" ]; then
        echo "SKIP: libFuzzer run of the $name parser (clang with libFuzzer not available)"
        skipped=$((skipped + 1))
        continue
    fi
    corpus=$(mktemp -d)
    # -seed=1: the same inputs on every run, so a CI result does not depend on luck (make fuzz
    # explores with fresh seeds)
    if "$fuzzer" -seed=1 -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 "$corpus" \
        "$top/tests/fuzz/corpus/$name" >"$log" 2>&1; then
        echo "[ OK ] libFuzzer on the $name parser for $seconds s, $(grep -o 'number_of_executed_units: [0-9]*' "$log" | tail -n 1 | sed 's/.*: //') inputs"
        passed=$((passed + 1))
    else
        cat "$log"
        echo "[ FAILED ] libFuzzer found a crash in the $name parser (see above)"
        failed=$((failed + 1))
    fi
    rm -rf "$corpus"
done

echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
