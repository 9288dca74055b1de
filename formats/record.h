/* record.h - the run record: one JSON object per training run, one line, appended to a file
 * that collects a study's runs (formats/FORMAT.md defines it; the analyzer reads exactly this). */
#ifndef RECORD_H
#define RECORD_H

#include <stddef.h>

#include <stdbool.h>

#include "common/dt_error.h"

/* Bumped whenever a field changes meaning or disappears (adding fields does not). */
#define RECORD_VERSION 2

/* A record line is at most this long: 16 MiB holds a job of 100,000 ranks or more, each with its
 * host name (up to 64 bytes) and compute time (1 MiB refused any job beyond about 45,000 ranks). */
#define RECORD_MAX_LINE (1 << 24)

struct run_record {
    /* The texts of any length (job_name, comm_options, tag, emulation, replaced, error) are pointers, not
     * arrays (a 1 GB records file's million runs in memory at once): a parsed record's own
     * (record_free frees them; one holding nothing points at record_no_text), or the writer's,
     * whose record is never record_free'd. NULL is read as "" by record_append only. */
    char job_id[64], *job_name, step_id[64];
    char *nodelist;               /* compressed, Slurm's form: gn[01-02] */
    int nodes, gpus_per_node, world_size;
    char **hostnames;             /* world_size of them, rank order */
    char model[64], dataset[64], optimizer[16], backend[16];
    char comm[32];                /* the gradient-exchange method, as the reference experiments name it ("bsp-a2a") */
    char *comm_options;           /* its settings ("servers=1 partition=4096000"); "" for none */
    int batch_per_replica, epochs, threads, resumed;
    double lr;
    long steps_per_rank;
    long max_steps;               /* --max-steps, 0 when the epochs alone ended the run */
    long resumed_at_step;         /* the step the last resume began after (0: ran from the start):
                                     runtime_seconds and the rates cover the steps after it only */
    double runtime_seconds, peak_data_per_sec, final_data_per_sec;
    double tokens_per_sec;        /* a text model's final rate in tokens (samples/s x sequence length); 0 for images */
    int epochs_done;
    double *epoch_seconds;        /* epochs_done of each */
    double *epoch_accuracy;       /* -1 where the epoch was not evaluated; in a parsed record, in
                                     epoch_seconds' block (one allocation: a million runs at once) */
    char start_time[32], end_time[32];   /* ISO 8601, UTC */
    char exit_state[16];          /* completed, interrupted, failed */
    char *error;                  /* why, when failed */
    char version[32];             /* dtrain's */
    char *tag;                    /* the user's label of the run (dtrain-train --tag: "1gbit"); "" when none */
    char *emulation;              /* an emulated run's compute ("profile=F rate=R dilate=K"); "" for a real run */
    char *replaced;               /* the nodes spares took over from in the job, why, and how long
                                     training stood still (the sbatch template's); "" when none */
    /* Written (as rank_compute_us, whole microseconds): every rank's mean forward + backward a
     * step in ms (world_size of them, rank order; NULL: not measured). The writer's array. */
    const double *rank_compute_ms;
    /* The same as read back from a record (world_size of them; NULL where the record has none),
     * the reader's: record_free frees it. */
    double *rank_compute_read;
};

/* Appends the record as one line, whole or not at all: writers hold the file's lock, a short write
 * (a full disk) is cut back, a torn last line left by a killed writer is ended first. Returns 0, or
 * -1 with err naming the file. */
int record_append(const char *path, const struct run_record *rec, struct dt_err *err);

/* Appends a failed run's record unless the file already has a failed record of the same job step
 * (job_id and step_id, when the record has a job id): the ranks that see one failure each report
 * it, and the first to take the lock writes. *written says which. Returns 0, or -1 with err. */
int record_append_failure(const char *path, const struct run_record *rec, bool *written, struct dt_err *err);

/* Whether a parsed record's numbers could come from a run: runtimes and rates finite, not
 * negative and not absurd; no more GPUs than ranks; no negative counts. Both readers apply it, so
 * such a line is skipped as broken, with its file:line. 0, or -1 with err naming the field. */
int record_check_sense(const struct run_record *r, struct dt_err *err);

/* Parses one line. The strings of any length (nodelist, hostnames) are the record's own: a parsed
 * record's hostnames are one block, the pointers followed by the names. The caller frees with
 * record_free. Returns 0, or -1 with err naming the field
 * that is missing or of the wrong type. */
int record_parse(const char *line, struct run_record *rec, struct dt_err *err);

/* The same, the plain way: jansson's tree, fields taken out of it (record_ref.c). The reference
 * the tests and the fuzzer hold record_parse against; nothing else uses it. */
int record_parse_reference(const char *line, struct run_record *rec, struct dt_err *err);

/* For the two readers: rec->hostnames becomes one block of count pointers and the names' bytes.
 * Returns 0, or -1 when out of memory. */
int record_keep_hostnames(struct run_record *rec, const char *const *names, int count);

struct hostlist;

/* rec->hostnames, world of them, from a node list alone (for a record written without the ranks):
 * each rank's host where one rank runs a node (the list then names them in rank order); with block,
 * where the ranks are more than the nodes, as Slurm's default block distribution places them (srun
 * -N 2 -n 5: ranks 0-2 on the first node, 3-4 on the second); else "". hosts keeps the names; the
 * caller frees rec->hostnames and hosts. 0, or -1 when out of memory. */
int record_hosts_from_nodelist(struct run_record *rec, const char *nodelist, int world, bool block,
                               struct hostlist *hosts);

void record_free(struct run_record *rec);

/* What a parsed record's empty texts point at (never freed), and a parser's copy of text for one of
 * them: record_no_text for "", else memory of the record's own; NULL when out of memory. */
extern char record_no_text[1];
char *record_own_text(const char *text);

/* "2026-11-21T09:30:00Z" for a time_t. */
void record_time(long seconds_since_epoch, char out[32]);

/* A version-1 record's method under its version-2 name (allreduce: bsp-a2a, wfbp: wfbp-a2a), so old
 * and new runs of one method group together. Both parsers call it. */
void record_upgrade(struct run_record *r, long version);

#endif
