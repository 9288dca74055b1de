/* dtrain_train.c - `dtrain-train`: train a model on a dataset, printing the reference trainer's log
 * lines (Step and Epoch), with a run record when asked. The options are train_options.c's, the
 * records run_record.c's, the training trainer/loop's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainer/backend/backend_cuda.h"
#include "trainer/comm/comm.h"
#include "trainer/run_record.h"
#include "trainer/train_options.h"
#include "trainer/loop/watchdog.h"
#include "common/stdout_check.h"

/* The rank's GPU (cuda_device_for_rank): dtrain's choice, else the local rank a launcher gave
 * (torchrun's LOCAL_RANK, mpirun's). Never Slurm's own variables: the launcher hands over what the
 * trainer needs (DESIGN.md). CPU runs never touch the CUDA runtime (its start costs time and memory
 * in every rank). */
static int gpu_of_rank(const struct train_config *cfg)
{
    if (strcmp(cfg->backend, "cuda") != 0)
        return 0;
    const char *local = getenv("LOCAL_RANK") ? getenv("LOCAL_RANK") : getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    return cuda_device_for_rank(getenv("DTRAIN_GPU"), local, backend_cuda_devices());
}

/* Rank 0's last lines on standard error: the run's rate, arithmetic and accuracy, and what the
 * gradient exchange did. */
static void print_summary(const struct train_config *cfg, const struct train_result *result)
{
    char accuracy[32] = "not evaluated";   /* --eval-every 0 */
    if (result->final_accuracy >= 0)
        snprintf(accuracy, sizeof accuracy, "%.5f", result->final_accuracy);
    char tokens[48] = "";   /* the reference Transformer runs count words/s */
    if (result->tokens_per_sample > 0)
        snprintf(tokens, sizeof tokens, ", %.0f tokens/s", result->final_rate * result->tokens_per_sample);
    fprintf(stderr, "dtrain-train: %ld steps in %.2f s, %.2f samples/s (peak %.2f)%s, %.1f GFLOP/s, final test "
            "accuracy %s\n", result->steps, result->seconds, result->final_rate, result->peak_rate, tokens,
            result->final_rate * result->flops_per_sample / 1e9, accuracy);
    if (result->exchange.steps > 0)
        fprintf(stderr, "dtrain-train: gradient exchange %s%s%s: %ld steps, %.1f transfers a step, %.0f floats a step%s%s\n",
                cfg->exchange ? cfg->exchange->name : exchange_bsp.name,
                result->transport[0] ? " over " : "", strcmp(result->transport, "host") == 0 ? "host memory (staged)"
                                                      : result->transport, result->exchange.steps,
                (double)result->exchange.transfers / result->exchange.steps, result->exchange.floats / result->exchange.steps,
                result->exchange.detail[0] ? "; " : "", result->exchange.detail);
    if (result->straggler_reports > 0)   /* what naming a slow rank cost, measured where it runs */
        fprintf(stderr, "dtrain-train: straggler report: %ld reports, %.2f ms in all, %.3f%% of the run\n",
                result->straggler_reports, result->straggler_seconds * 1e3,
                result->seconds > 0 ? 100 * result->straggler_seconds / result->seconds : 0);
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain-train");   /* a full disk is an error, not an empty table */
    struct train_options opts;
    int rc = train_options_parse(argc, argv, &opts);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct train_config cfg = opts.cfg;
    const struct record_settings *record = &opts.record;
    if (record->failure_text)
        return run_record_lost(record, &cfg);
    struct dt_err err;
    start_deadline_arm(cfg.timeout_minutes * 60);   /* MPI_Init itself can wait forever */
    struct comm *comm = comm_mpi_init(&argc, &argv, cfg.exchange && cfg.exchange->needs_thread, &err);
    if (!comm) {
        fprintf(stderr, "dtrain-train: %s\n", err.msg);
        return 2;
    }
    cfg.comm = comm;
    cfg.gpu = gpu_of_rank(&cfg);
    if (record->path && comm->rank == 0 && run_record_writable(record->path, &err) < 0) {
        fprintf(stderr, "dtrain-train: %s\n", err.msg);
        if (comm->world > 1)
            comm->abort(comm, 2);
        comm->finalize(comm);
        return 2;
    }
    long start = (long)time(NULL);
    struct train_result result;
    struct stall_record stalled = {record, comm, &cfg, start};
    if (record->path)
        cfg.on_stall = run_record_stall_hook(&stalled);
    if (train_run(&cfg, stdout, &result, &err) < 0) {
        fprintf(stderr, "dtrain-train: rank %d on %s: %s\n", comm->rank, comm->hostname, err.msg);
        struct dt_err record_err;
        if (record->path && comm->world == 1 &&
            run_record_write(record, comm, &cfg, &result, start, err.msg, &record_err) < 0)
            fprintf(stderr, "dtrain-train: %s\n", record_err.msg);
        else if (record->path && comm->world > 1)   /* the job is about to be ended: no collective */
            run_record_failure(record, comm, &cfg, &result, start, err.msg);
        train_result_free(&result);
        /* a run that trained and then failed is a failure (1); one that never started is bad input
         * (2); either way the other ranks must not wait for this one: end the whole job */
        int status = result.steps > 0 ? 1 : 2;
        if (comm->world > 1)
            comm->abort(comm, status);
        comm->finalize(comm);
        return status;
    }
    if (cfg.export_dir) {   /* nothing trained, nothing to record */
        if (comm->rank == 0)
            fprintf(stderr, "dtrain-train: wrote the initial parameters and the data to %s\n", cfg.export_dir);
        comm->finalize(comm);
        return 0;
    }
    if (comm->rank == 0)
        print_summary(&cfg, &result);
    rc = 0;
    if (record->path && run_record_write(record, comm, &cfg, &result, start, NULL, &err) < 0) {
        fprintf(stderr, "dtrain-train: rank %d: %s\n", comm->rank, err.msg);
        rc = 1;
    }
    int stopped = result.stop_signal;
    train_result_free(&result);
    comm->finalize(comm);
    /* stopped by Slurm's signal after a checkpoint: the shell's status for that signal */
    return rc ? rc : stopped ? 128 + stopped : 0;
}
