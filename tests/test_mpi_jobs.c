/* test_mpi_jobs.c - jobs under mpirun that test the transport and the failures: MPI's split, sums
 * and sends (comm_check), dtrain-commbench's checked table, a killed server or rank ending the job,
 * a hung rank caught by the watchdog, a rank gone before MPI_Init caught by the start deadline, the
 * record a failed run leaves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/mpi_util.h"
#include "formats/record.h"
#include "tests/testutil.h"

static int failed_records(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t size = 0;
    int count = 0;
    while (getline(&line, &size, f) > 0) {
        struct run_record rec;
        struct dt_err err;
        assert_int_equal(record_parse(line, &rec, &err), 0);
        count += strcmp(rec.exit_state, "failed") == 0 && strstr(line, text) != NULL;
        record_free(&rec);
    }
    free(line);
    fclose(f);
    return count;
}

/* A parameter server killed mid-run (it kills itself before serving step 20): the job ends,
 * non-zero, within seconds, as when a worker dies. */
static void test_a_killed_server_ends_the_job(void **state)
{
    (void)state;
    require_mpirun();
    const char *methods[] = {"bsp-ps", "bytescheduler-ps"};   /* the workers wait in their loop, or their thread */
    for (int m = 0; m < 2; m++) {
        char script[8192];
        snprintf(script, sizeof script,
                 "start=$(date +%%s%%N); DTRAIN_FAULT_KILL=2:20 %s --oversubscribe -np 3 -x DTRAIN_FAULT_KILL %s "
                 "--gpus-per-node 0 -- %s --model lenet --dataset synthetic --epochs 1000 --log-every 5 --eval-every 0 "
                 "--quiet --comm %s > %s/server.out 2>&1; status=$?; end=$(date +%%s%%N); "
                 "echo \"status $status after $(( (end - start) / 1000000 )) ms\"",
                 mpirun_path, tu_bin("dtrain"), tu_bin("dtrain-train"), methods[m], mpi_dir);
        struct tu_result r;
        int status = -1;
        long ms = -1;
        run_timed(script, &r, &status, &ms);
        print_message("%s: the server of 2 workers killed at step 20: the job ended with status %d after %ld ms\n",
                      methods[m], status, ms);
        assert_true(status != 0);
        assert_true(ms < (tu_under_thread_sanitizer() ? 30000 : 10000));   /* 13.9 s seen under TSan */
        tu_result_free(&r);
    }
}

/* dtrain-commbench: the transport timed over sizes 8 B to 64 KiB, every value right, the table and
 * the JSON the cost model reads (rows, busbw = algbw at 2 ranks, an alpha-beta fit, each size also
 * with 4 operations under way: --inflight); pushpull with a server, 3 rounds under way; colocated
 * servers at 3 ranks from 4 bytes (parts of 0 floats, parts of unequal length), 3 rounds under
 * way, and as ranks of their own beside 2 workers, every sum right (a wrong one exits 1); bad
 * options refused. */
static void test_commbench_times_and_checks_the_transport(void **state)
{
    (void)state;
    require_mpirun();
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "%s --oversubscribe -np 2 %s --min-bytes 8 --max-bytes 64K --iters 3 --warmup 1 --inflight 4 "
             "--json %s/cb.json && %s --oversubscribe -np 3 %s --op pushpull --max-bytes 4K --iters 2 --inflight 3 && "
             "%s --oversubscribe -np 3 %s --op colocated --min-bytes 4 --max-bytes 4K --iters 2 --inflight 3 && "
             "%s --oversubscribe -np 4 %s --op colocated-ranks --min-bytes 4 --max-bytes 4K --iters 2 --inflight 3 && "
             "%s --oversubscribe -np 2 %s --min-bytes 1M --max-bytes 2M --iters 2 --warmup 1",
             mpirun_path, tu_bin("dtrain-commbench"), mpi_dir, mpirun_path, tu_bin("dtrain-commbench"), mpirun_path,
             tu_bin("dtrain-commbench"), mpirun_path, tu_bin("dtrain-commbench"), mpirun_path, tu_bin("dtrain-commbench"));
    struct tu_result r;
    run_mpi_script(cmd, &r);
    assert_true(tu_contains(r.out, "# dtrain-commbench allreduce over mpi, 2 ranks"));
    assert_true(tu_contains(r.out, "# dtrain-commbench pushpull over mpi, 3 ranks"));
    assert_true(tu_contains(r.out, "# dtrain-commbench colocated over mpi, 3 ranks"));
    assert_true(tu_contains(r.out, "# dtrain-commbench colocated-ranks over mpi, 4 ranks"));
    assert_true(tu_contains(r.out, "fitted on 2 sizes from 32768 bytes"));
    /* --min-bytes 1M: the fit starts where the sizes do, and says its alpha is not a measurement */
    assert_true(tu_contains(r.out, "fitted on 2 sizes from 1048576 bytes"));
    assert_true(tu_contains(r.out, "alpha is extrapolated below 1048576 bytes"));
    /* beside busbw, the links' own rates where they report one (none on this machine's eth0) */
    assert_true(tu_contains(r.out, "# this node's links as they report their rate: ") ||
                tu_contains(r.out, "# no link here reports its rate (/sys/class/net): busbw is the allreduce's"));
    assert_true(tu_contains(r.out, "one operation's share of the time of 4 under way at once"));
    assert_true(tu_contains(r.out, "one operation's share of the time of 3 under way at once"));
    char path[4200];
    snprintf(path, sizeof path, "%s/cb.json", mpi_dir);
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "ranks")), 2);
    json_t *rows = json_object_get(doc, "rows");
    assert_int_equal(json_array_size(rows), 14);   /* 8, 16, ..., 65536 */
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i);
        assert_int_equal(json_integer_value(json_object_get(row, "bytes")), 8L << i);
        assert_int_equal(json_integer_value(json_object_get(row, "wrong")), 0);
        assert_true(json_real_value(json_object_get(row, "busbw_gbs")) ==
                    json_real_value(json_object_get(row, "algbw_gbs")));   /* 2(n-1)/n = 1 at 2 ranks */
        assert_true(json_real_value(json_object_get(row, "time_us_inflight")) > 0);   /* --inflight 4 */
        assert_true(json_real_value(json_object_get(row, "time_us_alone")) > 0);      /* and one of them alone */
    }
    assert_int_equal(json_integer_value(json_object_get(doc, "inflight")), 4);
    assert_non_null(json_object_get(json_object_get(doc, "fit"), "alpha_s"));
    json_decref(doc);
    tu_result_free(&r);
    char bin[4096];
    snprintf(bin, sizeof bin, "%s", tu_bin("dtrain-commbench"));
    char *bad[] = {bin, "--op", "gather", NULL};
    assert_int_equal(tu_run(bad, NULL, &r), 0);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--op \"gather\": expected allreduce, pushpull, colocated or colocated-ranks"));
    tu_result_free(&r);
}

/* dtrain-commbench's rounds in pieces (--partition-bytes: bytescheduler-ps's traffic): 1000-byte
 * pieces, so a 4 KiB buffer is 5 pieces, the last short, over 1 server (pushpull), 3 (colocated,
 * every rank its own server for some) and 2 beside 2 workers (colocated-ranks); a credit of 1500
 * bytes keeps one push under way at a time; every sum right (a wrong one exits 1); the JSON says
 * the piece and the credit, busbw counts the workers (colocated-ranks: half the ranks); options
 * that do not go together refused. */
static void test_commbench_rounds_in_pieces_under_a_credit(void **state)
{
    (void)state;
    require_mpirun();
    char cmd[16384];
    const char *opts = "--partition-bytes 1000 --credit-bytes 1500 --min-bytes 4 --max-bytes 4K --iters 2 --warmup 1";
    snprintf(cmd, sizeof cmd, "%s --oversubscribe -np 3 %s --op pushpull %s --json %s/pieces.json && "
             "%s --oversubscribe -np 3 %s --op colocated %s && "
             "%s --oversubscribe -np 4 %s --op colocated-ranks %s --json %s/pieces-ranks.json",
             mpirun_path, tu_bin("dtrain-commbench"), opts, mpi_dir, mpirun_path, tu_bin("dtrain-commbench"), opts,
             mpirun_path, tu_bin("dtrain-commbench"), opts, mpi_dir);
    struct tu_result r;
    run_mpi_script(cmd, &r);
    assert_true(tu_contains(r.out, "# in pieces of 1000 bytes, each whole at one server, a worker's pushes under way "
                                   "within 1500 bytes"));
    assert_true(tu_contains(r.out, "# dtrain-commbench colocated-ranks over mpi, 4 ranks"));
    char path[4200];
    snprintf(path, sizeof path, "%s/pieces.json", mpi_dir);
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "partition_bytes")), 1000);
    assert_int_equal(json_integer_value(json_object_get(doc, "credit_bytes")), 1500);
    json_t *rows = json_object_get(doc, "rows");
    assert_int_equal(json_array_size(rows), 11);   /* 4, 8, ..., 4096 */
    for (size_t i = 0; i < json_array_size(rows); i++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(rows, i), "wrong")), 0);
    json_decref(doc);
    snprintf(path, sizeof path, "%s/pieces-ranks.json", mpi_dir);   /* 2 workers' bus: 2(2 - 1)/2 = 1 algbw */
    assert_non_null(doc = json_load_file(path, 0, &jerr));
    rows = json_object_get(doc, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++)
        assert_true(json_real_value(json_object_get(json_array_get(rows, i), "busbw_gbs")) ==
                    json_real_value(json_object_get(json_array_get(rows, i), "algbw_gbs")));
    json_decref(doc);
    tu_result_free(&r);
    char bin[4096];
    snprintf(bin, sizeof bin, "%s", tu_bin("dtrain-commbench"));
    char *refused[][8] = {{bin, "--partition-bytes", "4096000", NULL},
                          {bin, "--op", "pushpull", "--credit-bytes", "1M", NULL},
                          {bin, "--op", "pushpull", "--partition-bytes", "1001", NULL},
                          {bin, "--op", "pushpull", "--partition-bytes", "4K", "--inflight", "2", NULL}};
    const char *said[] = {"--partition-bytes cuts a servers' round", "--credit-bytes limits pieces under way",
                          "--partition-bytes \"1001\": expected a size of whole floats", "--inflight is for whole operations"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tu_run(refused[i], NULL, &r), 0);
        assert_int_equal(r.status, 2);
        if (!tu_contains(r.err, said[i]))
            print_error("%s\n", r.err);
        assert_true(tu_contains(r.err, said[i]));
        tu_result_free(&r);
    }
}

/* The MPI transport beyond what training uses today (tests/comm_check.c, 3 ranks): a split into
 * two sub-communicators with their own allreduce, two non-blocking sums in flight at once, and
 * send/recv around a ring, each against the values it must give; comm_mpi_init's Open MPI
 * settings made where the environment has none and left where it has its own. */
static void test_the_mpi_transport_splits_sums_and_sends(void **state)
{
    (void)state;
    require_mpirun();
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s --oversubscribe -np 3 %s", mpirun_path, tu_bin("comm_check"));
    struct tu_result r;
    run_mpi_script(cmd, &r);
    assert_true(tu_contains(r.out, "comm check: ok (3 ranks)"));
    tu_result_free(&r);
    /* a user's own Open MPI settings stay as chosen */
    snprintf(cmd, sizeof cmd, "OMPI_MCA_btl_tcp_links=3 OMPI_MCA_coll_libnbc_iallreduce_algorithm=2 %s --oversubscribe "
             "-np 3 %s", mpirun_path, tu_bin("comm_check"));
    run_mpi_script(cmd, &r);
    assert_true(tu_contains(r.out, "comm check: ok (3 ranks)"));
    tu_result_free(&r);
}

/* A rank killed mid-run (OOM killer, node failure): the job ends, non-zero, within seconds. The
 * rank kills itself (fault injection: SIGKILL before step 20, after the Step lines began), so the
 * test signals nothing it did not start. The time counts from the Step15 line to the job's end. */
static void test_a_killed_rank_ends_the_job(void **state)
{
    (void)state;
    require_mpirun();
    /* over BSP's allreduce, and with ByteScheduler's communication thread waiting for the rank */
    const char *methods[] = {"bsp-a2a", "bytescheduler-a2a"};
    for (int m = 0; m < 2; m++) {
        char script[8192];
        snprintf(script, sizeof script,
                 "DTRAIN_FAULT_KILL=1:20 %s --oversubscribe -np 2 -x DTRAIN_FAULT_KILL %s --gpus-per-node 0 -- %s "
                 "--model lenet --dataset synthetic --epochs 1000 --log-every 5 --eval-every 0 --quiet --comm %s "
                 "> %s/long.out 2> %s/long.err & job=$!; "
                 "while ! grep -q Step15 %s/long.out && kill -0 $job 2>/dev/null; do sleep 0.02; done; "
                 "start=$(date +%%s%%N); wait $job; status=$?; end=$(date +%%s%%N); "
                 "echo \"status $status after $(( (end - start) / 1000000 )) ms\"",
                 mpirun_path, tu_bin("dtrain"), tu_bin("dtrain-train"), methods[m], mpi_dir, mpi_dir, mpi_dir);
        struct tu_result r;
        int status = -1;
        long ms = -1;
        run_timed(script, &r, &status, &ms);
        print_message("%s: one of 2 ranks killed: the job ended with status %d after %ld ms\n", methods[m], status,
                      ms);
        assert_true(status != 0);
        assert_true(ms < 10000);
        tu_result_free(&r);
    }
}

/* A rank that hangs (fault injected): the others would wait in MPI_Allreduce forever; the
 * watchdog ends the job after --timeout with its message. */
/* Rank 1 exits before MPI_Init: rank 0 used to wait inside MPI_Init forever, as the watchdog only
 * started with training. The start deadline (--timeout from the program's start) ends it, naming
 * the rank and what it waited for. */
static void test_a_rank_gone_before_mpi_init_is_timed_out(void **state)
{
    (void)state;
    require_mpirun();
    char script[8192];
    snprintf(script, sizeof script,
             "start=$(date +%%s%%N); timeout 120 %s --oversubscribe -np 2 sh -c '[ \"$OMPI_COMM_WORLD_RANK\" = 1 ] "
             "&& exit 0; exec %s --model lenet --dataset synthetic --max-steps 5 --quiet --timeout 0.05'; "
             "status=$?; end=$(date +%%s%%N); echo \"status $status after $(( (end - start) / 1000000 )) ms\"",
             mpirun_path, tu_bin("dtrain-train"));
    struct tu_result r;
    int status = -1;
    long ms = -1;
    run_timed(script, &r, &status, &ms);
    print_message("rank 1 of 2 exited before MPI_Init, --timeout 3 s: status %d after %ld ms\n", status, ms);
    assert_true(status != 0 && status != 124);   /* 124: timeout(1) had to end it */
    assert_true(tu_contains(r.err, "rank 0") && tu_contains(r.err, "training had not started"));
    tu_result_free(&r);
}

/* One of 4 ranks hangs before step 5 (DTRAIN_FAULT_HANG): after --stall-warning rank 0 warns,
 * naming that rank, what it does and since when, and the ranks that wait; at --timeout the job
 * ends with the same words, in the failed record too; the statuses are removed. */
static void test_a_hung_rank_is_caught_by_the_watchdog(void **state)
{
    (void)state;
    require_mpirun();
    char script[8192];
    snprintf(script, sizeof script,
             "mkdir -p %s/status && start=$(date +%%s%%N); DTRAIN_FAULT_HANG=2:5 %s --oversubscribe -np 4 -x "
             "DTRAIN_FAULT_HANG %s --gpus-per-node 0 -- %s --model lenet --dataset synthetic --batch-size 16 --epochs "
             "1000 --log-every 5 --eval-every 0 --quiet --timeout 0.05 --stall-warning 1 --status-dir %s/status "
             "--record %s/hung.jsonl; status=$?; end=$(date +%%s%%N); ls -A %s/status; "
             "echo \"status $status after $(( (end - start) / 1000000 )) ms\"",
             mpi_dir, mpirun_path, tu_bin("dtrain"), tu_bin("dtrain-train"), mpi_dir, mpi_dir, mpi_dir);
    struct tu_result r;
    int status = -1;
    long ms = -1;
    run_timed(script, &r, &status, &ms);
    print_message("rank 2 of 4 hung at step 5, --timeout 3 s: the job ended with status %d after %ld ms\n", status, ms);
    assert_true(status != 0);
    assert_true(ms < 20000);
    char host[256] = "", other[320];
    gethostname(host, sizeof host - 1);   /* mpirun's ranks run here */
    assert_true(tu_contains(r.err, "no step finished for"));
    assert_true(tu_contains(r.err, "rank 0 on ") && tu_contains(r.err, ": warning: no step finished for 1 s"));
    snprintf(other, sizeof other, "rank 2 on %s is loading data of step 5 for ", host);
    assert_true(tu_contains(r.err, other));
    assert_true(tu_contains(r.err, "; ranks 0-1, 3 wait in the exchange of step 5"));
    for (int rank = 0; rank < 4; rank++) {   /* only rank 2 is named as behind */
        snprintf(other, sizeof other, "rank %d on %s is ", rank, host);
        assert_true(rank == 2 || !tu_contains(r.err, other));
    }
    assert_true(strncmp(r.out, "status ", 7) == 0);   /* ls printed nothing: the statuses were removed */
    tu_result_free(&r);
    char records[4200];
    snprintf(records, sizeof records, "%s/hung.jsonl", mpi_dir);
    assert_int_equal(failed_records(records, "is loading data of step 5"), 1);
}

/* A multi-rank run that fails leaves one "failed" record naming the rank and the
 * cause. Rank 0's checkpoint meets a full disk (a 64 KiB tmpfs in a private mount namespace); the
 * job is ended, and the record is written first, without a collective. */
static void test_a_failed_run_leaves_its_record(void **state)
{
    (void)state;
    require_mpirun();
    if (geteuid() != 0 || system("unshare -m true 2>/dev/null") != 0) {
        tu_skip("a full disk needs root (a tmpfs in a private mount namespace)");
    }
    char script[8192];
    snprintf(script, sizeof script,
             "mkdir -p %s/full && unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs %s/full && "
             "%s --oversubscribe -np 2 %s --gpus-per-node 0 -- %s --model lenet --dataset synthetic --max-steps 40 "
             "--log-every 10 --eval-every 0 --quiet --checkpoint %s/full/ck --checkpoint-every 10 "
             "--record %s/failed.jsonl'; echo \"status $? after 0 ms\"",
             mpi_dir, mpi_dir, mpirun_path, tu_bin("dtrain"), tu_bin("dtrain-train"), mpi_dir, mpi_dir);
    struct tu_result r;
    int status = -1;
    long ms = -1;
    run_timed(script, &r, &status, &ms);
    assert_true(status != 0);
    char records[4200];
    snprintf(records, sizeof records, "%s/failed.jsonl", mpi_dir);
    int found = failed_records(records, "\"error\":\"rank 0 on ");
    if (found != 1)
        print_error("%d failed records; stderr:\n%s\n", found, r.err);
    assert_int_equal(found, 1);
    assert_int_equal(failed_records(records, "No space left on device"), 1);
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_killed_server_ends_the_job),
        cmocka_unit_test(test_commbench_times_and_checks_the_transport),
        cmocka_unit_test(test_commbench_rounds_in_pieces_under_a_credit),
        cmocka_unit_test(test_the_mpi_transport_splits_sums_and_sends),
        cmocka_unit_test(test_a_killed_rank_ends_the_job),
        cmocka_unit_test(test_a_hung_rank_is_caught_by_the_watchdog),
        cmocka_unit_test(test_a_rank_gone_before_mpi_init_is_timed_out),
        cmocka_unit_test(test_a_failed_run_leaves_its_record),
    };
    return cmocka_run_group_tests(tests, mpi_setup, mpi_teardown);
}
