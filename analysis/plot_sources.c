/* plot_sources.c - result tables, notebooks and method tables as charts (see plot_sources.h). */
#include "analysis/plot_sources.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/audit.h"
#include "analysis/corrected.h"
#include "analysis/stats.h"

/* A chart's file name from its title: lower case, words joined by '-'. */
static void name_of(const char *title, char *out, size_t size)
{
    size_t used = 0;
    for (const char *c = title; *c && used + 1 < size; c++) {
        if (isalnum((unsigned char)*c))
            out[used++] = (char)tolower((unsigned char)*c);
        else if (used > 0 && out[used - 1] != '-')
            out[used++] = '-';
    }
    while (used > 0 && out[used - 1] == '-')
        used--;
    out[used] = '\0';
    if (used == 0)
        snprintf(out, size, "chart");
}

/* Documents may hold quotes; gnuplot's strings cannot. */
static void unquote_in_place(char *text)
{
    for (char *c = text; *c; c++)
        if (*c == '\'')
            *c = '`';
}

static struct plot_chart *new_chart(struct plot_charts *out, const char *title)
{
    struct plot_chart *bigger = realloc(out->charts, (size_t)(out->count + 1) * sizeof *bigger);
    if (!bigger)
        return NULL;
    out->charts = bigger;
    struct plot_chart *c = &bigger[out->count++];
    *c = (struct plot_chart){0};
    snprintf(c->title, sizeof c->title, "%s", title);
    unquote_in_place(c->title);
    name_of(title, c->name, sizeof c->name);
    for (int i = 0; i < out->count - 1; i++)   /* two charts of one name: number the later */
        if (strcmp(out->charts[i].name, c->name) == 0) {
            char number[16];
            int n = snprintf(number, sizeof number, "-%d", out->count);
            size_t at = strlen(c->name);
            at = at + (size_t)n >= sizeof c->name ? sizeof c->name - 1 - (size_t)n : at;
            memcpy(c->name + at, number, (size_t)n + 1);
        }
    return c;
}

/* The series of chart labelled label, made when missing. */
static struct plot_series *series_named(struct plot_chart *chart, const char *label)
{
    char clean[160];
    snprintf(clean, sizeof clean, "%s", label);
    unquote_in_place(clean);
    for (int s = 0; s < chart->count; s++)
        if (strcmp(chart->series[s].label, clean) == 0)
            return &chart->series[s];
    return plot_new_series(&chart->series, &chart->count, clean);
}

static struct plot_point table_point(const struct corrected_config *c)
{
    /* a table without Steps or Batchsize does not say how many samples: no rate (not drawn) */
    double rate = c->samples > 0 ? c->samples / c->runtime : NAN, relative = c->runtime > 0 ? c->std / c->runtime : 0;
    return (struct plot_point){.total_gpus = c->nodes * c->gpus, .nodes = c->nodes, .speedup = c->speedup,
                               .data_per_sec = rate, .speedup_std = c->speedup * relative,
                               .data_per_sec_std = rate * relative};
}

/* One result table: "1 node" (GPUs vary) and "G GPUs per node" (nodes vary, from 1 x G). */
static int chart_of_table(const struct result_table *t, const struct speedup_options *opt, struct plot_charts *out)
{
    struct corrected_config *configs;
    bool by_rate;
    int count = corrected_configs(t, opt, &configs, &by_rate), rc = count < 0 ? -1 : 0;
    struct plot_chart *chart = rc == 0 ? new_chart(out, t->title[0] ? t->title : "result table") : NULL;
    if (chart)
        chart->rate_what = "samples a run / its mean runtime";
    rc = chart ? rc : -1;
    for (int k = 0; k < count && rc == 0; k++) {
        const struct corrected_config *c = &configs[k];
        char label[64];
        struct plot_series *s;
        if (c->nodes == 1 && (!(s = series_named(chart, "1 node")) || plot_add_point(s, table_point(c)) < 0))
            rc = -1;
        snprintf(label, sizeof label, "%d GPU%s per node", c->gpus, c->gpus == 1 ? "" : "s");
        bool across_nodes = c->nodes > 1;
        for (int j = 0; j < count && !across_nodes; j++)   /* 1 x G starts the line of G a node */
            across_nodes = configs[j].gpus == c->gpus && configs[j].nodes > 1;
        if (rc == 0 && across_nodes && (!(s = series_named(chart, label)) || plot_add_point(s, table_point(c)) < 0))
            rc = -1;
    }
    if (count > 0)
        corrected_free(configs, count);
    return rc;
}

int plot_charts_of_tables(const struct table_set *tables, const struct speedup_options *opt, struct plot_charts *out,
                          struct dt_err *err)
{
    for (int t = 0; t < tables->count; t++)
        if (chart_of_table(&tables->tables[t], opt, out) < 0)
            return dt_fail(err, "out of memory");
    return 0;
}

/* Whether two notebook runs are one point of a chart: the same model, node(s) and GPUs, both logged. */
static bool same_point(const struct log_run *a, const struct log_run *b)
{
    char a_nodes[128], b_nodes[128];
    runid_nodes(&a->id, a_nodes, sizeof a_nodes);
    runid_nodes(&b->id, b_nodes, sizeof b_nodes);
    return a->steps_logged > 0 && b->steps_logged > 0 && a->id.gpus == b->id.gpus &&
           strcmp(a->id.model, b->id.model) == 0 && strcmp(a_nodes, b_nodes) == 0;
}

/* The runs of one notebook file: a line per model and node(s), repeats at one GPU count averaged. */
static int chart_of_log(const struct log_runs *runs, int first, int end, struct plot_charts *out)
{
    char title[sizeof runs->runs[first].source];
    snprintf(title, sizeof title, "%s", runs->runs[first].source);
    const char *slash = strrchr(title, '/');
    struct plot_chart *chart = new_chart(out, slash ? slash + 1 : title);
    if (chart)
        chart->rate_what = "peak rate, mean of the runs";
    if (!chart)
        return -1;
    double *rates = malloc((size_t)(end - first) * sizeof *rates), *speedups = malloc((size_t)(end - first) * sizeof *speedups);
    int rc = rates && speedups ? 0 : -1;
    for (int i = first; i < end && rc == 0; i++) {
        const struct log_run *r = &runs->runs[i];
        char nodes[128], label[200];
        runid_nodes(&r->id, nodes, sizeof nodes);
        snprintf(label, sizeof label, "%s on %s", r->id.model[0] ? r->id.model : "model", nodes);
        bool seen = false;   /* a (label, GPUs) point is made once, from all its runs */
        for (int j = first; j < i && !seen; j++)
            seen = same_point(&runs->runs[j], r);
        if (seen || r->steps_logged == 0)
            continue;
        int n = 0, with_speedup = 0;
        for (int j = i; j < end; j++) {
            if (!same_point(&runs->runs[j], r))
                continue;
            rates[n++] = runs->runs[j].peak_data_per_sec;
            if (!isnan(runs->runs[j].speedup))
                speedups[with_speedup++] = runs->runs[j].speedup;
        }
        struct plot_point p = {.total_gpus = r->id.gpus, .nodes = r->id.node_count ? r->id.node_count : 1,
                               .speedup = NAN};
        stats_mean_std(rates, n, &p.data_per_sec, &p.data_per_sec_std);
        if (with_speedup)
            stats_mean_std(speedups, with_speedup, &p.speedup, &p.speedup_std);
        struct plot_series *s = series_named(chart, label);
        if (!s || plot_add_point(s, p) < 0)
            rc = -1;
    }
    free(rates);
    free(speedups);
    return rc;
}

int plot_charts_of_logs(const struct log_runs *runs, struct plot_charts *out, struct dt_err *err)
{
    for (int first = 0, end; first < runs->count; first = end) {
        for (end = first + 1; end < runs->count && strcmp(runs->runs[end].source, runs->runs[first].source) == 0;)
            end++;
        if (chart_of_log(runs, first, end, out) < 0)
            return dt_fail(err, "out of memory");
    }
    return 0;
}

/* A method table's rows: a chart per key without the method (its last key cell), a line per method. */
static int charts_of_method_table(const struct method_table *t, struct plot_charts *out)
{
    int shift = audit_method_shift(t);
    for (int i = 0; i < t->count; i++) {
        const struct method_row *r = &t->rows[i];
        char key[256], method[256];
        snprintf(key, sizeof key, "%s", r->label);
        char *comma = strrchr(key, ',');
        snprintf(method, sizeof method, "%s", comma ? comma + 1 + strspn(comma + 1, " ") : key);
        if (comma)
            *comma = '\0';
        struct plot_chart *chart = NULL;
        for (int c = 0; c < out->count && !chart; c++)
            if (strcmp(out->charts[c].title, key) == 0)
                chart = &out->charts[c];
        struct plot_series *s;
        if ((!chart && !(chart = new_chart(out, key))) || !(s = series_named(chart, method)))
            return -1;
        chart->rate_what = "the mean the table gives";
        for (int k = 0; k < r->values; k++) {
            int gpus = audit_method_gpus(t, r, k, shift);
            if (gpus <= 0)
                continue;
            bool base = !isnan(r->baseline);
            struct plot_point p = {.total_gpus = gpus, .nodes = 0, .data_per_sec = r->cell[k].mean,
                                   .data_per_sec_std = r->cell[k].std,
                                   .speedup = base ? r->cell[k].mean / r->baseline : NAN,
                                   .speedup_std = base ? r->cell[k].std / r->baseline : 0};
            if (plot_add_point(s, p) < 0)
                return -1;
        }
    }
    return 0;
}

int plot_charts_of_methods(const struct method_set *methods, struct plot_charts *out, struct dt_err *err)
{
    for (int t = 0; t < methods->count; t++)
        if (charts_of_method_table(&methods->tables[t], out) < 0)
            return dt_fail(err, "out of memory");
    return 0;
}

void plot_charts_free(struct plot_charts *charts)
{
    for (int c = 0; c < charts->count; c++)
        plot_series_free(charts->charts[c].series, charts->charts[c].count);
    free(charts->charts);
    *charts = (struct plot_charts){0};
}
