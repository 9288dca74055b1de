/* table_columns.c - column names, units and cells of hand-made result tables (see table_columns.h). */
#include "formats/table_columns.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/dt_parse.h"
#include "common/duration.h"

/* The names labs give each column, as normalise_cell() leaves them (lower case, no blanks, '#', '_',
 * '-', '.', '/' or '*'; a unit in brackets taken off first). "Nodes" is the count; the list of
 * nodes is "Node(s)", "Nodelist", "Hosts" and the like. */
static const char *const synonyms[COLS][12] = {
    [COL_NODES] = {"nodes", "numnodes", "nodecount", "nnodes", "numberofnodes", NULL},
    [COL_GPUS] = {"gpus", "gpuspernode", "gpusnode", "gpupernode", "numgpus", "ngpus", "gpu", "gpuspn", "totalgpus",
                  "gpustotal", NULL},
    [COL_EPOCH] = {"epoch", "epochs", NULL},
    [COL_BATCH] = {"batchsize", "batch", "bs", "minibatch", "minibatchsize", NULL},
    [COL_STEPS] = {"steps", "step", "iterations", "iters", "iter", NULL},
    [COL_RUNTIME] = {"runtime", "time", "walltime", "duration", "elapsed", "traintime", "trainingtime", NULL},
    [COL_SPEEDUP] = {"speedup", NULL},
    [COL_NODELIST] = {"node(s)", "nodelist", "hosts", "host(s)", "hostnames", "nodenames", "host", "machines", NULL},
    [COL_EFFICIENCY] = {"efficiency", "eff", "scalingefficiency", "parallelefficiency", NULL},
};

/* Header text as compared: lower case, without the characters labs vary; a bracketed unit at the
 * end ("Time (s)", "Runtime [min]") goes to unit. "Node(s)" keeps its "(s)": it is a name. */
static void normalise_cell(const char *cell, char *out, size_t size, char *unit, size_t unit_size)
{
    char lower[64];
    size_t n = 0;
    for (const char *c = cell; *c && n + 1 < sizeof lower; c++)
        if (!strchr(" \t#_-./*", *c))
            lower[n++] = *c == '[' ? '(' : *c == ']' ? ')' : (char)tolower((unsigned char)*c);
    lower[n] = '\0';
    unit[0] = '\0';
    char *open = strrchr(lower, '(');
    if (open && open != lower && strcmp(lower, "node(s)") != 0 && strcmp(lower, "host(s)") != 0 &&
        lower[n - 1] == ')') {
        snprintf(unit, unit_size, "%.*s", (int)(lower + n - 1 - open - 1), open + 1);
        *open = '\0';
    }
    snprintf(out, size, "%s", lower);
}

/* Seconds per unit a Runtime header names (a clock's last field: 3600 for "[d:h]"), 0 for none,
 * -1 for one that is not a time unit. */
static double unit_seconds(const char *unit)
{
    static const struct { const char *name; double seconds; } units[] = {
        {"s", 1}, {"sec", 1}, {"secs", 1}, {"seconds", 1}, {"m", 60}, {"min", 60}, {"mins", 60}, {"minutes", 60},
        {"h", 3600}, {"hr", 3600}, {"hrs", 3600}, {"hours", 3600}};
    if (!unit[0])
        return 0;
    if (duration_clock_unit(unit) > 0)
        return duration_clock_unit(unit);   /* a plain number under "[d:h]" counts its last field */
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(unit, units[i].name) == 0)
            return units[i].seconds;
    return -1;
}

/* The seconds a Runtime clock's last part counts: 60 under "[h:m]", 3600 under "[d:h]", 1 under
 * "(h:mm:ss)" and where the header names no clock (H:MM:SS, MM:SS as written). */
static double clock_field(const char *unit)
{
    double last = duration_clock_unit(unit);
    return last > 0 ? last : 1;
}

/* Levenshtein distance of a and b (each under 64 bytes), for the closest name to a missing column. */
static int edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b), row[65];
    if (la > 64 || lb > 64)
        return 99;
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diagonal = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j], best = diagonal + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            diagonal = up, row[j] = best;
        }
    }
    return row[lb];
}

/* The cell whose name is closest to one of column c's names, or -1 when none is near. */
static int closest_cell(char **cells, int n, int c)
{
    int best = -1, best_distance = 4;   /* farther than 3 edits is no likeness */
    for (int i = 0; i < n; i++) {
        char name[64], unit[32];
        normalise_cell(cells[i], name, sizeof name, unit, sizeof unit);
        for (int s = 0; synonyms[c][s]; s++) {
            int d = edit_distance(name, synonyms[c][s]);
            if (d < best_distance || (strstr(name, synonyms[c][s]) && best < 0))
                best = i, best_distance = d < best_distance ? d : best_distance;
        }
    }
    return best;
}

void table_header_lacks(char **cells, int n, char *why, size_t size)
{
    static const struct { int column; const char *name; } needed[] = {
        {COL_NODES, "the nodes (#Nodes, Nodes)"}, {COL_GPUS, "the GPUs (#GPUs, GPUs/node, GPUs)"},
        {COL_RUNTIME, "the runtime (Runtime, Time (s), Wall time)"}};
    struct table_layout layout;
    table_header(cells, n, &layout);
    size_t used = (size_t)snprintf(why, size, "it lacks");
    for (size_t k = 0; k < sizeof needed / sizeof needed[0] && used < size; k++) {
        if (layout.at[needed[k].column] >= 0)
            continue;
        int near = closest_cell(cells, n, needed[k].column);
        used += (size_t)snprintf(why + used, size - used, "%s %s", used > 8 ? ";" : "", needed[k].name);
        if (near >= 0 && used < size)
            used += (size_t)snprintf(why + used, size - used, " (the closest it has: \"%s\")", cells[near]);
    }
}

bool table_header(char **cells, int n, struct table_layout *layout)
{
    for (int c = 0; c < COLS; c++)
        layout->at[c] = -1;
    layout->runtime_scale = 0;
    layout->runtime_clock = 1;
    for (int i = 0; i < n; i++) {
        char name[64], unit[32];
        normalise_cell(cells[i], name, sizeof name, unit, sizeof unit);
        for (int c = 0; c < COLS; c++)
            for (int s = 0; synonyms[c][s] && layout->at[c] < 0; s++)
                if (strcmp(name, synonyms[c][s]) == 0 && (c == COL_RUNTIME ? unit_seconds(unit) >= 0 : !unit[0])) {
                    layout->at[c] = i;
                    snprintf(layout->name[c], sizeof layout->name[c], "%s", cells[i]);
                    if (c == COL_RUNTIME)
                        layout->runtime_scale = unit_seconds(unit), layout->runtime_clock = clock_field(unit);
                }
    }
    return layout->at[COL_NODES] >= 0 && layout->at[COL_GPUS] >= 0 && layout->at[COL_RUNTIME] >= 0;
}

double table_runtime(const char *text, double scale, double clock, double *unit)
{
    if (strchr(text, ':') || strchr(text, '-')) {   /* a lab's clock time: H:MM:SS, MM:SS, D-HH:MM:SS */
        double seconds = duration_parse_fields(text, clock > 0 ? clock : 1);
        if (seconds >= 0)
            *unit = duration_fields_unit(text, clock > 0 ? clock : 1);
        return seconds;
    }
    char *end;
    double value = strtod(text, &end);
    if (end == text || *end || !isdigit((unsigned char)text[0]) || !(value >= 0) || isinf(value))
        return -1;
    scale = scale > 0 ? scale : 1;
    *unit = dt_last_digit_unit(text, strlen(text)) * scale;
    return value * scale;
}

/* The cell of column c, with a decimal comma made a point where the table is ';'-separated; NULL
 * when the table has no such column. */
static const char *cell_of(char **cells, int n, const struct table_layout *layout, enum column c, char *copy,
                           size_t size)
{
    int at = layout->at[c];
    if (at < 0 || at >= n)
        return at < 0 ? NULL : "";
    snprintf(copy, size, "%s", cells[at]);
    if (layout->separator == ';' && c != COL_NODELIST)
        for (char *p = copy; (p = strchr(p, ',')); p++)
            *p = '.';
    return copy;
}

/* An integer column into *out (0 where the table has none). */
static bool read_count(char **cells, int n, const struct table_layout *layout, enum column c, long min, long max,
                       long *out, unsigned *unknown, char *why, size_t size)
{
    char copy[64];
    const char *text = cell_of(cells, n, layout, c, copy, sizeof copy);
    *out = 0;
    if (!text)
        return true;
    if (!*text)
        return snprintf(why, size, "%s (column %d) is empty", layout->name[c], layout->at[c] + 1), false;
    if (strcmp(text, "-") == 0 && c != COL_NODES && c != COL_GPUS)
        return *unknown |= 1u << c, true;   /* not known (a program's run says no batch size) */
    if (dt_parse_long(text, min, max, out) < 0)
        return snprintf(why, size, "%s (column %d) \"%s\" is not a whole number%s", layout->name[c], layout->at[c] + 1,
                        text, min > 0 ? " above 0" : ""), false;
    return true;
}

static bool read_runtime(char **cells, int n, const struct table_layout *layout, struct result_row *row, char *why,
                         size_t size)
{
    char copy[64];
    const char *text = cell_of(cells, n, layout, COL_RUNTIME, copy, sizeof copy);
    const char *name = layout->name[COL_RUNTIME];
    int column = layout->at[COL_RUNTIME] + 1;
    if (!*text)
        return snprintf(why, size, "%s (column %d) is empty", name, column), false;
    if ((row->runtime = table_runtime(text, layout->runtime_scale, layout->runtime_clock, &row->runtime_unit)) < 0) {
        if (layout->runtime_clock != 1)
            return snprintf(why, size, "%s (column %d) \"%s\" is not a clock time as its header writes one", name,
                            column, text), false;
        return snprintf(why, size, "%s (column %d) \"%s\" is not H:MM:SS, MM:SS, D-HH:MM:SS or a number of %s", name,
                        column, text,
                        layout->runtime_scale == 60 ? "minutes" : layout->runtime_scale == 3600 ? "hours" : "seconds"),
               false;
    }
    snprintf(row->runtime_text, sizeof row->runtime_text, "%s", cells[layout->at[COL_RUNTIME]]);
    row->runtime_plain = !strchr(text, ':') && !strchr(text, '-');   /* Slurm's "2-05" is a day and hours */
    return true;
}

static bool read_speedup(char **cells, int n, const struct table_layout *layout, struct result_row *row, char *why,
                         size_t size)
{
    char copy[64], *end;
    const char *text = cell_of(cells, n, layout, COL_SPEEDUP, copy, sizeof copy);
    row->speedup = NAN;
    if (!text || !*text || strcmp(text, "-") == 0)
        return true;   /* no speedup given: the baseline's, or a table that leaves it to the reader */
    row->speedup = strtod(text, &end);
    /* published tables write speedups as 7.76x or 7.76× (U+00D7, C3 97 in UTF-8) */
    size_t digits = (size_t)(end - text);
    if (*end == 'x' || *end == 'X')
        end++;
    else if ((unsigned char)end[0] == 0xc3 && (unsigned char)end[1] == 0x97)
        end += 2;
    if (end == text || *end || !(row->speedup > 0))
        return snprintf(why, size, "%s (column %d) \"%s\" is not a number (7.76, 7.76x or 7.76\u00d7) or '-'",
                        layout->name[COL_SPEEDUP], layout->at[COL_SPEEDUP] + 1, text), false;
    row->speedup_unit = pow(10, -dt_decimals(text, digits));
    return true;
}

/* Efficiency as a fraction ("0.93") or a percentage ("93%"); NAN where the table gives none. */
static bool read_efficiency(char **cells, int n, const struct table_layout *layout, struct result_row *row, char *why,
                            size_t size)
{
    char copy[64], *end;
    const char *text = cell_of(cells, n, layout, COL_EFFICIENCY, copy, sizeof copy);
    row->efficiency = NAN;
    if (!text || !*text || strcmp(text, "-") == 0)
        return true;
    row->efficiency = strtod(text, &end);
    bool percent = *end == '%' && !end[1];
    if (end == text || (*end && !percent) || !(row->efficiency > 0))
        return snprintf(why, size, "%s (column %d) \"%s\" is not a number, a percentage or '-'",
                        layout->name[COL_EFFICIENCY], layout->at[COL_EFFICIENCY] + 1, text), false;
    row->efficiency_unit = pow(10, -dt_decimals(text, (size_t)(end - text)));
    if (percent)
        row->efficiency /= 100, row->efficiency_unit /= 100;
    return true;
}

/* An Avg row says so in some cell: "Avg", "Average" or "Mean" (the reference puts it in Node(s)). */
static bool says_avg(char **cells, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(cells[i], "avg") || !strcasecmp(cells[i], "average") || !strcasecmp(cells[i], "mean"))
            return true;
    return false;
}

bool table_read_row(char **cells, int n, const struct table_layout *layout, struct result_row *row, char *why,
                    size_t size)
{
    long nodes, gpus, epoch, batch;
    row->unknown = 0;
    if (!read_count(cells, n, layout, COL_NODES, 1, 1 << 20, &nodes, &row->unknown, why, size))
        return false;
    row->nodes = (int)nodes;
    if (!read_count(cells, n, layout, COL_GPUS, 1, 1 << 20, &gpus, &row->unknown, why, size))
        return false;
    row->gpus = (int)gpus;
    if (!read_count(cells, n, layout, COL_EPOCH, 0, 1 << 30, &epoch, &row->unknown, why, size) ||
        !read_count(cells, n, layout, COL_BATCH, 1, 1 << 30, &batch, &row->unknown, why, size) ||
        !read_count(cells, n, layout, COL_STEPS, 0, 1L << 50, &row->steps, &row->unknown, why, size) ||
        !read_runtime(cells, n, layout, row, why, size) || !read_speedup(cells, n, layout, row, why, size) ||
        !read_efficiency(cells, n, layout, row, why, size))
        return false;
    row->epoch = (int)epoch, row->batch = (int)batch;
    int at = layout->at[COL_NODELIST];
    snprintf(row->nodelist, sizeof row->nodelist, "%s", at >= 0 && at < n ? cells[at] : "");
    row->avg = says_avg(cells, n);
    return true;
}
