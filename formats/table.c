/* table.c - read hand-made result tables (see table.h). */
#include "formats/table.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/dt_parse.h"
#include "common/duration.h"
#include "formats/table_columns.h"

#define ANALYZER_MARK "dtrain-analyze "


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

int table_csv_cells(char *line, char separator, char **cells, int max)
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
            p += strcspn(p, (char[]){separator, '\0'});
        } else {
            p += strcspn(p, (char[]){separator, '\0'});
            out = p;
        }
        char end = *p;
        *out = '\0';
        cells[n++] = trim_cell(start);
        if (end != separator)
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

static void skip_table_line(struct table_set *set, const char *path, int line, const char *why)
{
    if (set->lines_skipped < 8)
        snprintf(set->skipped[set->lines_skipped], sizeof set->skipped[0], "%s:%d: %s", path, line, why);
    set->lines_skipped++;
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

/* A line's cells: a Markdown row when it starts with '|', else CSV split at separator. */
static int cells_of(char *line, char separator, char **cells, int max)
{
    return line[0] == '|' ? table_cells(line, cells, max) : table_csv_cells(line, separator, cells, max);
}

/* Whether line is a table's header row (a CSV one tried with ',' then ';'); fills layout. */
static bool starts_table(const char *line, struct table_layout *layout)
{
    const char separators[] = {line[0] == '|' ? '|' : ',', ';'};
    for (int s = 0; s < (line[0] == '|' ? 1 : 2); s++) {
        char copy[8192], *cells[32];
        struct table_layout found;   /* the current table's layout stays until a header is found */
        snprintf(copy, sizeof copy, "%s", line);
        if (table_header(cells, cells_of(copy, separators[s], cells, 32), &found)) {
            *layout = found;
            layout->separator = separators[s];
            return true;
        }
    }
    return false;
}

/* A "# Title" line: the title of the tables below it ("#Nodes,..." is a CSV header, not one). */
static bool read_heading(const char *line, char *title, size_t size)
{
    size_t hashes = strspn(line, "#");
    if (hashes == 0 || !strchr(" \t\r\n", line[hashes]))
        return false;
    snprintf(title, size, "%s", line + strspn(line, "# "));
    title[strcspn(title, "\r\n\t")] = '\0';
    return true;
}

static struct result_table *table_started(struct table_set *set, const char *title, int line,
                                          const struct table_layout *layout)
{
    struct result_table *table = new_table(set, title, line);
    if (table) {
        table->has_epoch = layout->at[COL_EPOCH] >= 0, table->has_batch = layout->at[COL_BATCH] >= 0;
        table->has_steps = layout->at[COL_STEPS] >= 0, table->has_speedup = layout->at[COL_SPEEDUP] >= 0;
        table->has_nodelist = layout->at[COL_NODELIST] >= 0;
        table->gpus_total = strcasestr(layout->name[COL_GPUS], "total") != NULL;   /* "Total GPUs" */
    }
    return table;
}

/* More GPUs than any node holds (a DGX-2's 16): a count of the whole job's. */
#define NODE_GPUS_MAX 16

/* A GPUs column that holds the job's total, not a node's: said so by its header, or by its numbers
 * (8192 on 2048 nodes: more than a node holds, a whole multiple of the nodes on every row). Each
 * row's count becomes per node, as the rest of the analyzer reads #GPUs. */
static void gpus_per_node(struct result_table *t)
{
    bool multiples = t->count > 0, beyond = false;
    for (int i = 0; i < t->count; i++) {
        const struct result_row *r = &t->rows[i];
        if (r->nodes <= 0 || r->gpus <= 0)
            continue;   /* "-": not known */
        multiples = multiples && r->gpus % r->nodes == 0;
        beyond = beyond || (r->nodes > 1 && r->gpus > NODE_GPUS_MAX && r->gpus / r->nodes <= NODE_GPUS_MAX);
    }
    if (!(t->gpus_total || (multiples && beyond)) || !multiples) {
        t->gpus_total = false;
        return;
    }
    t->gpus_total = true;
    for (int i = 0; i < t->count; i++)
        if (t->rows[i].nodes > 0 && t->rows[i].gpus > 0)
            t->rows[i].gpus /= t->rows[i].nodes;
    for (int i = 0; i < t->unread_count; i++)
        if (t->unread[i].nodes > 0 && t->unread[i].gpus % t->unread[i].nodes == 0)
            t->unread[i].gpus /= t->unread[i].nodes;
}

/* One row of a table, or its |---| line. Returns 0, or -1 out of memory. */
static int table_line(char *line, int number, const char *path, const struct table_layout *layout,
                      struct result_table *table, struct table_set *set)
{
    char *cells[32], why[200];
    int n = cells_of(line, layout->separator, cells, 32);
    if (n == 0 || strspn(cells[0], "-: ") == strlen(cells[0]))
        return 0;
    struct result_row row = {.line = number};
    if (!table_read_row(cells, n, layout, &row, why, sizeof why)) {
        skip_table_line(set, path, number, why);
        if (row.nodes > 0 && row.gpus > 0 && table->unread_count < 16)   /* its configuration is incomplete */
            table->unread[table->unread_count++] = (struct unread_row){number, row.nodes, row.gpus};
        return 0;
    }
    table->seconds_assumed |= row.runtime_plain && layout->runtime_scale == 0;
    set->rows_read++;
    return add_row(table, &row);
}

/* A line of prose above a table ("**Problem size 2048^3**", "Table 2: strong scaling:"), as a
 * title: markup and a closing colon taken off. */
static void prose_title(const char *line, char *out, size_t size)
{
    char text[256];
    size_t n = 0;
    for (const char *c = line + strspn(line, " \t"); *c && *c != '\r' && *c != '\n' && n + 1 < sizeof text; c++)
        if (*c != '*' && *c != '_')
            text[n++] = *c;
    while (n > 0 && strchr(" :\t", text[n - 1]))
        n--;
    text[n] = '\0';
    snprintf(out, size, "%s", text);
}

int table_parse_stream(FILE *f, const char *path, struct table_set *set, struct dt_err *err)
{
    char buffer[8192], title[256] = "", prose[256] = "";
    int number = 0, rc = 0, first = set->count;
    struct table_layout layout = {.separator = '|'};
    struct result_table *table = NULL;
    while (rc == 0 && fgets(buffer, sizeof buffer, f)) {
        char *line = buffer;
        if (++number == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0)
            line += 3;   /* a spreadsheet's "CSV UTF-8" export begins with a byte-order mark */
        if (read_heading(line, title, sizeof title)) {
            table = NULL, prose[0] = '\0';
            continue;
        }
        if (line[strspn(line, " \t\r\n")] == '\0') {
            if (layout.separator != '|')
                table = NULL;   /* a blank line ends a CSV table */
            continue;
        }
        if (starts_table(line, &layout)) {   /* a header row starts a table with its column order */
            /* the heading, and a short line of prose just above the table: two tables under one
             * heading ("Problem size 1024^3:", "Problem size 2048^3:") are told apart */
            char name[256];
            snprintf(name, sizeof name, "%s%s%s", title, title[0] && prose[0] ? ": " : "", prose);
            if (!(table = table_started(set, name, number, &layout)))
                rc = dt_fail(err, "out of memory");
            prose[0] = '\0';
            continue;
        }
        bool table_row = line[strspn(line, " \t")] == '|';   /* of a table this reader does not read */
        if (!table_row && (!table || layout.separator == '|') && strlen(line) <= 100)
            prose_title(line, prose, sizeof prose);   /* a long paragraph names nothing */
        else if (!table || table_row)
            prose[0] = '\0';
        if (table && (line[0] == '|') != (layout.separator == '|'))
            table = NULL;   /* prose ends a Markdown table, a Markdown row a CSV one */
        if (table && table_line(line, number, path, &layout, table, set) < 0)
            rc = dt_fail(err, "out of memory");
    }
    if (rc == 0 && ferror(f))   /* a read error is not the end of the file */
        rc = dt_fail(err, "%s: a read error after line %d (%s)", path, number, strerror(errno));
    for (int t = first; rc == 0 && t < set->count; t++)
        gpus_per_node(&set->tables[t]);
    return rc;
}

bool table_why_not_read(const char *path, char *why, size_t size)
{
    FILE *f = fopen(path, "r");
    char line[8192], next[8192];
    int number = 0;
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        number++;
        if (line[strspn(line, " \t")] != '|')
            continue;
        long at = ftell(f);   /* a Markdown header is followed by its |---| line */
        if (!fgets(next, sizeof next, f) || strspn(next, "|:- \t\r\n") != strlen(next)) {
            fseek(f, at, SEEK_SET);
            continue;
        }
        char *cells[32], text[256];
        int n = table_cells(line, cells, 32);
        table_header_lacks(cells, n, text, sizeof text);
        snprintf(why, size, "its table on line %d: %s", number, text);
        found = true;
    }
    if (f)
        fclose(f);
    return found;
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
