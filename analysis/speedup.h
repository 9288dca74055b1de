/* speedup.h - run records grouped by configuration into the reference experiments' speedup table: one row per
 * run, then a bold Avg row per (#Nodes, #GPUs) group, Runtime as H:MM:SS (H:MM:SS.ss when a run
 * is under 10 s), Speedup = the baseline group's average runtime / the group's, 2 decimals. After
 * those columns each Avg row carries its uncertainty: the number of runs, the 95% confidence
 * intervals of the mean runtime (t) and of the speedup (stats.h: the delta method), and the
 * efficiency (speedup / GPUs); FORMAT_REFERENCE prints the reference experiments' form alone. */
#ifndef SPEEDUP_H
#define SPEEDUP_H

#include <stdbool.h>
#include <stdio.h>

#include "formats/record.h"

enum speedup_stat { STAT_MEAN, STAT_MEDIAN };
enum speedup_format { FORMAT_MD, FORMAT_CSV, FORMAT_JSON, FORMAT_REFERENCE };

struct speedup_options {
    int base_nodes, base_gpus;   /* the baseline configuration (1 x 1 by default) */
    enum speedup_stat stat;
    enum speedup_format format;
    int extra;                   /* also efficiency (speedup / GPUs) and spread (std, min-max) */
    bool by_rate;                /* speedup from samples/s, for runs that did not train the same samples */
    bool baseline_optional;      /* without a baseline run, speedups are NAN ("-") instead of an error */
    const char *heading;         /* printed above the table (Markdown "###", CSV "#"); NULL for none */
};

/* What an Avg row says of its uncertainty, for either table (records' or a lab's corrected). */
struct avg_uncertainty {
    int runs;
    double runtime_lo, runtime_hi;   /* the mean runtime's 95% interval, seconds; NAN for one run */
    double speedup, speedup_lo, speedup_hi;   /* NAN where there is no speedup or no interval */
    bool baseline;                   /* the baseline itself: its speedup is 1 by definition */
    bool baseline_one_run;           /* no speedup interval as the baseline has a single run */
    double scale;                    /* GPUs in all over the baseline's: efficiency = speedup / scale
                                      * (a 2 x 4 job against a 1 x 4 baseline: 2) */
};

/* Its four cells as the tables print them: Runs, "H:MM:SS-H:MM:SS" or "- (1 run)", "lo-hi" or "-
 * (baseline)", "- (1 run)", "- (1 baseline run)", "-", and the efficiency (speedup / the GPUs'
 * ratio to the baseline's). */
struct uncertainty_cells {
    char runs[16], runtime[48], speedup[48], efficiency[16];
};
void speedup_uncertainty_cells(const struct avg_uncertainty *u, int decimals, struct uncertainty_cells *c);

/* The header cells those four go under, Markdown and CSV. */
#define UNCERTAINTY_MD_HEADER " Runs | Runtime 95% CI | Speedup 95% CI | Efficiency |"
#define UNCERTAINTY_CSV_HEADER ",Runs,Runtime 95% CI,Speedup 95% CI,Efficiency"

/* One (#Nodes, #GPUs) configuration of a set of runs. */
struct speedup_group {
    int nodes, gpus;             /* an uneven group's gpus are its total */
    bool uneven;                 /* nodes ran different numbers of ranks (--gpus-per-node auto) */
    int first, count;            /* into speedup_result.order */
    double average, std, min, max, speedup;   /* runtimes in seconds */
    double mean;                 /* the runtimes' mean (average is the median with STAT_MEDIAN) */
    double runtime_lo, runtime_hi;   /* the 95% interval of the mean runtime; NAN for one run */
    double speedup_lo, speedup_hi;   /* of the speedup; NAN for one run here or in the baseline, and
                                        for the baseline itself (its speedup is 1 by definition) */
    bool speedup_baseline;       /* the group is the baseline */
    double data_per_sec;         /* the mean of the runs' peak data/sec */
    double data_per_sec_std;     /* and their std */
    double samples;              /* the mean of the runs' samples (steps x batch x workers) */
    int workers;                 /* ranks that trained (a parameter server's job has more ranks) */
};

struct speedup_result {
    int *order;                  /* run indices, grouped by configuration */
    struct speedup_group *groups;
    int count;
};

/* #GPUs of a run: GPUs per node, or for CPU ranks the ranks per node; for a run whose nodes ran
 * different numbers of ranks, the total. */
int speedup_gpus_of(const struct run_record *r);

/* Whether the run's nodes ran different numbers of ranks (its hostnames say: 3 on gn01, 2 on
 * gn02), and then the split as the reference notebooks write it ("gn01:3, gn02:2") into text. */
bool speedup_split(const struct run_record *r, char *text, size_t size);

/* Groups runs[0..n) by configuration and computes each group's average and speedup: the baseline's
 * runtime over the group's, or with by_rate the group's samples/s (its samples over its average
 * runtime) over the baseline's. Returns 0, or -1 with err when there is no run of the baseline
 * configuration (unless baseline_optional). */
int speedup_compute(const struct run_record *runs, int n, const struct speedup_options *opt,
                    struct speedup_result *out, struct dt_err *err);

void speedup_result_free(struct speedup_result *result);

/* Prints the table of runs[0..n), under opt->heading when there is one. Returns 0, or -1 with err
 * when there is no run of the baseline configuration (unless baseline_optional). */
int speedup_table(FILE *out, const struct run_record *runs, int n, const struct speedup_options *opt,
                  struct dt_err *err);

#endif
