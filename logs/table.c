/* table.c - read hand-made result tables (see table.h). */
#include "table.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dt_parse.h"
#include "duration.h"

#define ANALYZER_MARK "dtrain-analyze "

enum column { COL_NODES, COL_GPUS, COL_EPOCH, COL_BATCH, COL_STEPS, COL_RUNTIME, COL_SPEEDUP, COL_NODELIST, COLS };

/* Trims blanks and bold markers off both ends of a cell, in place. */
static char *trim_cell(char *c)
{
    while (*c == ' ' || *c == '*' || *c == '\t')
        c++;
    size_t len = strlen(c);
    while (len && strchr(" *\t\r\n", c[len - 1]))
        c[--len] = '\0';
    return c;
}

/* A CSV line into trimmed cells: "a","b ""c""" quoting as RFC 4180 has it, in place. */
static int csv_cells(char *line, char **cells, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        char *start = p, *out = p;
        if (*p == '"') {   /* quoted: "" is a quote, a comma is text */
            for (p++; *p && !(*p == '"' && p[1] != '"'); p++)
                *out++ = *p == '"' ? *++p : *p;
            if (*p == '"')
                p++;
            p += strcspn(p, ",");
        } else {
            p += strcspn(p, ",");
            out = p;
        }
        char end = *p;
        *out = '\0';
        cells[n++] = trim_cell(start);
        if (end != ',')
            break;
        p++;
    }
    return n;
}

int table_cells(char *line, char **cells, int max)
{
    int n = 0;
    char *p = strchr(line, '|');
    while (p && n < max) {
        char *next = strchr(p + 1, '|');
        if (!next)
            break;
        *next = '\0';
        cells[n++] = trim_cell(p + 1);
        p = next;
    }
    return n;
}

/* Which column a header cell names, or -1. */
static int column_of(const char *cell)
{
    static const char *const names[COLS] = {"#Nodes", "#GPUs", "Epoch", "Batchsize", "Steps", "Runtime", "Speedup",
                                            "Node(s)"};
    for (int c = 0; c < COLS; c++)
        if (strcasecmp(cell, names[c]) == 0)
            return c;
    return -1;
}

static void skip(struct table_set *set, const char *path, int line, const char *why)
{
    if (set->lines_skipped < 8)
        snprintf(set->skipped[set->lines_skipped], sizeof set->skipped[0], "%s:%d: %s", path, line, why);
    set->lines_skipped++;
}

/* Fills a row from its cells; returns NULL or what is wrong. */
static const char *read_row(char **cells, const int *at, struct result_row *row)
{
    if (dt_parse_int(cells[at[COL_NODES]], 1, 1 << 20, &row->nodes) < 0)
        return "#Nodes is not a number";
    if (dt_parse_int(cells[at[COL_GPUS]], 1, 1 << 20, &row->gpus) < 0)
        return "#GPUs is not a number";
    if (dt_parse_int(cells[at[COL_EPOCH]], 0, 1 << 30, &row->epoch) < 0)
        return "Epoch is not a number";
    if (dt_parse_int(cells[at[COL_BATCH]], 1, 1 << 30, &row->batch) < 0)
        return "Batchsize is not a number";
    if (dt_parse_long(cells[at[COL_STEPS]], 0, 1L << 50, &row->steps) < 0)
        return "Steps is not a number";
    if ((row->runtime = duration_parse(cells[at[COL_RUNTIME]])) < 0)
        return "Runtime is not H:MM:SS";
    snprintf(row->runtime_text, sizeof row->runtime_text, "%s", cells[at[COL_RUNTIME]]);
    const char *speedup = cells[at[COL_SPEEDUP]];
    char *end;
    row->speedup = NAN;
    if (*speedup && strcmp(speedup, "-") != 0) {
        row->speedup = strtod(speedup, &end);
        if (end == speedup || *end)
            return "Speedup is not a number or '-'";
        row->speedup_unit = pow(10, -dt_decimals(speedup, strlen(speedup)));
    }
    snprintf(row->nodelist, sizeof row->nodelist, "%s", cells[at[COL_NODELIST]]);
    row->avg = strcasecmp(row->nodelist, "Avg") == 0;
    return NULL;
}

/* A header row names every column: returns 1 and fills at[] with their positions. */
static int header_of(char **cells, int n, int *at)
{
    int found = 0;
    for (int c = 0; c < COLS; c++)
        at[c] = -1;
    for (int i = 0; i < n; i++) {
        int c = column_of(cells[i]);
        if (c >= 0 && at[c] < 0) {
            at[c] = i;
            found++;
        }
    }
    return found == COLS;
}

static int add_row(struct result_table *table, const struct result_row *row)
{
    struct result_row *bigger = realloc(table->rows, (size_t)(table->count + 1) * sizeof *bigger);
    if (!bigger)
        return -1;
    table->rows = bigger;
    table->rows[table->count++] = *row;
    return 0;
}

static struct result_table *new_table(struct table_set *set, const char *title, int line)
{
    struct result_table *bigger = realloc(set->tables, (size_t)(set->count + 1) * sizeof *bigger);
    if (!bigger)
        return NULL;
    set->tables = bigger;
    struct result_table *table = &set->tables[set->count++];
    memset(table, 0, sizeof *table);
    snprintf(table->title, sizeof table->title, "%s", title);
    table->line = line;
    return table;
}

int table_parse_file(const char *path, struct table_set *set, struct dt_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return dt_fail(err, "%s: %s", path, strerror(errno));
    int rc = table_parse_stream(f, path, set, err);
    fclose(f);
    return rc;
}

int table_parse_stream(FILE *f, const char *path, struct table_set *set, struct dt_err *err)
{
    char line[8192], title[256] = "";
    int number = 0, at[COLS], rc = 0;
    bool csv = false;   /* the current table is comma-separated, not a Markdown one */
    struct result_table *table = NULL;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        number++;
        size_t hashes = strspn(line, "#");
        if (hashes > 0 && strchr(" \t\r\n", line[hashes])) {   /* a heading; "#Nodes,..." is a CSV header */
            snprintf(title, sizeof title, "%s", line + strspn(line, "# "));
            title[strcspn(title, "\r\n\t")] = '\0';
            table = NULL;
            continue;
        }
        if (line[strspn(line, " \t\r\n")] == '\0') {
            if (csv)
                table = NULL;   /* a blank line ends a CSV table */
            continue;
        }
        char *cells[32];
        bool comma_line = line[0] != '|';
        int n = comma_line ? csv_cells(line, cells, 32) : table_cells(line, cells, 32), header[COLS];
        if (header_of(cells, n, header)) {   /* a header row starts a table with its column order */
            memcpy(at, header, sizeof at);
            csv = comma_line;
            if (!(table = new_table(set, title, number)))
                rc = dt_fail(err, "out of memory");
            continue;
        }
        if (comma_line && !csv)
            table = NULL;   /* prose ends a Markdown table */
        if (!table || n == 0 || strspn(cells[0], "-: ") == strlen(cells[0]))
            continue;   /* outside a result table, or its |---| line */
        int needed = 0;
        for (int c = 0; c < COLS; c++)
            needed = at[c] + 1 > needed ? at[c] + 1 : needed;
        struct result_row row = {.line = number};
        const char *why = n < needed ? "fewer cells than the header" : read_row(cells, at, &row);
        if (why) {
            skip(set, path, number, why);
            continue;
        }
        if (add_row(table, &row) < 0)
            rc = dt_fail(err, "out of memory");
        set->rows_read++;
    }
    return rc;
}

void table_set_free(struct table_set *set)
{
    for (int i = 0; i < set->count; i++)
        free(set->tables[i].rows);
    free(set->tables);
    memset(set, 0, sizeof *set);
}

void table_mark(FILE *out, const char *command, bool csv)
{
    if (csv)
        fprintf(out, "# " ANALYZER_MARK "%s (dtrain-analyze passes this file over when it reads a folder)\n", command);
    else
        fprintf(out, "<!-- " ANALYZER_MARK "%s: dtrain-analyze passes this file over when it reads a folder -->\n",
                command);
}

bool table_is_analyzer_output(const char *path)
{
    FILE *f = fopen(path, "r");
    char first[64] = "";
    if (f && !fgets(first, sizeof first, f))
        first[0] = '\0';
    if (f)
        fclose(f);
    const char *text = strncmp(first, "\xEF\xBB\xBF", 3) == 0 ? first + 3 : first;   /* a byte-order mark */
    return strncmp(text, "<!-- " ANALYZER_MARK, strlen("<!-- " ANALYZER_MARK)) == 0 ||
           strncmp(text, "# " ANALYZER_MARK, strlen("# " ANALYZER_MARK)) == 0;
}
