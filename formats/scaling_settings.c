/* scaling_settings.c - a table's rows split by the settings they name (see scaling_settings.h). */
#include "formats/scaling_settings.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool scaling_names_setting(const char *header)
{
    static const char *const not_settings[] = {"date", "day", "notes", "note", "comment", "comments", "remark",
                                               "remarks", "link", "source", "reference", "commit", "log", "url",
                                               "author", "submitted", "when", "batch", "size", "memory"};
    char word[64];
    for (const char *c = header; *c;) {   /* each word of the header, whole */
        size_t n = 0;
        while (*c && !isalnum((unsigned char)*c))
            c++;
        while (isalnum((unsigned char)*c) && n + 1 < sizeof word)
            word[n++] = (char)tolower((unsigned char)*c++);
        word[n] = '\0';
        for (size_t i = 0; n > 0 && i < sizeof not_settings / sizeof not_settings[0]; i++)
            if (strcmp(word, not_settings[i]) == 0)
                return false;
    }
    return true;
}

/* Whether a cell is words ("Puhti", "A100-80GB") or code ("`2023.2-gpu`", "`gromacs-stmv.sh`"), not
 * a number, a count or nothing. */
static bool is_words(const char *cell)
{
    const char *c = cell + strspn(cell, " \t*_");
    return *c == '`' || isalpha((unsigned char)*c);
}

void scaling_row_setting(struct scaling_table *t, char **cells, int n, char *key, size_t size)
{
    size_t used = 0;
    key[0] = '\0';
    for (int c = 0; c < n && c < t->columns && used + 1 < size; c++) {
        if (!t->column[c].setting || !is_words(cells[c]))
            continue;
        used += (size_t)snprintf(key + used, size - used, "%s%s", used ? ", " : "", cells[c]);
        t->column[c].worded = true;
    }
    if (used >= size)
        key[size - 1] = '\0';
}

bool scaling_settings_differ(const struct scaling_table *t)
{
    for (int r = 1; r < t->rows; r++)
        if (strcmp(t->row_setting[r], t->row_setting[0]) != 0)
            return true;
    return false;
}

/* A table of t's rows naming setting, titled by it; NULL-celled (rows 0) out of memory. */
static struct scaling_table part_of(const struct scaling_table *t, const char *setting)
{
    struct scaling_table part = *t;
    part.rows = 0, part.one_setting = true;
    part.cell = malloc((size_t)t->rows * t->columns * sizeof *part.cell);
    part.row_line = malloc((size_t)t->rows * sizeof *part.row_line);
    part.row_setting = calloc((size_t)t->rows, sizeof *part.row_setting);
    if (!part.cell || !part.row_line || !part.row_setting) {
        free(part.cell), free(part.row_line), free(part.row_setting);
        return (struct scaling_table){0};
    }
    snprintf(part.title, sizeof part.title, "%.160s%s(%.80s)", t->title, t->title[0] ? " " : "", setting);
    for (int r = 0; r < t->rows; r++) {
        if (strcmp(t->row_setting[r], setting) != 0)
            continue;
        memcpy(&part.cell[part.rows * t->columns], &t->cell[r * t->columns], (size_t)t->columns * sizeof *part.cell);
        part.row_line[part.rows] = t->row_line[r];
        part.row_setting[part.rows++] = strdup(setting);
    }
    return part;
}

static void part_free(struct scaling_table *part)
{
    for (int r = 0; r < part->rows; r++)
        free(part->row_setting[r]);
    free(part->cell), free(part->row_line), free(part->row_setting);
}

/* How many different job sizes a table's rows have. */
static int job_sizes(const struct scaling_table *t)
{
    int sizes = 0;
    for (int r = 0; r < t->rows; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = scaling_at(t, q, t->count_column)->value == scaling_at(t, r, t->count_column)->value;
        sizes += !seen;
    }
    return sizes;
}

int scaling_split_settings(const struct scaling_table *t, struct scaling_set *parts, int *left_out)
{
    for (int r = 0; r < t->rows; r++) {
        bool first = true;
        for (int q = 0; q < r && first; q++)
            first = strcmp(t->row_setting[q], t->row_setting[r]) != 0;
        if (!first)
            continue;
        struct scaling_table part = part_of(t, t->row_setting[r]);
        if (!part.cell)
            return -1;
        if (job_sizes(&part) < 2) {
            (*left_out)++;
            part_free(&part);
            continue;
        }
        struct scaling_table *grown = realloc(parts->tables, (size_t)(parts->count + 1) * sizeof *grown);
        if (!grown)
            return part_free(&part), -1;
        parts->tables = grown;
        parts->tables[parts->count++] = part;
    }
    return 0;
}
