/* scaling_series.c - several series of one setting under one header (see scaling_series.h). The
 * rows' keys are scaling_settings.c's, read through its scaling_key_ functions. */
#include "formats/scaling_series.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/scaling_settings.h"

static bool same_setting(const char *a, const char *b)
{
    size_t la = scaling_key_setting_length(a), lb = scaling_key_setting_length(b);
    return la == lb && strncmp(a, b, la) == 0;
}

/* Each row's other cells as text (cells[r * columns + c], "" where none), for the partition. */
static char **other_cells(const struct scaling_table *t)
{
    char **cells = calloc((size_t)t->rows * t->columns + 1, sizeof *cells);
    for (int r = 0; cells && r < t->rows; r++)
        for (int c = 0; c < t->columns; c++) {
            char text[128];
            scaling_key_cell(t->row_setting[r], c, text, sizeof text);
            if (!(cells[r * t->columns + c] = strdup(text))) {
                for (int k = 0; k < r * t->columns + c; k++)
                    free(cells[k]);
                free(cells);
                return NULL;
            }
        }
    return cells;
}

/* Whether rows p and q agree in columns a and b (b -1: a alone). */
static bool cells_agree(const struct scaling_table *t, char **cells, int p, int q, int a, int b)
{
    return !strcmp(cells[p * t->columns + a], cells[q * t->columns + a]) &&
           (b < 0 || !strcmp(cells[p * t->columns + b], cells[q * t->columns + b]));
}

/* Whether grouping the rows of row r's setting by the columns a and b (b -1: a alone) parts them
 * into series: no job size twice in a group, and more than half the rows in groups of two sizes or
 * more (a setting run at one size only, "Batch size 64" at 1 GPU, is left out; where most rows
 * would be, they are variants of one series' runs, not series). */
static bool parts_into_series(const struct scaling_table *t, char **cells, int r, int a, int b)
{
    int rows = 0, partnered = 0;
    for (int p = 0; p < t->rows; p++) {
        if (!same_setting(t->row_setting[p], t->row_setting[r]))
            continue;
        bool partner = false;
        for (int q = 0; q < t->rows; q++) {
            if (q == p || !same_setting(t->row_setting[q], t->row_setting[r]) || !cells_agree(t, cells, p, q, a, b))
                continue;
            if (scaling_at(t, p, t->count_column)->value == scaling_at(t, q, t->count_column)->value)
                return false;
            partner = true;
        }
        rows++, partnered += partner;
    }
    return 2 * partnered > rows;
}

/* Each row's series within its setting (series[r], from 0): where a job size repeats in a setting,
 * the rows grouped by the one column (or two) whose values part them into series without a
 * repeat ("Batch size / GPU" 48 and 72 interleaved; "Dimension" and "Batch size" together), else a
 * new series at each row whose size the current one has. Returns whether any setting has several. */
/* How the rows of the setting whose first row is r part into series: whether a job size repeats
 * in it, and the column (*a) or two (*a, *b) whose values part them, -1 for none. */
static bool setting_partition(const struct scaling_table *t, char **cells, int r, int *a, int *b)
{
    bool repeats = false;
    for (int q = r; q < t->rows && !repeats; q++)
        for (int p = r; p < q && !repeats; p++)
            repeats = same_setting(t->row_setting[p], t->row_setting[r]) &&
                      same_setting(t->row_setting[q], t->row_setting[r]) &&
                      scaling_at(t, p, t->count_column)->value == scaling_at(t, q, t->count_column)->value;
    *a = *b = -1;
    for (int c = 0; repeats && *a < 0 && c < t->columns; c++)
        if (t->column[c].kind == SCALING_OTHER && parts_into_series(t, cells, r, c, -1))
            *a = c;
    for (int c = 0; repeats && *a < 0 && t->rows <= 200 && c < t->columns; c++)
        for (int d = c + 1; *a < 0 && d < t->columns; d++)
            if (t->column[c].kind == SCALING_OTHER && t->column[d].kind == SCALING_OTHER &&
                parts_into_series(t, cells, r, c, d))
                *a = c, *b = d;
    return repeats;
}

static bool number_series(const struct scaling_table *t, char **cells, int *series, bool *parted)
{
    bool several = false, repeats = false;
    int a = -1, b = -1;   /* the partition of the setting of the row before, while it lasts */
    for (int r = 0; r < t->rows; r++) {
        int last = -1, first = r;   /* the setting's row before r, its first row */
        for (int q = r - 1; q >= 0; q--)
            if (same_setting(t->row_setting[q], t->row_setting[r]))
                last = last < 0 ? q : last, first = q;
        if (r == first || !same_setting(t->row_setting[r - 1], t->row_setting[r]))   /* worked out once a setting */
            repeats = setting_partition(t, cells, first, &a, &b);
        series[r] = 0;
        if (!repeats)
            continue;
        several = true;
        parted[r] = a >= 0;
        if (a >= 0) {   /* the series of r's values in a (and b): the index of the first row with them */
            for (int q = first; q <= r; q++)
                if (same_setting(t->row_setting[q], t->row_setting[r]) && cells_agree(t, cells, q, r, a, b)) {
                    series[r] = q;
                    break;
                }
            continue;
        }
        series[r] = last < 0 ? r : series[last];   /* in the order the rows come */
        for (int q = first; q < r; q++)
            if (series[q] == series[r] && same_setting(t->row_setting[q], t->row_setting[r]) &&
                scaling_at(t, q, t->count_column)->value == scaling_at(t, r, t->count_column)->value) {
                series[r] = r;
                break;
            }
    }
    for (int r = 0; r < t->rows; r++) {   /* series in the rows' order, one of a single row: no series */
        int size = 0;
        for (int q = 0; q < t->rows; q++)
            size += same_setting(t->row_setting[q], t->row_setting[r]) && (series[q] == series[r] || parted[q]);
        for (int q = 0; q < t->rows && size < 2; q++)
            if (same_setting(t->row_setting[q], t->row_setting[r]))
                series[q] = -1;   /* the setting's rows one table, as written */
    }
    return several;
}

/* Whether column c tells row r's setting's series apart: the same in every row of a series, not
 * the same in all of them. */
static bool tells_apart(const struct scaling_table *t, char **cells, const int *series, int r, int c)
{
    bool differs = false;
    for (int p = 0; p < t->rows; p++)
        for (int q = p + 1; q < t->rows; q++) {
            if (!same_setting(t->row_setting[p], t->row_setting[r]) || !same_setting(t->row_setting[q], t->row_setting[r]))
                continue;
            const char *a = cells[p * t->columns + c], *b = cells[q * t->columns + c];
            if (series[p] == series[q] && strcmp(a, b) != 0)
                return false;
            differs = differs || strcmp(a, b) != 0;
        }
    return differs;
}

/* Row r's series label, the columns that tell its setting's series apart with their text
 * ("Sequence length 512"), or the line its series begins on. */
static void series_label(const struct scaling_table *t, char **cells, const int *series, int r, char *label,
                         size_t size)
{
    size_t used = 0;
    label[0] = '\0';
    for (int c = 0, told = 0; c < t->columns && used + 1 < size && told < 2; c++)   /* two say enough */
        if (t->column[c].kind == SCALING_OTHER && tells_apart(t, cells, series, r, c) && ++told)
            used += (size_t)snprintf(label + used, size - used, "%s%.60s %.40s", used ? ", " : "", t->column[c].name,
                                     cells[r * t->columns + c]);
    for (int q = 0; q < t->rows && !label[0]; q++)
        if (same_setting(t->row_setting[q], t->row_setting[r]) && series[q] == series[r])
            snprintf(label, size, "rows from line %d", t->row_line[q]);
}

int scaling_settings_by_series(struct scaling_table *t)
{
    int *series = calloc((size_t)t->rows + 1, sizeof *series);
    bool *parted = calloc((size_t)t->rows + 1, sizeof *parted);   /* r's setting parted by a column's values */
    char **keys = calloc((size_t)t->rows + 1, sizeof *keys), **cells = other_cells(t);
    bool several = series && parted && keys && cells && number_series(t, cells, series, parted);
    int rc = series && parted && keys && cells ? 0 : -1;
    for (int r = 0; rc == 0 && r < t->rows; r++) {
        bool split = false;   /* r's setting has several series */
        for (int q = 0; q < t->rows && several && !split; q++)
            split = same_setting(t->row_setting[q], t->row_setting[r]) && series[q] != series[r];
        char label[256] = "";
        if (split)
            series_label(t, cells, series, r, label, sizeof label);
        bool one_setting = true;   /* every row's: the series' label says what differs */
        for (int q = 0; q < t->rows && one_setting && label[0]; q++)
            one_setting = same_setting(t->row_setting[q], t->row_setting[r]);
        size_t len = one_setting && label[0] ? 0 : scaling_key_setting_length(t->row_setting[r]), need = len + strlen(label) + 3;
        if (!(keys[r] = malloc(need)))
            rc = -1;
        else
            snprintf(keys[r], need, "%.*s%s%s", (int)len, t->row_setting[r], len && label[0] ? ", " : "", label);
    }
    for (int r = 0; r < t->rows && rc == 0; r++)
        free(t->row_setting[r]), t->row_setting[r] = keys[r], keys[r] = NULL;
    for (int r = 0; keys && r < t->rows; r++)
        free(keys[r]);
    for (int k = 0; cells && k < t->rows * t->columns; k++)
        free(cells[k]);
    free(series), free(parted), free(keys), free(cells);
    return rc;
}
