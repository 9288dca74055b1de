/* cmd_compare.c - dtrain-analyze compare: prediction files (predict --save) beside the runs that
 * came after them. Each cell's error, the mean absolute error, the worst cell, how many are within
 * 15%, and whether the method predicted fastest at each job size is the one that ran fastest; a
 * run that started before its prediction was made is left out and said (it could have been seen). */
#include "analysis/command.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/methods.h"
#include "analysis/predictions.h"
#include "analysis/stats.h"

static const char compare_help[] =
    "Usage: dtrain-analyze compare --predictions FILE [--predictions FILE...] RECORDS...\n"
    "  Holds predictions written before the runs (dtrain-analyze predict --save) against the run\n"
    "  records (files or directories) of the jobs they planned: a run counts for a cell when it\n"
    "  trained the file's model at its batch and tag, with the cell's method, workers and layout\n"
    "  (nodes, or where its servers sat), and started after the predictions were made; one that\n"
    "  started before is left out and said: a prediction that could have seen its runs is not\n"
    "  blind. For each file, then for all of them together: every cell's predicted and measured\n"
    "  samples/s (mean +- std of its runs) and error, the mean absolute error, the worst cell, the\n"
    "  cells within 15%, and at each job size whether the method predicted fastest ran fastest;\n"
    "  where it did not, whether the runs separate the two (the 95% interval of their rates' ratio\n"
    "  above 1: two runs each of methods 5% apart seldom are).\n"
    "      --predictions FILE  a prediction file; repeatable (a file a setting: a model, a link)\n"
    "  Exit 0, or 2 for a file that cannot be read or no cell with a run.\n"
    "  e.g. dtrain-analyze predict r18.json --nodes 3 --gpus-per-node 1 --inter 5gbit --tag 5gbit \\\n"
    "           --save plan.json    # before the runs\n"
    "       dtrain-analyze compare --predictions plan.json runs/records.jsonl\n";

enum { C_PREDICTIONS = 400 };
#define COMPARE_MAX_FILES 64

/* The errors of a set of cells, summed as they are compared. */
struct error_summary {
    int cells, within, sizes, picked;
    int unseparated;           /* misses where the runs do not separate the two methods */
    double absolute_sum, worst;
    char worst_cell[96];
};

/* Whether run r is one of cell's jobs in set: model, batch, tag, method, workers, layout. */
static bool runs_cell(const struct run_record *r, const struct prediction_set *set, const struct predicted_cell *cell)
{
    if (strcmp(r->model, set->model) != 0 || r->batch_per_replica != set->batch || strcmp(r->comm, cell->method) != 0 ||
        (set->tag[0] && strcmp(r->tag, set->tag) != 0) || methods_workers_of(r) != cell->workers)
        return false;
    if (cell->servers > 0)
        return methods_servers_colocated(r) == cell->colocated;
    return r->nodes <= 0 || r->nodes == cell->nodes;
}

/* The mean and std of the cell's runs that started after the predictions; *early counts the others. */
static int measure_cell(const struct record_set *records, const struct prediction_set *set,
                        const struct predicted_cell *cell, double *mean, double *std, int *early)
{
    double *rates = malloc(((size_t)records->count + 1) * sizeof *rates);
    int n = 0;
    for (int i = 0; rates && i < records->count; i++) {
        const struct run_record *r = &records->runs[i];
        if (!runs_cell(r, set, cell))
            continue;
        if (strcmp(r->start_time, set->made) < 0)   /* ISO 8601 in UTC: ordered as text */
            ++*early;
        else
            rates[n++] = r->final_data_per_sec;
    }
    stats_mean_std(rates, n, mean, std);
    free(rates);
    return n;
}

static void add_error(struct error_summary *sum, double error, const struct predicted_cell *cell)
{
    sum->cells++;
    sum->within += fabs(error) <= 15;
    sum->absolute_sum += fabs(error);
    if (sum->cells == 1 || fabs(error) > fabs(sum->worst)) {
        sum->worst = error;
        snprintf(sum->worst_cell, sizeof sum->worst_cell, "%s at %d GPUs", cell->method, cell->workers);
    }
}

/* Whether a cell before cells[i] is of the same job size (its size was compared then). */
static bool size_seen(const struct prediction_set *set, int i)
{
    for (int j = 0; j < i; j++)
        if (set->cells[j].workers == set->cells[i].workers)
            return true;
    return false;
}

/* A cell's runs: their mean samples/s, std and count. */
struct measured_cell {
    double mean, std;
    int runs;
};

/* On a miss: whether the runs separate the method that ran fastest from the one predicted, the
 * 95% interval of their rates' ratio (stats.h) above 1; what it is, said into text. */
static bool runs_separate(const struct measured_cell *fast, const struct measured_cell *picked, char *text,
                          size_t size)
{
    double lo, hi;
    stats_ratio_ci95(fast->mean / picked->mean, fast->mean, fast->std, fast->runs, picked->mean, picked->std,
                     picked->runs, &lo, &hi);
    if (isnan(lo))
        return snprintf(text, size, "one run of either: the runs cannot tell"), false;
    snprintf(text, size, "the 95%% interval of their rates' ratio, %.2f-%.2f, %s", lo, hi,
             lo > 1 ? "lies above 1" : "contains 1: the runs do not separate them");
    return lo > 1;
}

/* At each job size with runs: the method predicted fastest against the one measured fastest,
 * among the cells that ran; a miss says whether the runs separate the two. */
static void best_methods(const struct prediction_set *set, const struct measured_cell *measured,
                         struct error_summary *sum, struct error_summary *all)
{
    for (int i = 0; i < set->count; i++) {
        if (size_seen(set, i))
            continue;
        int predicted = -1, ran = -1, workers = set->cells[i].workers;
        for (int j = i; j < set->count; j++) {
            if (set->cells[j].workers != workers || !(measured[j].mean > 0))
                continue;
            if (predicted < 0 || set->cells[j].samples_per_second > set->cells[predicted].samples_per_second)
                predicted = j;
            if (ran < 0 || measured[j].mean > measured[ran].mean)
                ran = j;
        }
        if (ran < 0)
            continue;   /* nothing ran at this size */
        sum->sizes++, all->sizes++;
        if (predicted == ran) {
            printf("Best at %d GPUs: %s, predicted and measured.\n", workers, set->cells[ran].method);
            sum->picked++, all->picked++;
        } else {
            char why[160];
            if (!runs_separate(&measured[ran], &measured[predicted], why, sizeof why))
                sum->unseparated++, all->unseparated++;
            printf("Best at %d GPUs: predicted %s, but %s ran fastest (%s ran %.0f%% below it; %s): missed.\n",
                   workers, set->cells[predicted].method, set->cells[ran].method, set->cells[predicted].method,
                   (1 - measured[predicted].mean / measured[ran].mean) * 100, why);
        }
    }
}

static void print_summary(const char *what, const struct error_summary *sum)
{
    if (sum->cells == 0) {
        printf("%s: no cell has a run after its prediction.\n", what);
        return;
    }
    printf("%s: mean absolute error %.1f%% over %d cell%s; worst %s (%+.1f%%); %d of %d within 15%%; the best "
           "method picked at %d of %d job size%s", what, sum->absolute_sum / sum->cells, sum->cells,
           sum->cells == 1 ? "" : "s", sum->worst_cell, sum->worst, sum->within, sum->cells, sum->picked, sum->sizes,
           sum->sizes == 1 ? "" : "s");
    if (sum->unseparated)
        printf(" (of the misses, %d where the runs do not separate the two methods)", sum->unseparated);
    printf(".\n");
}

static void print_cell_row(const struct predicted_cell *c, int runs, double mean, double std, int early)
{
    printf("| %s", c->method);
    if (c->servers > 0)
        printf(" (%s%d server%s)", c->colocated ? "colocated, " : "", c->servers, c->servers == 1 ? "" : "s");
    printf(" | %d | %d | %.1f | ", c->workers, c->nodes, c->samples_per_second);
    if (runs == 0)
        printf("%s | 0 | - |\n", early ? "ran before the prediction" : "not run");
    else
        printf("%.1f +- %.1f | %d | %+.1f%% |\n", mean, std, runs, (c->samples_per_second - mean) / mean * 100);
}

/* One prediction file's table and summary, its cells added to all. */
static void compare_setting(const char *path, const struct prediction_set *set, const struct record_set *records,
                            struct error_summary *all)
{
    struct error_summary sum = {0};
    struct measured_cell *measured = calloc((size_t)set->count, sizeof *measured);
    int early_runs = 0;
    printf("## %s, batch %d%s%s: predicted %s (%s)\n\n", set->model, set->batch, set->tag[0] ? ", tag " : "", set->tag,
           set->made, path);
    printf("| Method | GPUs | Nodes | Predicted samples/s | Measured | Runs | Error |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; measured && i < set->count; i++) {
        double mean, std;
        int early = 0, runs = measure_cell(records, set, &set->cells[i], &mean, &std, &early);
        print_cell_row(&set->cells[i], runs, mean, std, early);
        early_runs += early;
        if (runs > 0) {
            double error = (set->cells[i].samples_per_second - mean) / mean * 100;
            add_error(&sum, error, &set->cells[i]), add_error(all, error, &set->cells[i]);
            measured[i] = (struct measured_cell){mean, std, runs};
        }
    }
    printf("\n");
    if (measured)
        best_methods(set, measured, &sum, all);
    print_summary("Error", &sum);
    if (early_runs)
        fprintf(stderr, "dtrain-analyze compare: %s: %d run%s started before these predictions were made (%s): left "
                "out, not blind\n", path, early_runs, early_runs == 1 ? "" : "s", set->made);
    printf("\n");
    free(measured);
}

/* The options: the prediction files into files[], *count of them. 0, -1 after --help, or 2. */
static int parse_compare(int argc, char **argv, const char **files, int *count)
{
    static const struct option options[] = {{"predictions", required_argument, NULL, C_PREDICTIONS},
                                            {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int opt;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if (opt == 'h')
            return fputs(compare_help, stdout), -1;
        if (opt != C_PREDICTIONS)
            return fputs("Try 'dtrain-analyze compare --help'.\n", stderr), 2;
        if (*count == COMPARE_MAX_FILES)
            return fprintf(stderr, "dtrain-analyze compare: at most %d --predictions files\n", COMPARE_MAX_FILES), 2;
        files[(*count)++] = optarg;
    }
    if (*count == 0 || optind >= argc)
        return fputs("dtrain-analyze compare: --predictions FILE (predict --save writes it) and the run records (files "
                     "or directories) are needed\n", stderr), 2;
    return 0;
}

static int compare_run(int argc, char **argv)
{
    const char *files[COMPARE_MAX_FILES];
    int count = 0, rc = parse_compare(argc, argv, files, &count);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct prediction_set *sets = calloc((size_t)count, sizeof *sets);
    struct dt_err err;
    for (int i = 0; sets && i < count && rc == 0; i++)
        if (predictions_read(files[i], &sets[i], &err) < 0)
            rc = (fprintf(stderr, "dtrain-analyze compare: %s\n", err.msg), 2);
    struct record_set records = {0};
    if (!sets)
        rc = (fputs("dtrain-analyze compare: out of memory\n", stderr), 2);
    else if (rc == 0)
        rc = load_records("compare", argv + optind, argc - optind, &records);
    struct error_summary all = {0};
    for (int i = 0; rc == 0 && i < count; i++)
        compare_setting(files[i], &sets[i], &records, &all);
    if (rc == 0 && count > 1)
        print_summary("All settings", &all);
    if (rc == 0 && all.cells == 0)
        rc = (fputs("dtrain-analyze compare: no predicted cell has a run after its prediction\n", stderr), 2);
    for (int i = 0; sets && i < count; i++)
        predictions_free(&sets[i]);
    free(sets);
    free_records(&records);
    return rc;
}

const struct analyze_command compare_command = {
    "compare", "predictions saved before the runs + the runs -> each cell's error, the worst, the best method picked",
    compare_help, compare_run};
