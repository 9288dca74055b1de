/* methods.c - the method x GPU-count table of mean +- std (see methods.h). */
#include "analysis/methods.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stats.h"

static int same_row(const struct run_record *a, const struct run_record *b)
{
    return strcmp(a->model, b->model) == 0 && a->batch_per_replica == b->batch_per_replica &&
           strcmp(a->tag, b->tag) == 0 && strcmp(a->emulation, b->emulation) == 0 && strcmp(a->comm, b->comm) == 0 &&
           strcmp(a->comm_options, b->comm_options) == 0;
}

int methods_workers_of(const struct run_record *r)
{
    const char *servers = strstr(r->comm_options, "servers=");
    if (!servers)
        return r->world_size;
    servers += strlen("servers=");
    int n = strncmp(servers, "colocated", 9) == 0 ? r->nodes : atoi(servers);
    return n > 0 && n < r->world_size ? r->world_size - n : r->world_size;
}

bool methods_servers_colocated(const struct run_record *r)
{
    const char *servers = strstr(r->comm_options, "servers=");
    return servers && strncmp(servers + strlen("servers="), "colocated", 9) == 0;
}

static int compare_ints(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The distinct world sizes, ascending. Returns how many, or -1. */
static int column_sizes(const struct run_record *runs, int n, int **sizes)
{
    int count = 0, *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
    if (!s)
        return -1;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < count && s[j] != methods_workers_of(&runs[i]))
            j++;
        if (j == count)
            s[count++] = methods_workers_of(&runs[i]);
    }
    qsort(s, (size_t)count, sizeof *s, compare_ints);
    *sizes = s;
    return count;
}

struct cell {
    double mean, std;
    int repeats;
};

/* Whether o counts in the cell of r's row: the same row, or (any_method) the same model, batch and tag. */
static int counts_for(const struct run_record *o, const struct run_record *r, int any_method)
{
    if (!any_method)
        return same_row(o, r);
    return strcmp(o->model, r->model) == 0 && o->batch_per_replica == r->batch_per_replica && strcmp(o->tag, r->tag) == 0 &&
           strcmp(o->emulation, r->emulation) == 0;   /* an emulated run is never a real one's baseline */
}

/* rates: room for n values, the cell's scratch. */
static struct cell cell_of(const struct run_record *runs, int n, const struct run_record *r, int world, int any_method,
                           double *rates)
{
    struct cell c = {0};
    for (int i = 0; i < n; i++)
        if (methods_workers_of(&runs[i]) == world && counts_for(&runs[i], r, any_method))
            rates[c.repeats++] = runs[i].final_data_per_sec;
    stats_mean_std(rates, c.repeats, &c.mean, &c.std);
    return c;
}

static void print_header(FILE *out, const int *sizes, int columns, enum methods_format format)
{
    const char *sep = format == METHODS_MD ? " | " : ",";
    fprintf(out, "%sModel%sBS%sTag%sMethod%sBaseline", format == METHODS_MD ? "| " : "", sep, sep, sep, sep);
    for (int c = 0; c < columns; c++)   /* CSV: numbers only, the mean and the std each a column */
        if (format == METHODS_MD)
            fprintf(out, "%s%d GPU%s", sep, sizes[c], sizes[c] == 1 ? "" : "s");
        else
            fprintf(out, ",%d GPU%s mean,%d GPU%s std", sizes[c], sizes[c] == 1 ? "" : "s", sizes[c],
                    sizes[c] == 1 ? "" : "s");
    fputs(format == METHODS_MD ? " |\n" : "\n", out);
    if (format == METHODS_MD) {
        fputs("|---|---|---|---|---|", out);
        for (int c = 0; c < columns; c++)
            fputs("---|", out);
        fputc('\n', out);
    }
}

int methods_table(FILE *out, const struct run_record *runs, int n, enum methods_format format)
{
    int *sizes, columns = column_sizes(runs, n, &sizes), rows = 0;
    if (columns < 0)
        return -1;
    double *rates = malloc((size_t)(n > 0 ? n : 1) * sizeof *rates);   /* one cell's repeats at a time */
    if (!rates) {
        free(sizes);
        return -1;
    }
    const char *sep = format == METHODS_MD ? " | " : ",";
    print_header(out, sizes, columns, format);
    for (int i = 0; i < n; i++) {
        int first = 1;
        for (int j = 0; j < i && first; j++)
            first = !same_row(&runs[j], &runs[i]);
        if (!first)
            continue;
        rows++;
        struct cell base = cell_of(runs, n, &runs[i], 1, 1, rates);
        const char *quote = format == METHODS_MD ? "" : "\"";   /* CSV: the text cells quoted */
        fprintf(out, "%s%s%s%s%s%d%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s", format == METHODS_MD ? "| " : "", quote, runs[i].model,
                quote, sep, runs[i].batch_per_replica, sep, quote,
                runs[i].tag[0] || runs[i].emulation[0] || format != METHODS_MD ? runs[i].tag : "-",
                runs[i].emulation[0] ? " (emulated: " : "", runs[i].emulation, runs[i].emulation[0] ? ")" : "", quote, sep,
                quote, runs[i].comm, runs[i].comm_options[0] ? " (" : "", runs[i].comm_options,
                runs[i].comm_options[0] ? ")" : "", quote, sep);
        if (base.repeats)
            fprintf(out, "%.1f", base.mean);
        else
            fputs(format == METHODS_MD ? "-" : "", out);
        for (int c = 0; c < columns; c++) {
            struct cell cell = cell_of(runs, n, &runs[i], sizes[c], 0, rates);
            if (format == METHODS_CSV)
                cell.repeats ? fprintf(out, ",%.3f,%.3f", cell.mean, cell.std) : fputs(",,", out);
            else if (cell.repeats)
                fprintf(out, "%s%.3f +- %.2f", sep, cell.mean, cell.std);
            else
                fprintf(out, "%s-", sep);
        }
        fputs(format == METHODS_MD ? " |\n" : "\n", out);
    }
    free(rates);
    free(sizes);
    return rows;
}
