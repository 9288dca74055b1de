/* plot.c - gnuplot data and script for speedup and throughput against GPUs (see plot.h). */
#include "analysis/plot.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "analysis/experiment.h"

int plot_add_point(struct plot_series *series, struct plot_point p)
{
    struct plot_point *bigger = realloc(series->points, (size_t)(series->count + 1) * sizeof *bigger);
    if (!bigger)
        return -1;
    series->points = bigger;
    int at = series->count++;
    while (at > 0 && series->points[at - 1].total_gpus > p.total_gpus) {
        series->points[at] = series->points[at - 1];
        at--;
    }
    series->points[at] = p;
    return 0;
}

/* A series' points from the groups of one speedup result, those with gpus == only (0: all). The
 * speedup's spread is the runtimes' (or rates'), relative, as the baseline's own is not added. */
static int add_points(struct plot_series *series, const struct speedup_result *result, int only)
{
    for (int k = 0; k < result->count; k++) {
        const struct speedup_group *g = &result->groups[k];
        if (only && g->gpus != only)
            continue;
        struct plot_point p = {.total_gpus = g->workers, .nodes = g->nodes, .speedup = g->speedup,
                               .data_per_sec = g->data_per_sec, .data_per_sec_std = g->data_per_sec_std,
                               .speedup_std = g->average > 0 ? g->speedup * g->std / g->average : 0};
        if (plot_add_point(series, p) < 0)
            return -1;
    }
    return 0;
}

struct plot_series *plot_new_series(struct plot_series **list, int *count, const char *label)
{
    struct plot_series *bigger = realloc(*list, (size_t)(*count + 1) * sizeof *bigger);
    if (!bigger)
        return NULL;
    *list = bigger;
    struct plot_series *s = &bigger[(*count)++];
    *s = (struct plot_series){0};
    snprintf(s->label, sizeof s->label, "%s", label);
    return s;
}

/* The speedup options for runs[0..n) of one series: by samples/s where they did not train the same
 * samples. Fails with err when they are not one experiment. */
static int series_options(const struct run_record *runs, int n, const char *what, enum experiment_field ignored,
                          struct speedup_options *opt, struct dt_err *err)
{
    for (int i = 1; i < n; i++) {
        if (experiment_same_but(&runs[0], &runs[i], ignored))
            continue;
        char a[768], b[768];
        experiment_describe(&runs[0], a, sizeof a);
        experiment_describe(&runs[i], b, sizeof b);
        return dt_fail(err, "%s mixes experiments (\"%s\" and \"%s\"): pick one with --where KEY=VALUE, or draw "
                       "a line per tag or method (--series)", what, a, b);
    }
    opt->by_rate = !experiment_same_work(runs, n);
    return 0;
}

/* Whether a run is of the baseline configuration. */
static bool is_baseline(const struct run_record *r, const struct speedup_options *opt)
{
    return r->nodes == opt->base_nodes && speedup_gpus_of(r) == opt->base_gpus;
}

static const char *key_of(const struct run_record *r, enum plot_by by)
{
    return by == PLOT_BY_TAG ? (r->tag[0] ? r->tag : "untagged") : r->comm;
}

/* One series per tag or method, each with its own speedup result. */
static int series_by_key(const struct run_record *runs, int n, const struct speedup_options *opt, enum plot_by by,
                         struct plot_series **out, int *count, struct dt_err *err)
{
    struct run_record *subset = malloc((size_t)n * sizeof *subset);
    if (!subset)
        return dt_fail(err, "out of memory");
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(key_of(&runs[j], by), key_of(&runs[i], by)) == 0;
        if (seen)
            continue;
        int m = 0;
        bool has_baseline = false;
        for (int j = i; j < n; j++)
            if (strcmp(key_of(&runs[j], by), key_of(&runs[i], by)) == 0) {
                subset[m++] = runs[j];   /* a shallow copy: speedup_compute only reads */
                has_baseline |= is_baseline(&runs[j], opt);
            }
        /* a method that was not run on the baseline's one GPU is held against the runs that were
         * (the reference method comparison tables have one Baseline for all methods) */
        for (int j = 0; j < n && by == PLOT_BY_METHOD && !has_baseline; j++)
            if (is_baseline(&runs[j], opt) && strcmp(key_of(&runs[j], by), key_of(&runs[i], by)) != 0)
                subset[m++] = runs[j];
        struct speedup_result result = {0};
        struct plot_series *s = NULL;
        struct speedup_options own = *opt;
        char what[200];
        snprintf(what, sizeof what, "the line of %s %s", by == PLOT_BY_TAG ? "tag" : "method", key_of(&runs[i], by));
        if (series_options(subset, m, what, by == PLOT_BY_METHOD ? EXP_METHOD : EXP_FIELD_COUNT, &own, err) < 0) {
            rc = -1;
        } else if (speedup_compute(subset, m, &own, &result, err) < 0) {
            char why[sizeof err->msg];   /* err is both the source and the destination */
            snprintf(why, sizeof why, "%s", err->msg);
            rc = dt_fail(err, "%s %s: %s", by == PLOT_BY_TAG ? "tag" : "method", key_of(&runs[i], by), why);
        } else if (!(s = plot_new_series(out, count, key_of(&runs[i], by))) || add_points(s, &result, 0) < 0) {
            rc = dt_fail(err, "out of memory");
        }
        speedup_result_free(&result);
    }
    free(subset);
    return rc;
}

int plot_series_of(const struct run_record *runs, int n, const struct speedup_options *opt, enum plot_by by,
                   struct plot_series **out, struct dt_err *err)
{
    int count = 0, rc = 0;
    *out = NULL;
    if (by != PLOT_BY_GPUS_PER_NODE) {
        rc = series_by_key(runs, n, opt, by, out, &count, err);
    } else {
        struct speedup_result result = {0};
        struct speedup_options own = *opt;
        rc = series_options(runs, n, "the records", EXP_FIELD_COUNT, &own, err);
        if (rc == 0)
            rc = speedup_compute(runs, n, &own, &result, err);
        bool cpu = n > 0 && runs[0].gpus_per_node == 0;
        for (int per_node = 1; rc == 0 && per_node <= 1 << 16; per_node++) {   /* ascending, each present value */
            int present = 0;
            for (int k = 0; k < result.count && !present; k++)
                present = result.groups[k].gpus == per_node;
            char label[64];
            snprintf(label, sizeof label, "%d %s%s per node", per_node, cpu ? "rank" : "GPU", per_node == 1 ? "" : "s");
            struct plot_series *s;
            if (present && (!(s = plot_new_series(out, &count, label)) || add_points(s, &result, per_node) < 0))
                rc = dt_fail(err, "out of memory");
        }
        speedup_result_free(&result);
    }
    if (rc < 0) {
        plot_series_free(*out, count);
        *out = NULL;
        return -1;
    }
    return count;
}

void plot_series_free(struct plot_series *series, int count)
{
    for (int i = 0; i < count; i++)
        free(series[i].points);
    free(series);
}

/* What the data file and the script are written from. */
struct plot {
    const struct plot_series *series;
    int count, max_gpus;
    const char *name, *title;    /* name: the prefix's last part, as the script refers to its files */
    const char *rate_what;       /* what a point's data/sec is */
    int min_gpus;
    char x_label[64];
};

/* atomic_write fills: they return 0, as atomic_write checks the stream's error flag itself. */
static int write_data(FILE *f, const void *arg)
{
    const struct plot *p = arg;
    fputs("# dtrain-analyze plot data: one block per series\n"
          "# total_gpus speedup data_per_sec nodes speedup_std data_per_sec_std\n", f);
    for (int s = 0; s < p->count; s++) {
        fprintf(f, "%s# %s\n", s ? "\n\n" : "", p->series[s].label);
        for (int k = 0; k < p->series[s].count; k++) {
            const struct plot_point *pt = &p->series[s].points[k];
            fprintf(f, "%d %.4f %.2f %d %.4f %.2f\n", pt->total_gpus, pt->speedup, pt->data_per_sec, pt->nodes,
                    pt->speedup_std, pt->data_per_sec_std);   /* NAN prints as nan: gnuplot leaves it out */
        }
    }
    return 0;
}

/* Series s is linetype s + 1 in every figure (the ideal line has its own style), so a series has
 * one colour wherever it is drawn. */
/* Whether any point has a data/sec to draw. */
static bool has_rates(const struct plot *p)
{
    for (int s = 0; s < p->count; s++)
        for (int k = 0; k < p->series[s].count; k++)
            if (!isnan(p->series[s].points[k].data_per_sec))
                return true;
    return false;
}

static void write_figure(FILE *f, const struct plot *p, const char *terminal, const char *ext, const char *what,
                         int column, int with_ideal)
{
    if (column == 2)
        fprintf(f, "set terminal %s noenhanced\nset output '%s-%s.%s'\nset ylabel 'speedup over the baseline (bars: "
                "+-1 std of the runs)'\nplot ", terminal, p->name, what, ext);
    else
        fprintf(f, "set terminal %s noenhanced\nset output '%s-%s.%s'\nset ylabel 'data/sec: %s (bars: +-1 std)'\n"
                "plot ", terminal, p->name, what, ext, p->rate_what);
    if (with_ideal)
        fputs("x with lines dashtype 2 linecolor rgb 'gray' title 'ideal', ", f);
    for (int s = 0; s < p->count; s++)
        fprintf(f, "%s'%s.dat' index %d using 1:%d:%d with yerrorlines linetype %d pointtype 7 title '%s'",
                s ? ", " : "", p->name, s, column, column == 2 ? 5 : 6, s + 1, p->series[s].label);
    fputs("\n", f);
}

static int write_script(FILE *f, const void *arg)
{
    const struct plot *p = arg;
    fprintf(f, "# dtrain-analyze plot script: gnuplot %s.gp (restyle freely)\n"
               "set title '%s'\nset xlabel '%s'\nset grid\nset key outside right top\n", p->name, p->title,
            p->x_label);
    if (p->max_gpus >= 8 * p->min_gpus)   /* ranks doubling: 1 and 2 apart as 32 and 64 are */
        fprintf(f, "set logscale x 2\nset xrange [%g:%g]\n", p->min_gpus / 1.25, p->max_gpus * 1.25);
    else
        fprintf(f, "set xrange [0.5:%d.5]\n", p->max_gpus + (p->max_gpus > 8 ? p->max_gpus / 16 : 0));
    fputs("set yrange [0:*]\nset bars small\nset xtics (", f);
    int listed = 0;   /* a tic at each GPU count drawn, in order */
    for (int x = 1; x <= p->max_gpus; x++) {
        bool drawn = false;
        for (int s = 0; s < p->count && !drawn; s++)
            for (int k = 0; k < p->series[s].count && !drawn; k++)
                drawn = p->series[s].points[k].total_gpus == x;
        if (drawn)
            fprintf(f, "%s%d", listed++ ? ", " : "", x);
    }
    fputs(")\n", f);
    static const char *terminals[][2] = {{"pngcairo size 900,500", "png"}, {"svg size 900,500", "svg"}};
    for (int t = 0; t < 2; t++) {
        write_figure(f, p, terminals[t][0], terminals[t][1], "speedup", 2, 1);
        if (has_rates(p))   /* a hand-made table without Steps or Batchsize has none */
            write_figure(f, p, terminals[t][0], terminals[t][1], "throughput", 3, 0);
    }
    return 0;
}

int plot_write(const char *prefix, const char *title, const char *x_unit, const char *rate_what,
               const struct plot_series *series, int count, struct dt_err *err)
{
    char copy[4096], path[4200];
    snprintf(copy, sizeof copy, "%s", prefix);
    struct plot a = {.series = series, .count = count, .name = basename(copy), .title = title,
                     .rate_what = rate_what ? rate_what : "the mean of the runs"};
    snprintf(a.x_label, sizeof a.x_label, "%s (nodes x %s per node)", x_unit,
             strcmp(x_unit, "CPU ranks") == 0 ? "ranks" : strcmp(x_unit, "emulated GPUs") == 0 ? "GPUs" : x_unit);
    if (strchr(a.name, '\'') || strchr(title, '\''))
        return dt_fail(err, "plot prefix or title \"%s\" has a quote gnuplot would misread", prefix);
    for (int s = 0; s < count; s++) {
        if (strchr(series[s].label, '\''))
            return dt_fail(err, "series \"%s\" has a quote gnuplot would misread", series[s].label);
        for (int k = 0; k < series[s].count; k++) {
            int gpus = series[s].points[k].total_gpus;
            a.max_gpus = gpus > a.max_gpus ? gpus : a.max_gpus;
            a.min_gpus = a.min_gpus == 0 || gpus < a.min_gpus ? gpus : a.min_gpus;
        }
    }
    snprintf(path, sizeof path, "%s.dat", prefix);
    if (make_parent_dirs(path) < 0)   /* -o results/plots/scaling: the folders are made */
        return dt_fail(err, "cannot make the folder of %s: %s", prefix, strerror(errno));
    if (atomic_write(path, write_data, &a, err) < 0)
        return -1;
    snprintf(path, sizeof path, "%s.gp", prefix);
    return atomic_write(path, write_script, &a, err);
}

/* A failed gnuplot run may have left empty or half-drawn pictures: every file its script names in a
 * "set output" line goes, then the script and its data, so a failure leaves nothing behind. */
static void remove_outputs(const char *dir, const char *prefix)
{
    char path[4300], line[4400];
    snprintf(path, sizeof path, "%s.gp", prefix);
    FILE *script = fopen(path, "r");
    while (script && fgets(line, sizeof line, script)) {
        char *name = strstr(line, "set output '");
        char *end = name ? strchr(name + 12, '\'') : NULL;
        if (!end)
            continue;
        *end = '\0';
        snprintf(path, sizeof path, "%s/%s", dir, name + 12);
        unlink(path);
    }
    if (script)
        fclose(script);
    snprintf(path, sizeof path, "%s.gp", prefix);
    unlink(path);
    snprintf(path, sizeof path, "%s.dat", prefix);
    unlink(path);
}

int plot_render(const char *prefix, struct dt_err *err)
{
    char dir_copy[4096], name_copy[4096], script[4200];
    snprintf(dir_copy, sizeof dir_copy, "%s", prefix);
    snprintf(name_copy, sizeof name_copy, "%s", prefix);
    snprintf(script, sizeof script, "%s.gp", basename(name_copy));
    const char *dir = dirname(dir_copy);
    pid_t pid = fork();
    if (pid < 0)
        return dt_fail(err, "cannot start gnuplot: %s", strerror(errno));
    if (pid == 0) {
        if (chdir(dir) < 0)
            _exit(126);
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(errno == ENOENT ? 127 : 126);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0)
        return dt_fail(err, "gnuplot: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return dt_fail(err, "gnuplot not found (Debian: apt-get install gnuplot-nox); %s.dat and %s.gp are written",
                       prefix, prefix);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        remove_outputs(dir, prefix);
        return dt_fail(err, "gnuplot could not draw %s (its message is above; status %d): no picture is written",
                       prefix, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return 0;
}
