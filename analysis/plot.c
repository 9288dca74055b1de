/* plot.c - gnuplot data and script for speedup and throughput against GPUs (see plot.h). */
#include "plot.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The GPUs-per-node values present, ascending; one series each. */
static int series_of(const struct speedup_result *result, int *gpus, int cap)
{
    int n = 0;
    for (int k = 0; k < result->count; k++) {
        int g = result->groups[k].gpus, at = 0;
        while (at < n && gpus[at] < g)
            at++;
        if ((at < n && gpus[at] == g) || n == cap)
            continue;
        memmove(gpus + at + 1, gpus + at, (size_t)(n - at) * sizeof *gpus);
        gpus[at] = g, n++;
    }
    return n;
}

static int write_data(FILE *f, const struct speedup_result *result, const int *gpus, int series)
{
    fputs("# dtrain-analyze plot data: one block per GPUs-per-node series\n"
          "# total_gpus speedup data_per_sec nodes\n", f);
    for (int s = 0; s < series; s++) {
        fprintf(f, "%s# %d GPU%s per node\n", s ? "\n\n" : "", gpus[s], gpus[s] == 1 ? "" : "s");
        for (int k = 0; k < result->count; k++) {   /* groups come sorted by nodes */
            const struct speedup_group *g = &result->groups[k];
            if (g->gpus == gpus[s])
                fprintf(f, "%d %.4f %.2f %d\n", g->nodes * g->gpus, g->speedup, g->data_per_sec, g->nodes);
        }
    }
    return ferror(f) ? -1 : 0;
}

static void write_figure(FILE *f, const char *name, const char *terminal, const char *ext, const char *what,
                         int column, int with_ideal, const int *gpus, int series)
{
    fprintf(f, "set terminal %s\nset output '%s-%s.%s'\nset ylabel '%s'\nplot ", terminal, name, what, ext,
            column == 2 ? "speedup over the baseline" : "data/sec (mean peak of the runs)");
    if (with_ideal)
        fputs("x with lines dashtype 2 linecolor rgb 'gray' title 'ideal', ", f);
    for (int s = 0; s < series; s++)
        fprintf(f, "%s'%s.dat' index %d using 1:%d with linespoints pointtype 7 title '%d GPU%s per node'",
                s ? ", " : "", name, s, column, gpus[s], gpus[s] == 1 ? "" : "s");
    fputs("\n", f);
}

static int write_script(FILE *f, const char *name, const char *title, const int *gpus, int series, int max_gpus)
{
    fprintf(f, "# dtrain-analyze plot script: gnuplot %s.gp (restyle freely)\n"
               "set title '%s'\nset xlabel 'GPUs (nodes x GPUs per node)'\nset grid\nset key top left\n"
               "set xrange [0.5:%d.5]\nset yrange [0:*]\nset xtics 1\n",
            name, title, max_gpus);
    static const char *terminals[][2] = {{"pngcairo size 800,500", "png"}, {"svg size 800,500", "svg"}};
    for (int t = 0; t < 2; t++) {
        write_figure(f, name, terminals[t][0], terminals[t][1], "speedup", 2, 1, gpus, series);
        write_figure(f, name, terminals[t][0], terminals[t][1], "throughput", 3, 0, gpus, series);
    }
    return ferror(f) ? -1 : 0;
}

/* path written whole or not at all */
static int write_atomically(const char *path, int (*fill)(FILE *, const void *), const void *arg, struct dt_err *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return dt_fail(err, "%s: cannot write: %s", tmp, strerror(errno));
    int failed = fill(f, arg) < 0;
    failed |= fclose(f) != 0;
    if (failed || rename(tmp, path) < 0) {
        unlink(tmp);
        return dt_fail(err, "%s: cannot write", path);
    }
    return 0;
}

struct plot_args {
    const struct speedup_result *result;
    const char *name, *title;
    int gpus[64], series, max_gpus;
};

static int fill_data(FILE *f, const void *arg)
{
    const struct plot_args *a = arg;
    return write_data(f, a->result, a->gpus, a->series);
}

static int fill_script(FILE *f, const void *arg)
{
    const struct plot_args *a = arg;
    return write_script(f, a->name, a->title, a->gpus, a->series, a->max_gpus);
}

int plot_write(const char *prefix, const char *title, const struct speedup_result *result, struct dt_err *err)
{
    char copy[4096], path[4200];
    snprintf(copy, sizeof copy, "%s", prefix);
    struct plot_args a = {.result = result, .name = basename(copy), .title = title};
    if (strchr(a.name, '\'') || strchr(title, '\''))
        return dt_fail(err, "plot prefix or title \"%s\" has a quote gnuplot would misread", prefix);
    a.series = series_of(result, a.gpus, 64);
    for (int k = 0; k < result->count; k++)
        if (result->groups[k].nodes * result->groups[k].gpus > a.max_gpus)
            a.max_gpus = result->groups[k].nodes * result->groups[k].gpus;
    snprintf(path, sizeof path, "%s.dat", prefix);
    if (write_atomically(path, fill_data, &a, err) < 0)
        return -1;
    snprintf(path, sizeof path, "%s.gp", prefix);
    return write_atomically(path, fill_script, &a, err);
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
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return dt_fail(err, "gnuplot %s.gp failed (status %d)", prefix, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
