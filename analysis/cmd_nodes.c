/* cmd_nodes.c - dtrain-analyze nodes: which nodes are slow, from the run records, hand-made result
 * tables and trainer notebooks given (nodes.h compares the runs). */
#include "analysis/command.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/experiment.h"
#include "common/hostlist.h"
#include "analysis/nodes.h"
#include "analysis/slow_cost.h"
#include "formats/record.h"
#include "formats/table.h"
#include "analysis/throughput.h"

static const char nodes_help[] =
    "Usage: dtrain-analyze nodes [options] FILE|DIR...\n"
    "  Which nodes are slow, from every run they took part in: run records, hand-made result\n"
    "  tables (#Nodes, #GPUs, ..., Runtime, Node(s)) and trainer notebooks (a heading per run\n"
    "  naming its node, over Step lines). Runs are compared within a configuration (the same\n"
    "  table, job size and work; the same experiment and job size; the same model and GPU\n"
    "  count): a run is slow when it took --threshold more than its configuration's median, and\n"
    "  a node is slow when at least 2, and at least 40%, of its runs were. A data-parallel job\n"
    "  runs at its slowest rank's pace: a slow node slows every job it joins.\n"
    "  One row per node, slowest first: runs, slow runs, the median of its runs' time over\n"
    "  their configuration's, its slowest run and where it is. Then, for each run record that\n"
    "  kept its ranks' compute times (dtrain-train's rank_compute_us), what its slowest rank cost:\n"
    "  a step ends when the slowest rank has computed, so with it at the pace of the others (their\n"
    "  median) the run would have taken steps x (slowest - that) less; and the node that cost most.\n"
    "          --threshold F      a run is slow at (1 + F) x its configuration's median (0.2)\n"
    "      -f, --format md|csv    (md)\n"
    "  Exit 0 no slow node, 1 slow nodes named (and the sbatch --exclude= that avoids them),\n"
    "  2 nothing to compare or a file that cannot be read.\n"
    "  e.g. dtrain-analyze nodes runs/ 003_bigmnist.txt\n";

/* Hand-made tables read at most (a study's files hold a few each). */
#define NODES_MAX_TABLES 1024

/* What `nodes` reads: every kind of document that names nodes. */
struct nodes_inputs {
    struct record_set records;
    struct table_set tables;
    char *table_file[NODES_MAX_TABLES];   /* the file each table was read from */
    struct log_runs logs;
    int unreadable;
};

static void nodes_reader(const char *path, void *set)
{
    struct nodes_inputs *in = set;
    if (inputs_hold_records(path)) {
        read_records(path, &in->records);
        return;
    }
    struct dt_err err;
    int before = in->tables.count;
    FILE *f = fopen(path, "r");
    if (!f || table_parse_file(path, &in->tables, &err) < 0) {
        fprintf(stderr, "dtrain-analyze: %s: %s\n", path, f ? err.msg : strerror(errno));
        in->unreadable++;
    } else if (throughput_read(f, path, &in->logs, &err) < 0) {
        fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
        in->unreadable++;
    }
    if (f)
        fclose(f);
    for (int t = before; t < in->tables.count && t < NODES_MAX_TABLES; t++)
        in->table_file[t] = strdup(path);
}

/* One run on the nodes of a host list. */
static int add_hosts(struct node_study *s, const struct hostlist *hosts, double seconds, const char *where)
{
    const char **names = malloc((hosts->count ? hosts->count : 1) * sizeof *names);
    if (!names)
        return -1;
    for (size_t k = 0; k < hosts->count; k++)
        names[k] = hostlist_nth(hosts, k);
    int rc = nodes_add_run(s, names, (int)hosts->count, seconds, where);
    free(names);
    return rc;
}

/* The runs of one hand-made table, a configuration at a time; runs whose node list cannot be
 * read are passed over (audit names them). */
static int study_table(struct node_study *s, const struct result_table *t, const char *path)
{
    for (int i = 0; i < t->count; i++) {
        const struct result_row *c = &t->rows[i];
        bool first = !c->avg;
        for (int j = 0; j < i && first; j++)   /* a configuration is studied at its first row */
            first = t->rows[j].avg || t->rows[j].nodes != c->nodes || t->rows[j].gpus != c->gpus ||
                    t->rows[j].batch != c->batch || t->rows[j].steps != c->steps;
        if (!first)
            continue;
        char label[200];
        snprintf(label, sizeof label, "%d node%s x %d GPU%s of \"%.100s\"", c->nodes, c->nodes == 1 ? "" : "s",
                 c->gpus, c->gpus == 1 ? "" : "s", t->title);
        nodes_begin(s, label);
        for (int j = i; j < t->count; j++) {
            const struct result_row *r = &t->rows[j];
            if (r->avg || r->nodes != c->nodes || r->gpus != c->gpus || r->batch != c->batch || r->steps != c->steps)
                continue;
            struct hostlist hosts;
            struct dt_err err;
            hostlist_init(&hosts);
            char where[300];
            snprintf(where, sizeof where, "%s (%s:%d)", r->nodelist, path, r->line);
            int rc = 0;
            if (hostlist_expand(r->nodelist, &hosts, &err) == 0)
                rc = add_hosts(s, &hosts, r->runtime, where);
            hostlist_free(&hosts);
            if (rc < 0)
                return -1;
        }
        if (nodes_end(s) < 0)
            return -1;
    }
    return 0;
}

/* The notebook runs, a configuration per model and GPU count; each run's time a sample is the
 * inverse of its peak data/sec. */
static int study_notebooks(struct node_study *s, const struct log_runs *logs)
{
    for (int i = 0; i < logs->count; i++) {
        const struct log_run *c = &logs->runs[i];
        bool first = c->id.node_count > 0 && c->peak_data_per_sec > 0;
        for (int j = 0; j < i && first; j++)
            first = strcmp(logs->runs[j].id.model, c->id.model) != 0 || logs->runs[j].id.gpus != c->id.gpus;
        if (!first)
            continue;
        char label[200];
        snprintf(label, sizeof label, "%s on %d GPU%s", c->id.model[0] ? c->id.model : "a model", c->id.gpus,
                 c->id.gpus == 1 ? "" : "s");
        nodes_begin(s, label);
        for (int j = i; j < logs->count; j++) {
            const struct log_run *r = &logs->runs[j];
            if (strcmp(r->id.model, c->id.model) != 0 || r->id.gpus != c->id.gpus || !(r->peak_data_per_sec > 0))
                continue;
            const char *names[RUNID_MAX_NODES];
            for (int k = 0; k < r->id.node_count; k++)
                names[k] = r->id.node[k];
            char where[300];
            snprintf(where, sizeof where, "%.2f data/sec (%s:%d)", r->peak_data_per_sec, r->source, r->line);
            if (nodes_add_run(s, names, r->id.node_count, 1 / r->peak_data_per_sec, where) < 0)
                return -1;
        }
        if (nodes_end(s) < 0)
            return -1;
    }
    return 0;
}

/* A record's distinct hosts, in rank order, as a host list. */
static int hosts_of(const struct run_record *r, struct hostlist *hosts)
{
    struct dt_err err;
    for (int i = 0; r->hostnames && i < r->world_size; i++)
        if (r->hostnames[i][0] && hostlist_find(hosts, r->hostnames[i]) < 0 &&
            hostlist_push(hosts, r->hostnames[i], strlen(r->hostnames[i]), &err) < 0)
            return -1;
    return 0;
}

/* The records, a configuration per experiment and job size; a run's time a sample. */
static int study_records(struct node_study *s, const struct record_set *set)
{
    int *index = malloc((size_t)(set->count ? set->count : 1) * sizeof *index);
    if (!index)
        return -1;
    experiment_split(set->runs, set->count, index);
    int rc = 0;
    for (int i = 0; i < set->count && rc == 0; i++) {
        const struct run_record *c = &set->runs[i];
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = index[j] != index[i] || set->runs[j].nodes != c->nodes ||
                    speedup_gpus_of(&set->runs[j]) != speedup_gpus_of(c);
        if (!first)
            continue;
        char label[200];
        snprintf(label, sizeof label, "%d node%s x %d of %s", c->nodes, c->nodes == 1 ? "" : "s", speedup_gpus_of(c),
                 c->model);
        nodes_begin(s, label);
        for (int j = i; j < set->count && rc == 0; j++) {
            const struct run_record *r = &set->runs[j];
            if (index[j] != index[i] || r->nodes != c->nodes || speedup_gpus_of(r) != speedup_gpus_of(c))
                continue;
            struct hostlist hosts;
            hostlist_init(&hosts);
            char where[300];
            snprintf(where, sizeof where, "%s (job %s)", r->nodelist, r->job_id[0] ? r->job_id : "-");
            /* a time a sample; a program's run (dtrain-record) counts no samples: its whole time, as
             * every run of one configuration did the same work */
            double samples = experiment_samples(r), cost = samples > 0 ? r->runtime_seconds / samples : r->runtime_seconds;
            rc = hosts_of(r, &hosts) < 0 ? -1 : add_hosts(s, &hosts, cost, where);
            hostlist_free(&hosts);
        }
        if (rc == 0)
            rc = nodes_end(s);
    }
    free(index);
    return rc;
}

/* The ranking as a table, and the slow nodes said on standard error with the sbatch option that
 * avoids them. Returns 0 when none is slow, 1 when some are, 2 when out of memory. */
static int print_ranking(const struct node_speed *speeds, int count, int compared, double threshold, bool csv)
{
    puts(csv ? "node,runs,slow_runs,median_ratio,worst_ratio,worst_run,verdict"
             : "| Node | Runs | Slow runs | Median time ratio | Slowest run | Verdict |\n|---|---|---|---|---|---|");
    struct hostlist slow;
    struct dt_err err;
    hostlist_init(&slow);
    int rc = 0;
    for (int i = 0; i < count; i++) {
        const struct node_speed *n = &speeds[i];
        if (csv)
            printf("%s,%d,%d,%.3f,%.3f,\"%s\",%s\n", n->node, n->runs, n->slow_runs, n->median_ratio, n->worst_ratio,
                   n->worst_where, n->slow ? "slow" : "");
        else
            printf("| %s | %d | %d | %.2f | %.2fx: %s | %s |\n", n->node, n->runs, n->slow_runs, n->median_ratio,
                   n->worst_ratio, n->worst_where, n->slow ? "**slow**" : "-");
        if (n->slow && hostlist_push(&slow, n->node, strlen(n->node), &err) < 0)
            rc = 2;
    }
    fprintf(stderr, "nodes: %d configurations compared, %d nodes; a run is slow at %.2fx its configuration's "
            "median\n", compared, count, 1 + threshold);
    char *folded = slow.count > 0 && rc == 0 ? hostlist_compress(&slow) : NULL;
    if (folded)
        fprintf(stderr, "dtrain-analyze: slow node%s: %s (sbatch --exclude=%s)\n", slow.count == 1 ? "" : "s",
                folded, folded);
    rc = rc ? rc : slow.count > 0 ? (folded ? 1 : 2) : 0;
    free(folded);
    hostlist_free(&slow);
    return rc;
}

enum { O_THRESHOLD = 400 };

/* Whether a record kept each rank's compute time (what the slowest rank cost can be told). */
static bool has_rank_times(const struct record_set *set)
{
    for (int i = 0; i < set->count; i++)
        if (set->runs[i].rank_compute_read && set->runs[i].world_size > 1)
            return true;
    return false;
}

static int nodes_run(int argc, char **argv)
{
    static const struct option options[] = {
        {"threshold", required_argument, NULL, O_THRESHOLD}, {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    double threshold = 0.2;
    bool csv = false;
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((c = getopt_long(argc, argv, "f:h", options, NULL)) != -1) {
        char *end;
        if (c == 'h')
            return fputs(nodes_help, stdout), 0;
        if (c == O_THRESHOLD && ((threshold = strtod(optarg, &end)), end == optarg || *end || !(threshold > 0) ||
                                 threshold > 10))
            return fprintf(stderr, "dtrain-analyze: --threshold \"%s\": expected a fraction above 0 (0.2: 20%% over "
                           "the median)\n", optarg), 2;
        if (c == 'f' && strcmp(optarg, "md") != 0 && strcmp(optarg, "csv") != 0)
            return fprintf(stderr, "dtrain-analyze: --format \"%s\": expected md or csv\n", optarg), 2;
        if (c == 'f')
            csv = strcmp(optarg, "csv") == 0;
        if (c != 'f' && c != O_THRESHOLD)
            return fputs("Try 'dtrain-analyze nodes --help'.\n", stderr), 2;
    }
    if (optind >= argc)
        return fputs("dtrain-analyze: nodes needs record files, tables, notebooks or directories\n", stderr), 2;
    struct nodes_inputs in = {0};
    int rc = read_inputs(argv + optind, argc - optind, nodes_reader, &in);
    struct node_study *s = rc == 0 ? nodes_study_new() : NULL;
    if (rc == 0 && (!s || study_records(s, &in.records) < 0 || study_notebooks(s, &in.logs) < 0))
        rc = (fputs("dtrain-analyze: out of memory\n", stderr), 2);
    for (int t = 0; rc == 0 && t < in.tables.count; t++)
        if (study_table(s, &in.tables.tables[t], t < NODES_MAX_TABLES && in.table_file[t] ? in.table_file[t] : "?") < 0)
            rc = (fputs("dtrain-analyze: out of memory\n", stderr), 2);
    int count = 0, compared = 0, costs = 0;
    struct node_speed *speeds = rc == 0 ? nodes_rank(s, threshold, &count, &compared) : NULL;
    if (rc == 0 && count == 0 && !has_rank_times(&in.records))
        rc = (fputs("dtrain-analyze: nothing to compare: no configuration was run on two different sets of nodes\n",
                    stderr), 2);
    if (rc == 0) {
        table_mark(stdout, "nodes", csv);
        if (count > 0)
            rc = print_ranking(speeds, count, compared, threshold, csv);
        if (!csv || count == 0)   /* a CSV file holds one table */
            costs = slow_cost_print(stdout, in.records.runs, in.records.count, csv);
        if (count == 0 && costs > 0)
            fputs("nodes: no configuration was run on two different sets of nodes: only each run's slowest rank is "
                  "told\n", stderr);
    }
    if (rc < 2 && in.unreadable + in.records.lines_skipped > 0)
        rc = 2;
    free(speeds);
    nodes_study_free(s);
    for (int t = 0; t < in.tables.count && t < NODES_MAX_TABLES; t++)
        free(in.table_file[t]);
    free_records(&in.records);
    table_set_free(&in.tables);
    free(in.logs.runs);
    return rc;
}

const struct analyze_command nodes_command = {
    "nodes", "records, tables, notebooks -> the slow nodes, each run against its configuration's", nodes_help,
    nodes_run};
