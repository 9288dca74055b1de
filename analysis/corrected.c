/* corrected.c - a hand-made result table recomputed from its runs (see corrected.h). */
#include "analysis/corrected.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/audit.h"
#include "common/dt_parse.h"
#include "common/duration.h"
#include "analysis/experiment.h"
#include "analysis/stats.h"

/* The configuration's runtime: the mean or median of its runs (the given Avg when it has none). */
static void summarise_config(const struct result_table *t, struct corrected_config *c, enum speedup_stat stat)
{
    if (c->count == 0) {   /* only an Avg row */
        c->runtime = c->min = c->max = t->rows[c->given].runtime;
        c->usual = &t->rows[c->given];
        c->runtime_unit = c->usual->runtime_unit;
        c->samples = (double)c->usual->steps * c->usual->batch * c->nodes * c->gpus;
        return;
    }
    double *times = malloc((size_t)c->count * sizeof *times);
    int best = 0;
    for (int i = 0; i < c->count; i++) {
        const struct result_row *r = &t->rows[c->runs[i]];
        times[i] = r->runtime;
        c->runtime_unit = fmax(c->runtime_unit, r->runtime_unit);
        int same = 0;   /* how many runs share this one's Epoch and Steps: the usual one has most */
        for (int j = 0; j < c->count; j++)
            same += t->rows[c->runs[j]].epoch == r->epoch && t->rows[c->runs[j]].steps == r->steps;
        if (same > best)
            best = same, c->usual = r;
    }
    stats_mean_std(times, c->count, &c->mean, &c->std);
    double median = stats_sort_median(times, c->count);
    c->min = times[0], c->max = times[c->count - 1];
    c->runtime = stat == STAT_MEAN ? c->mean : median;
    c->samples = (double)c->usual->steps * c->usual->batch * c->nodes * c->gpus;
    free(times);
}

/* Its Avg row's runs and the 95% intervals of its mean runtime and speedup (stats.h), as the
 * records' table gives them. */
static void uncertainty_of(struct corrected_config *c, const struct corrected_config *base)
{
    double half = stats_ci95_half(c->std, c->count);
    struct avg_uncertainty *u = &c->uncertainty;
    *u = (struct avg_uncertainty){.runs = c->count, .runtime_lo = c->mean - half, .runtime_hi = c->mean + half,
                                  .speedup = c->speedup, .speedup_lo = NAN, .speedup_hi = NAN, .baseline = c == base,
                                  .scale = base ? (double)(c->nodes * c->gpus) / (base->nodes * base->gpus) : NAN};
    if (base && c != base && !isnan(c->speedup))
        stats_ratio_ci95(c->speedup, base->mean, base->std, base->count, c->mean, c->std, c->count, &u->speedup_lo,
                         &u->speedup_hi);
}

/* The configurations of t; returns how many, or -1 out of memory. */
static int configs_of(const struct result_table *t, struct corrected_config *configs)
{
    int count = 0;
    for (int i = 0; i < t->count; i++) {
        const struct result_row *r = &t->rows[i];
        int k = 0;
        while (k < count && !(configs[k].nodes == r->nodes && configs[k].gpus == r->gpus))
            k++;
        if (k == count) {
            configs[count++] = (struct corrected_config){.nodes = r->nodes, .gpus = r->gpus, .given = -1};
            if (!(configs[k].runs = malloc((size_t)t->count * sizeof *configs[k].runs)))
                return -1;
        }
        if (r->avg)
            configs[k].given = i;
        else
            configs[k].runs[configs[k].count++] = i;
    }
    for (int u = t->unread_count - 1; u >= 0; u--)
        for (int k = 0; k < count; k++)
            if (configs[k].nodes == t->unread[u].nodes && configs[k].gpus == t->unread[u].gpus)
                configs[k].unread_line = t->unread[u].line;
    for (int k = 0; k < count; k++)   /* no Avg row: a lone run's own speedup is the one given */
        if (configs[k].given < 0 && configs[k].count == 1)
            configs[k].given = configs[k].runs[0];
    return count;
}

/* Whether speedups come from samples/s: the configurations did not train the same samples, and
 * the title names no dataset whose epochs would say they did (a wrong Steps cell is audit's). */
static bool by_rate(const struct result_table *t, const struct corrected_config *configs, int count)
{
    bool same_epochs = true;
    double fewest = INFINITY, most = 0;
    for (int k = 0; k < count; k++) {
        same_epochs &= configs[k].usual->epoch == configs[0].usual->epoch;
        fewest = fmin(fewest, configs[k].samples);
        most = fmax(most, configs[k].samples);
    }
    if (experiment_work_agrees(fewest, most))
        return false;
    return !(same_epochs && audit_dataset_size(t->title) > 0);
}

/* Where the table's own Avg runtime and speedup of c differ from the recomputed ones by more than
 * their printing explains: the runs were rounded to their last digit, the Avg row and the speedup
 * to theirs, so a value within that is the same value, not a correction. */
static void find_differences(const struct result_table *t, const struct corrected_config *c, bool *runtime, bool *speedup)
{
    *runtime = *speedup = false;
    if (c->given < 0 || c->unread_line)   /* an incomplete Avg is no correction of the table's */
        return;
    const struct result_row *g = &t->rows[c->given];
    double runtime_slack = 0.5 * g->runtime_unit + 0.5 * c->runtime_unit;
    *runtime = g->avg && fabs(g->runtime - c->runtime) > runtime_slack + 1e-9;
    *speedup = !isnan(g->speedup) && !isnan(c->speedup) &&
               fabs(g->speedup - c->speedup) > 0.5 * g->speedup_unit + c->speedup_error + 1e-9;
}

/* A count cell as printed: "-" where the table has no such column. */
static const char *count_text(bool has, long value, char *out)
{
    if (!has)
        return "-";
    snprintf(out, 24, "%ld", value);
    return out;
}

static void print_row(FILE *out, const struct speedup_options *opt, int decimals, const struct result_row *r,
                      const struct corrected_config *c, const struct result_table *t)
{
    bool avg = r == NULL;
    const struct result_row *shown = avg ? c->usual : r;
    char runtime[32], speedup[32] = "-", given_runtime[40] = "", given_speedup[32] = "", cell[3][24];
    duration_format(avg ? c->runtime : r->runtime, decimals, runtime);
    if (avg && !isnan(c->speedup))
        snprintf(speedup, sizeof speedup, "%.2f", c->speedup);
    bool runtime_differs, speedup_differs;
    find_differences(t, c, &runtime_differs, &speedup_differs);
    if (avg && runtime_differs)
        snprintf(given_runtime, sizeof given_runtime, "%s", t->rows[c->given].runtime_text);
    if (avg && speedup_differs)
        snprintf(given_speedup, sizeof given_speedup, "%g", t->rows[c->given].speedup);
    const char *nodes = !avg ? r->nodelist : c->unread_line ? "Avg, incomplete" : "Avg";
    const char *epoch = count_text(t->has_epoch, shown->epoch, cell[0]),
               *batch = count_text(t->has_batch, shown->batch, cell[1]),
               *steps = count_text(t->has_steps, shown->steps, cell[2]);
    struct uncertainty_cells u;
    speedup_uncertainty_cells(&c->uncertainty, decimals, &u);
    char std[32], lo[32], hi[32];
    duration_format(c->std, decimals, std);
    duration_format(c->min, decimals, lo);
    duration_format(c->max, decimals, hi);
    if (opt->format == FORMAT_CSV) {
        fprintf(out, "%d,%d,%s,%s,%s,%s,%s,\"%s\",%s,%s", c->nodes, c->gpus, epoch, batch, steps, runtime,
                avg && !isnan(c->speedup) ? speedup : "", nodes, given_runtime, given_speedup);
        if (avg)
            fprintf(out, ",%s,\"%s\",\"%s\",%s", u.runs, u.runtime, u.speedup, isnan(c->speedup) ? "" : u.efficiency);
        else
            fputs(",,,,", out);
        if (opt->extra)
            fprintf(out, ",%s,%s,%s", avg ? std : "", avg ? lo : "", avg ? hi : "");
        fputc('\n', out);
        return;
    }
    const char *b = avg ? "**" : "";
    fprintf(out, "| %s%d%s | %s%d%s | %s%s%s | %s%s%s | %s%s%s | %s%s%s | %s%s%s | %s%s%s | %s | %s |", b, c->nodes, b, b,
            c->gpus, b, b, epoch, b, b, batch, b, b, steps, b, b, runtime, b, b, speedup, b, b, nodes, b, given_runtime,
            given_speedup);
    if (opt->format != FORMAT_REFERENCE && avg)
        fprintf(out, " **%s** | **%s** | **%s** | **%s** |", u.runs, u.runtime, u.speedup, u.efficiency);
    else if (opt->format != FORMAT_REFERENCE)
        fputs(" - | - | - | - |", out);
    if (opt->extra)   /* the spread, as a records' table gives it */
        fprintf(out, avg ? " **%s** | **%s-%s** |" : " - | - |", std, lo, hi);
    fputc('\n', out);
}

static int counted_changes(const struct result_table *t, const struct corrected_config *c)
{
    bool runtime, speedup;
    find_differences(t, c, &runtime, &speedup);
    return runtime + speedup;
}

int corrected_configs(const struct result_table *t, const struct speedup_options *opt, struct corrected_config **out,
                      bool *rate)
{
    struct corrected_config *configs = calloc((size_t)(t->count ? t->count : 1), sizeof *configs);
    int count = configs ? configs_of(t, configs) : -1;
    if (count < 0) {
        corrected_free(configs, configs ? t->count : 0);
        return -1;
    }
    const struct corrected_config *base = NULL;
    for (int k = 0; k < count; k++) {
        summarise_config(t, &configs[k], opt->stat);
        if (configs[k].nodes == opt->base_nodes && configs[k].gpus == opt->base_gpus)
            base = &configs[k];
    }
    *rate = count > 0 && by_rate(t, configs, count);
    for (int k = 0; k < count; k++) {
        struct corrected_config *c = &configs[k];
        c->speedup = !base ? NAN
                     : *rate ? (c->samples / c->runtime) / (base->samples / base->runtime)
                             : base->runtime / c->runtime;
        if (base)   /* either way a ratio of the two runtimes, each off by up to half its unit */
            c->speedup_error = c->speedup * (0.5 * base->runtime_unit / base->runtime + 0.5 * c->runtime_unit / c->runtime);
        uncertainty_of(c, base);
    }
    *out = configs;
    return count;
}

void corrected_free(struct corrected_config *configs, int count)
{
    for (int k = 0; configs && k < count; k++)
        free(configs[k].runs);
    free(configs);
}

int corrected_print(FILE *out, const struct result_table *t, const struct speedup_options *opt, int *changed)
{
    struct corrected_config *configs;
    bool rate;
    int count = corrected_configs(t, opt, &configs, &rate), decimals = 0;
    if (count < 0)
        return -1;
    bool has_base = false;
    for (int k = 0; k < count; k++)
        has_base |= !isnan(configs[k].speedup);
    for (int i = 0; i < t->count; i++) {
        int d = dt_decimals(t->rows[i].runtime_text, strlen(t->rows[i].runtime_text));
        decimals = d > decimals ? (d > 3 ? 3 : d) : decimals;
    }
    *changed = 0;
    fprintf(out, "# %s (corrected: Avg = the %s of the runs above it)\n\n", t->title[0] ? t->title : "Table",
            opt->stat == STAT_MEAN ? "mean" : "median");
    if (rate)
        fprintf(out, "%sSpeedup by samples/s: the configurations did not train the same samples (Steps x "
                "Batchsize x GPUs).\n\n", opt->format == FORMAT_CSV ? "# " : "");
    if (!has_base && count > 0) {   /* the --baseline that would work: the fewest GPUs in all */
        const struct corrected_config *smallest = &configs[0];
        for (int k = 1; k < count; k++)
            if (configs[k].nodes * configs[k].gpus < smallest->nodes * smallest->gpus)
                smallest = &configs[k];
        fprintf(out, "%sNo run of the baseline, %d x %d: no speedups (the smallest here is --baseline %dx%d).\n\n",
                opt->format == FORMAT_CSV ? "# " : "", opt->base_nodes, opt->base_gpus, smallest->nodes,
                smallest->gpus);
    }
    bool reference = opt->format == FORMAT_REFERENCE;
    if (opt->format == FORMAT_CSV)
        fprintf(out, "#Nodes,#GPUs,Epoch,Batchsize,Steps,Runtime,Speedup,Node(s),Given Runtime,Given Speedup%s%s\n",
                UNCERTAINTY_CSV_HEADER, opt->extra ? ",Std,Min,Max" : "");
    else
        fprintf(out, "| #Nodes | #GPUs | Epoch | Batchsize | Steps | Runtime | Speedup | Node(s) | Given Runtime | Given "
                "Speedup |%s%s\n|---|---|---|---|---|---|---|---|---|---|%s%s\n", reference ? "" : UNCERTAINTY_MD_HEADER,
                opt->extra ? " Std | Min-Max |" : "", reference ? "" : "---|---|---|---|", opt->extra ? "---|---|" : "");
    for (int k = 0; k < count; k++) {
        for (int i = 0; i < configs[k].count; i++)
            print_row(out, opt, decimals, &t->rows[configs[k].runs[i]], &configs[k], t);
        print_row(out, opt, decimals, NULL, &configs[k], t);
        *changed += counted_changes(t, &configs[k]);
    }
    fputc('\n', out);
    for (int k = 0; k < count; k++)
        if (configs[k].unread_line)
            fprintf(out, "%sIncomplete: %d x %d, its run on line %d could not be read; its Avg is of the rest and "
                    "not compared with the table's.\n\n", opt->format == FORMAT_CSV ? "# " : "", configs[k].nodes,
                    configs[k].gpus, configs[k].unread_line);
    corrected_free(configs, count);
    return 0;
}
