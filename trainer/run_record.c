/* run_record.c - dtrain-train's run records: the run's settings and result as formats/record.h's
 * run_record, appended to --record FILE (run_record.h). */
#include "trainer/run_record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/dt_parse.h"
#include "common/atomic_file.h"
#include "common/hostlist.h"
#include "formats/record.h"
#include "common/version.h"

static void copy_env(const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s", getenv(name) ? getenv(name) : "");
}

/* Where the sbatch template's spares took over in this job (DTRAIN_REPLACED: "gn02 by gn04 (why)"),
 * and how long training stood still after the last failure (DTRAIN_FAILED_AT, seconds since the
 * epoch, to the millisecond): until this run's first step after the resume began, the restart and
 * the checkpoint's load included (both to the sub-second: whole seconds on both sides, and the end
 * of the run less its training time, made a 5 s stand-still read 0 s, or vanish). The failure's
 * time is the batch host's clock, the start rank 0's: a skew under a second is taken for none.
 * "" when no spare took over. */
static void describe_replaced(const struct train_result *res, char *out, size_t size)
{
    const char *replaced = getenv("DTRAIN_REPLACED"), *failed_at = getenv("DTRAIN_FAILED_AT");
    out[0] = '\0';
    if (!replaced || !replaced[0])
        return;
    double failed = failed_at ? atof(failed_at) : 0;
    double still = res ? res->started_at - failed : 0;
    if (failed > 0 && res && res->started_at > 0 && still > -1)
        snprintf(out, size, "%s; training stood still %.0f s after the last failure", replaced, still > 0 ? still : 0);
    else
        snprintf(out, size, "%s", replaced);
}

/* The record's texts of any length, the writer's own (the record points at them). */
struct run_texts {
    char job_name[256], comm_options[160], tag[128], emulation[320], replaced[1024], error[512];
};

/* What the record says of the run itself; the hosts and node list are the caller's, its texts in
 * text. The launcher (dtrain) hands over the job's facts through DTRAIN_* variables: the trainer
 * never reads Slurm's. */
static void describe_run(const struct record_settings *s, const struct train_config *cfg, const struct train_result *res,
                         long start, const char *error, struct run_record *rec, struct run_texts *text)
{
    rec->job_name = text->job_name, rec->comm_options = text->comm_options, rec->tag = text->tag;
    rec->emulation = text->emulation, rec->error = text->error, rec->replaced = text->replaced;
    rec->batch_per_replica = cfg->batch, rec->epochs = cfg->epochs, rec->threads = cfg->threads, rec->lr = cfg->lr;
    rec->max_steps = cfg->max_steps;
    if (res) {
        rec->steps_per_rank = res->steps, rec->runtime_seconds = res->seconds, rec->resumed = res->resumed;
        /* (a run that failed before its first step after the resume: none of them timed) */
        rec->resumed_at_step = res->resumed_at < res->steps ? res->resumed_at : res->steps;
        rec->peak_data_per_sec = res->peak_rate, rec->final_data_per_sec = res->final_rate;
        rec->tokens_per_sec = res->final_rate * res->tokens_per_sample;
        rec->epochs_done = res->epochs_done, rec->epoch_seconds = res->epoch_seconds;
        rec->epoch_accuracy = res->epoch_accuracy;
    }
    copy_env("DTRAIN_JOB_ID", rec->job_id, sizeof rec->job_id);
    copy_env("DTRAIN_JOB_NAME", text->job_name, sizeof text->job_name);
    copy_env("DTRAIN_STEP_ID", rec->step_id, sizeof rec->step_id);
    rec->gpus_per_node = getenv("DTRAIN_GPUS_PER_NODE") ? atoi(getenv("DTRAIN_GPUS_PER_NODE")) : 0;
    snprintf(rec->model, sizeof rec->model, "%s", cfg->model);
    snprintf(rec->dataset, sizeof rec->dataset, "%s", cfg->dataset);
    snprintf(rec->optimizer, sizeof rec->optimizer, "%s", cfg->optimizer);
    snprintf(rec->backend, sizeof rec->backend, "%s%s", cfg->backend, cfg->bf16 ? "-bf16" : "");
    const struct exchange_method *method = cfg->exchange ? cfg->exchange : &exchange_bsp;
    snprintf(rec->comm, sizeof rec->comm, "%s", method->name);
    char *options = text->comm_options;
    exchange_describe_options(method, &cfg->exchange_options, options, sizeof text->comm_options);
    if (res && res->exchange.node_sums) {   /* whether a node's workers summed first */
        size_t used = strlen(options);
        snprintf(options + used, sizeof text->comm_options - used, "%snode-sums=%s", used ? " " : "",
                 res->exchange.node_sums);
    }
    if (res && res->transport[0]) {   /* GPU ranks: which way the gradients went */
        size_t used = strlen(options);
        snprintf(options + used, sizeof text->comm_options - used, "%stransport=%s", used ? " " : "", res->transport);
    }
    snprintf(text->tag, sizeof text->tag, "%s", s->tag ? s->tag : "");
    if (cfg->emulate)
        snprintf(text->emulation, sizeof text->emulation, "profile=%.200s rate=%g dilate=%g", cfg->emulate,
                 cfg->emulate_rate, cfg->dilate > 0 ? cfg->dilate : 1);
    snprintf(rec->version, sizeof rec->version, "%s", DTRAIN_VERSION);
    snprintf(rec->exit_state, sizeof rec->exit_state, "%s",
             error ? "failed" : res && res->stop_signal ? "interrupted" : "completed");
    snprintf(text->error, sizeof text->error, "%s", error ? error : "");
    describe_replaced(res, text->replaced, sizeof text->replaced);
    record_time(start, rec->start_time);
    record_time((long)time(NULL), rec->end_time);
}

int run_record_write(const struct record_settings *s, struct comm *comm, const struct train_config *cfg,
                     const struct train_result *res, long start, const char *error, struct dt_err *err)
{
    struct run_record rec = {.world_size = comm->world};
    char(*names)[256] = calloc((size_t)comm->world, sizeof *names);   /* the allgather's fixed rows */
    rec.hostnames = calloc((size_t)comm->world, sizeof *rec.hostnames);
    if (!names || !rec.hostnames)
        return free(names), free(rec.hostnames), dt_fail(err, "out of memory");
    for (int r = 0; r < comm->world; r++)
        rec.hostnames[r] = names[r];
    char mine[256];
    snprintf(mine, sizeof mine, "%s", comm->hostname);
    double compute = res ? res->compute_ms : 0;
    double *computes = calloc((size_t)comm->world, sizeof *computes);
    int rc = computes ? comm->allgather(comm, mine, sizeof mine, names, err) : dt_fail(err, "out of memory");
    if (rc == 0)
        rc = comm->allgather(comm, &compute, sizeof compute, computes, err);
    rec.rank_compute_ms = computes;
    if (rc == 0 && comm->rank == 0) {
        struct hostlist nodes;   /* distinct hosts, in rank order */
        hostlist_init(&nodes);
        for (int r = 0; r < comm->world && rc == 0; r++)
            if (hostlist_find(&nodes, rec.hostnames[r]) < 0)
                rc = hostlist_push(&nodes, rec.hostnames[r], strlen(rec.hostnames[r]), err);
        char *folded = rc == 0 ? hostlist_compress(&nodes) : NULL;
        rec.nodelist = folded;
        rec.nodes = (int)nodes.count;
        hostlist_free(&nodes);
        struct run_texts text = {.job_name = ""};
        describe_run(s, cfg, res, start, error, &rec, &text);
        if (rc == 0)
            rc = record_append(s->path, &rec, err);
        free(folded);
    }
    free(rec.hostnames);
    free(names);
    free(computes);
    return rc;
}

/* A record's shape from the launcher's variables alone, for records written without the other
 * ranks: world ranks, the node list and count (DTRAIN_NODELIST, DTRAIN_NODES), and each rank's
 * host where one rank runs a node (the list then names them in rank order), else "". The
 * caller frees rec->hostnames and hosts. 0, or -1 when out of memory. */
static int shape_from_launcher(struct run_record *rec, int world, struct hostlist *hosts)
{
    const char *nodelist = getenv("DTRAIN_NODELIST") ? getenv("DTRAIN_NODELIST") : "";
    rec->world_size = world;
    rec->nodelist = (char *)nodelist;
    rec->nodes = getenv("DTRAIN_NODES") ? atoi(getenv("DTRAIN_NODES")) : 1;
    return record_hosts_from_nodelist(rec, nodelist, world, false, hosts);   /* a guess would be worse than none */
}

/* Under a launcher that names the job, the first failure record of the job step is the one kept. */
void run_record_failure(const struct record_settings *s, struct comm *comm, const struct train_config *cfg,
                        const struct train_result *res, long start, const char *error)
{
    char message[600];
    snprintf(message, sizeof message, "rank %d on %s: %s", comm->rank, comm->hostname, error);
    struct run_record rec = {0};
    struct hostlist hosts;
    struct dt_err err;
    if (shape_from_launcher(&rec, comm->world, &hosts) == 0) {
        rec.hostnames[comm->rank] = (char *)comm->hostname;
        if (!rec.nodelist[0])
            rec.nodelist = (char *)comm->hostname;
        struct run_texts text = {.job_name = ""};
        describe_run(s, cfg, res, start, message, &rec, &text);
        bool written;
        if (record_append_failure(s->path, &rec, &written, &err) < 0)
            fprintf(stderr, "dtrain-train: rank %d: %s\n", comm->rank, err.msg);
    }
    free(rec.hostnames);
    hostlist_free(&hosts);
}

/* (srun kills every rank as soon as one dies, so a batch script records the step in their stead.) */
int run_record_lost(const struct record_settings *s, const struct train_config *cfg)
{
    int world = 1;
    if (getenv("WORLD_SIZE") && dt_parse_int(getenv("WORLD_SIZE"), 1, 1 << 24, &world) < 0)
        return fprintf(stderr, "dtrain-train: WORLD_SIZE=\"%s\" is not a rank count\n", getenv("WORLD_SIZE")), 2;
    struct run_record rec = {0};
    struct hostlist hosts;
    struct dt_err err;
    int rc = shape_from_launcher(&rec, world, &hosts) == 0 ? 0 : 1;
    if (rc == 0) {
        struct run_texts text = {.job_name = ""};
        describe_run(s, cfg, NULL, (long)time(NULL), s->failure_text, &rec, &text);
        if (record_append(s->path, &rec, &err) < 0) {
            fprintf(stderr, "dtrain-train: %s\n", err.msg);
            rc = 1;
        }
    }
    free(rec.hostnames);
    hostlist_free(&hosts);
    return rc;
}

static void record_stall(void *ctx, const char *message, long step)
{
    const struct stall_record *stalled = ctx;
    /* every live rank's watchdog fires: without a job step to tell their records apart, rank 0's
     * alone is written (with one, the first to take the file's lock writes); the others give it a
     * second before their abort ends the job, rank 0 included */
    if (stalled->comm->rank != 0 && !getenv("DTRAIN_JOB_ID")) {
        sleep(1);
        return;
    }
    struct train_result partial = {.steps = step};
    run_record_failure(stalled->settings, stalled->comm, stalled->cfg, &partial, stalled->start, message);
}

struct stall_hook run_record_stall_hook(struct stall_record *ctx)
{
    return (struct stall_hook){record_stall, ctx};
}

/* (No collective: rank 0 alone answers, and ends the whole job if it must.) */
int run_record_writable(const char *path, struct dt_err *err)
{
    int fd = open_output(path, O_WRONLY | O_APPEND, "--record", err);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

