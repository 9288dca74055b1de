/* method_table.c - read the reference experiments' method comparison tables (see method_table.h). */
#include "formats/method_table.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/table.h"

/* "4 GPUs", "1 GPU": the count, or 0. */
static int gpu_column(const char *cell)
{
    char *end;
    long n = strtol(cell, &end, 10);
    if (end == cell || n < 1 || n > 1 << 20)
        return 0;
    end += strspn(end, " ");
    return strcasecmp(end, "GPU") == 0 || strcasecmp(end, "GPUs") == 0 ? (int)n : 0;
}

/* The header's layout: where the GPU columns start, and the Baseline column (-1 when none). */
struct layout {
    int first_value, baseline;
};

static int read_header(char **cells, int n, struct method_table *t, struct layout *at)
{
    int has_method = 0;
    *at = (struct layout){.first_value = -1, .baseline = -1};
    t->columns = 0;
    for (int c = 0; c < n; c++) {
        int gpus = gpu_column(cells[c]);
        has_method |= strcasecmp(cells[c], "METHOD") == 0;
        if (strcasecmp(cells[c], "Baseline") == 0)
            at->baseline = c;
        if (gpus && t->columns < METHOD_MAX_COLUMNS) {
            if (at->first_value < 0)
                at->first_value = c;
            t->gpus[t->columns++] = gpus;
        }
    }
    return has_method && t->columns > 0;
}

/* "925.020 +- 4.42" or "925.02 ± 4.42"; or one figure alone ("253.1": the published table's
 * 1-GPU column, its baseline), single. */
static int read_cell(const char *text, struct method_cell *cell)
{
    char *end;
    cell->mean = strtod(text, &end);
    cell->single = false;
    if (end == text || !isfinite(cell->mean))
        return -1;
    end += strspn(end, " ");
    if (*end == '\0') {
        cell->std = 0, cell->single = true;
        snprintf(cell->text, sizeof cell->text, "%s", text);
        return 0;
    }
    if (strncmp(end, "+-", 2) == 0)
        end += 2;
    else if (strncmp(end, "\u00b1", 2) == 0)
        end += 2;
    else
        return -1;
    const char *std = end + strspn(end, " ");
    cell->std = strtod(std, &end);
    if (end == std || *end || !(cell->std >= 0) || !isfinite(cell->std))
        return -1;
    snprintf(cell->text, sizeof cell->text, "%s", text);
    return 0;
}

/* Fills a row; returns NULL or what is wrong with it. */
static const char *read_row(char **cells, int n, const struct method_table *t, const struct layout *at,
                            struct method_row *row)
{
    row->baseline = NAN;
    if (at->baseline >= 0 && at->baseline < n) {
        char *end;
        row->baseline = strtod(cells[at->baseline], &end);
        if (end == cells[at->baseline] || *end || !(row->baseline > 0))
            return "Baseline is not a positive number";
    }
    size_t used = 0;   /* a label longer than the field is cut, never written past it */
    for (int c = 0; c < at->first_value && c < n && used < sizeof row->label - 1; c++)
        if (c != at->baseline)
            used += (size_t)snprintf(row->label + used, sizeof row->label - used, "%s%s", used ? ", " : "", cells[c]);
    row->values = n - at->first_value;
    if (row->values <= 0)
        return "no value cells";
    if (row->values > t->columns)
        return "more value cells than the header has GPU columns";
    for (int v = 0; v < row->values; v++)
        if (read_cell(cells[at->first_value + v], &row->cell[v]) < 0)
            return "a value cell is not \"mean +- std\" (or one number)";
    if (isnan(row->baseline) && t->gpus[0] == 1 && row->cell[0].single)   /* "| METHOD | 1 GPU | 4 GPUs |": its 1 GPU */
        row->baseline = row->cell[0].mean;
    return NULL;
}

static void skip_method_line(struct method_set *set, const char *name, int line, const char *why)
{
    if (set->lines_skipped < 8)
        snprintf(set->skipped[set->lines_skipped], sizeof set->skipped[0], "%s:%d: %s", name, line, why);
    set->lines_skipped++;
}

static struct method_table *new_table(struct method_set *set, const struct method_table *header)
{
    struct method_table *bigger = realloc(set->tables, (size_t)(set->count + 1) * sizeof *bigger);
    if (!bigger)
        return NULL;
    set->tables = bigger;
    set->tables[set->count] = *header;
    return &set->tables[set->count++];
}

static int add_row(struct method_table *t, const struct method_row *row)
{
    struct method_row *bigger = realloc(t->rows, (size_t)(t->count + 1) * sizeof *bigger);
    if (!bigger)
        return -1;
    t->rows = bigger;
    t->rows[t->count++] = *row;
    return 0;
}

int method_table_parse(FILE *f, const char *name, struct method_set *set, struct dt_err *err)
{
    char line[8192];
    int number = 0;
    struct layout at = {0};
    struct method_table *table = NULL;
    while (fgets(line, sizeof line, f)) {
        number++;
        if (line[0] != '|') {
            if (line[strspn(line, " \t\r\n")] != '\0')
                table = NULL;   /* prose or a heading ends a table */
            continue;
        }
        char *cells[METHOD_MAX_COLUMNS * 2];
        int n = table_cells(line, cells, METHOD_MAX_COLUMNS * 2);
        struct method_table header = {.line = number};
        struct layout header_at;
        if (read_header(cells, n, &header, &header_at)) {
            at = header_at;
            if (!(table = new_table(set, &header)))
                return dt_fail(err, "out of memory");
            continue;
        }
        if (!table || n == 0 || strspn(cells[0], "-: ") == strlen(cells[0]))
            continue;
        struct method_row row = {.line = number};
        const char *why = read_row(cells, n, table, &at, &row);
        if (why) {
            skip_method_line(set, name, number, why);
            continue;
        }
        if (add_row(table, &row) < 0)
            return dt_fail(err, "out of memory");
        set->rows_read++;
    }
    if (ferror(f))   /* a read error is not the end of the file */
        return dt_fail(err, "%s: a read error after line %d (%s)", name, number, strerror(errno));
    return 0;
}

void method_set_free(struct method_set *set)
{
    for (int i = 0; i < set->count; i++)
        free(set->tables[i].rows);
    free(set->tables);
    *set = (struct method_set){0};
}
