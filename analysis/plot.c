/* plot.c - gnuplot data and script for speedup and throughput against GPUs (see plot.h). */
#include "plot.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.h"

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

/* What the data file and the script are written from. */
struct plot {
    const struct speedup_result *result;
    const char *name, *title;    /* name: the prefix's last part, as the script refers to its files */
    int gpus[64], series, max_gpus;
};

/* atomic_write fills: they return 0, as atomic_write checks the stream's error flag itself. */
static int write_data(FILE *f, const void *arg)
{
    const struct plot *p = arg;
    fputs("# dtrain-analyze plot data: one block per GPUs-per-node series\n"
          "# total_gpus speedup data_per_sec nodes\n", f);
    for (int s = 0; s < p->series; s++) {
        fprintf(f, "%s# %d GPU%s per node\n", s ? "\n\n" : "", p->gpus[s], p->gpus[s] == 1 ? "" : "s");
        for (int k = 0; k < p->result->count; k++) {   /* groups come sorted by nodes */
            const struct speedup_group *g = &p->result->groups[k];
            if (g->gpus == p->gpus[s])
                fprintf(f, "%d %.4f %.2f %d\n", g->nodes * g->gpus, g->speedup, g->data_per_sec, g->nodes);
        }
    }
    return 0;
}

static void write_figure(FILE *f, const struct plot *p, const char *terminal, const char *ext, const char *what,
                         int column, int with_ideal)
{
    fprintf(f, "set terminal %s\nset output '%s-%s.%s'\nset ylabel '%s'\nplot ", terminal, p->name, what, ext,
            column == 2 ? "speedup over the baseline" : "data/sec (mean peak of the runs)");
    if (with_ideal)
        fputs("x with lines dashtype 2 linecolor rgb 'gray' title 'ideal', ", f);
    for (int s = 0; s < p->series; s++)
        fprintf(f, "%s'%s.dat' index %d using 1:%d with linespoints pointtype 7 title '%d GPU%s per node'",
                s ? ", " : "", p->name, s, column, p->gpus[s], p->gpus[s] == 1 ? "" : "s");
    fputs("\n", f);
}

static int write_script(FILE *f, const void *arg)
{
    const struct plot *p = arg;
    fprintf(f, "# dtrain-analyze plot script: gnuplot %s.gp (restyle freely)\n"
               "set title '%s'\nset xlabel 'GPUs (nodes x GPUs per node)'\nset grid\nset key top left\n"
               "set xrange [0.5:%d.5]\nset yrange [0:*]\nset xtics 1\n",
            p->name, p->title, p->max_gpus);
    static const char *terminals[][2] = {{"pngcairo size 800,500", "png"}, {"svg size 800,500", "svg"}};
    for (int t = 0; t < 2; t++) {
        write_figure(f, p, terminals[t][0], terminals[t][1], "speedup", 2, 1);
        write_figure(f, p, terminals[t][0], terminals[t][1], "throughput", 3, 0);
    }
    return 0;
}

int plot_write(const char *prefix, const char *title, const struct speedup_result *result, struct dt_err *err)
{
    char copy[4096], path[4200];
    snprintf(copy, sizeof copy, "%s", prefix);
    struct plot a = {.result = result, .name = basename(copy), .title = title};
    if (strchr(a.name, '\'') || strchr(title, '\''))
        return dt_fail(err, "plot prefix or title \"%s\" has a quote gnuplot would misread", prefix);
    a.series = series_of(result, a.gpus, 64);
    for (int k = 0; k < result->count; k++)
        if (result->groups[k].nodes * result->groups[k].gpus > a.max_gpus)
            a.max_gpus = result->groups[k].nodes * result->groups[k].gpus;
    snprintf(path, sizeof path, "%s.dat", prefix);
    if (atomic_write(path, write_data, &a, err) < 0)
        return -1;
    snprintf(path, sizeof path, "%s.gp", prefix);
    return atomic_write(path, write_script, &a, err);
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
