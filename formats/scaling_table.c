/* scaling_table.c - published scaling tables read (see scaling_table.h): Markdown tables under
 * their headings, each column named for what it holds (scaling_headers.c), each ratio column tied
 * to the columns it was worked out from (scaling_ties.c). */
#include "formats/scaling_table.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/scaling_cells.h"
#include "formats/scaling_csv.h"
#include "formats/scaling_headers.h"
#include "formats/scaling_series.h"
#include "formats/scaling_settings.h"
#include "formats/scaling_ties.h"
#include "formats/scaling_transposed.h"
#include "formats/table.h"
#include "formats/table_columns.h"

/* ---------- tables in a file ---------- */

/* A Markdown separator row: "|---|:--:|". */
static bool is_separator(const char *line)
{
    bool dash = false;
    for (const char *c = line; *c && *c != '\n'; c++) {
        if (*c == '-')
            dash = true;
        else if (!strchr("|: \t\r", *c))
            return false;
    }
    return dash;
}

static bool starts_row(const char *line)
{
    return line[strspn(line, " \t")] == '|';
}

/* A table whose ratios name no throughput ("Number of mels used with mixed precision" beside
 * "Speed-up with mixed precision", the figures being per second as the text above says): the
 * other columns but batch sizes and settings are its measures. Whether there was one. */
static bool promote_measures(struct scaling_table *t, char words[][256], unsigned long numbers)
{
    bool ratios = false, promoted = false;
    for (int c = 0; c < t->columns; c++)
        ratios = ratios || t->column[c].kind == SCALING_OVER_COUNTS || t->column[c].kind == SCALING_ACROSS;
    for (int c = 0; c < t->columns && ratios; c++)   /* a column of words ("seq", "mpi") measures nothing */
        if (t->column[c].kind == SCALING_OTHER && (numbers >> c & 1) && !scaling_has_word(words[c], "batch") &&
            !scaling_has_word(words[c], "size") && !scaling_has_word(words[c], "accumulation"))
            t->column[c].kind = SCALING_RATE, promoted = true;
    return promoted;
}

/* What a table's first row says of its columns by their cells' own text: bit c of times for a
 * time with its unit ("299.5 ms", "2h 18min", "40 s") or a clock ("1:02:03"); count, the first
 * column holding a job size in words ("1 GPU", "2 GPUs": a "Configuration" column), or -1, and
 * what it counts. Nothing where there is no such row (first_row_read(NULL)). */
struct first_row {
    unsigned long times, rates, numbers;   /* numbers: bit c for a cell that holds a number */
    int count;
    const char *noun;
};

static struct first_row first_row_read(const char *row)
{
    char *copy = row ? strdup(row) : NULL, *cells[SCALING_MAX_COLUMNS + 1];
    int n = copy ? table_cells(copy, cells, SCALING_MAX_COLUMNS + 1) : 0;
    struct first_row first = {0, 0, 0, -1, NULL};
    for (int c = 0; c < n && c < SCALING_MAX_COLUMNS; c++) {
        if (scaling_cell_is_time(cells[c]))
            first.times |= 1ul << c;
        if (scaling_cell_is_rate(cells[c]))
            first.rates |= 1ul << c;
        if (!isnan(scaling_read_cell(cells[c], SCALING_RATE, 1).value))
            first.numbers |= 1ul << c;
        if (first.count < 0 && scaling_cell_is_count(cells[c], &first.noun))
            first.count = c;
    }
    free(copy);
    return first;
}

/* A table whose columns name no measure ("| GPUs | v22.01 | v23.04 |": releases, settings) under a
 * heading that does ("Training throughput (img/s) by release", "Time per epoch"): its columns but
 * batch sizes are of the heading's kind. Whether there was one. */
static bool measures_from_heading(struct scaling_table *t, char words[][256], const char *heading,
                                  unsigned long numbers)
{
    char heading_words[256];
    scaling_header_words(heading, heading_words, sizeof heading_words);
    enum scaling_kind kind = scaling_header_kind(heading, heading_words);
    bool promoted = false;
    static const char *const not_measures[] = {"batch", "size", "accumulation", "gpus", "gpu", "nodes", "node",
                                               "per", "ranks", "workers", "precision"};
    for (int c = 0; c < t->columns && (kind == SCALING_RATE || kind == SCALING_TIME); c++) {
        bool named = t->column[c].kind != SCALING_OTHER || t->column[c].clock == 0 ||   /* or a resource's hours, */
                     !(numbers >> c & 1);                                                /* or words ("AMP") */
        for (size_t w = 0; w < sizeof not_measures / sizeof not_measures[0] && !named; w++)
            named = scaling_has_word(words[c], not_measures[w]);
        if (!named)
            t->column[c].kind = kind, t->column[c].from_heading = promoted = true;
    }
    return promoted;
}

/* The header's columns into t, a time those whose first cells carry a time's unit whatever their
 * header says, the job sizes those whose cells say so ("2 GPUs") where no header does; whether the
 * table is one of ours (a count column, a rate or time column, not the reference form of table.h). */
static bool read_header(char *line, struct scaling_table *t, struct first_row first, const char *heading)
{
    char *cells[SCALING_MAX_COLUMNS + 1], words[SCALING_MAX_COLUMNS][256];
    int n = table_cells(line, cells, SCALING_MAX_COLUMNS + 1);
    struct table_layout layout;
    if (n < 2 || n > SCALING_MAX_COLUMNS || table_header(cells, n, &layout))
        return false;
    t->columns = n, t->count_column = -1;
    bool measured = false;
    for (int c = 0; c < n; c++) {
        struct scaling_column *col = &t->column[c];
        snprintf(col->name, sizeof col->name, "%s", cells[c]);
        scaling_header_words(cells[c], words[c], sizeof words[c]);
        col->kind = scaling_header_kind(cells[c], words[c]);
        col->clock = scaling_header_clock(cells[c]);
        if (col->kind == SCALING_OTHER && (first.times >> c & 1))
            col->kind = SCALING_TIME;
        else if (col->kind == SCALING_OTHER && (first.rates >> c & 1))
            col->kind = SCALING_RATE;   /* "| TF32 |" over "1078 img/s" */
        col->per_device = col->kind == SCALING_RATE && scaling_header_per_device(cells[c]);
        col->header_seconds = scaling_header_seconds(cells[c]);
        if (col->kind == SCALING_TIME && col->clock == 0)
            col->kind = SCALING_OTHER;   /* a time's name or cells over a resource's hours */
        if (col->kind == SCALING_COUNT &&
            (t->count_column < 0 || scaling_count_rank(col->name) > scaling_count_rank(t->column[t->count_column].name))) {
            if (t->count_column >= 0)
                t->column[t->count_column].kind = SCALING_OTHER;
            t->count_column = c;
        } else if (col->kind == SCALING_COUNT)
            col->kind = SCALING_OTHER;
        measured = measured || col->kind == SCALING_RATE || col->kind == SCALING_TIME;
    }
    if (t->count_column >= 0)
        snprintf(t->count_noun, sizeof t->count_noun, "%s", scaling_header_noun(t->column[t->count_column].name));
    else if (first.count >= 0 && t->column[first.count].kind == SCALING_OTHER) {
        t->count_column = first.count, t->column[first.count].kind = SCALING_COUNT, t->count_in_cells = true;
        snprintf(t->count_noun, sizeof t->count_noun, "%s", first.noun);
    }
    if (t->count_column >= 0 && !measured)
        measured = promote_measures(t, words, first.numbers);
    if (t->count_column >= 0 && !measured)
        measured = measures_from_heading(t, words, heading, first.numbers);
    for (int c = 0; c < n; c++) {
        t->column[c].setting = t->column[c].kind == SCALING_OTHER && scaling_names_setting(t->column[c].name);
        t->column[c].dated = t->column[c].kind == SCALING_OTHER && scaling_names_date(t->column[c].name);
    }
    return t->count_column >= 0 && measured;
}

/* One data row into t; false for a row whose count is not a whole number from 1 or a part of one
 * device ("0.5": a GPU's half, an MI250X's die; never 0, a CPU-only run). */
static bool read_row(char *line, int number, struct scaling_table *t)
{
    char *cells[SCALING_MAX_COLUMNS + 1];
    int n = table_cells(line, cells, SCALING_MAX_COLUMNS + 1);
    struct scaling_cell count = n > t->count_column ? scaling_read_cell(cells[t->count_column], SCALING_COUNT, 1)
                                                    : (struct scaling_cell){NAN, 0, 0, 0};
    if (n > t->count_column && isnan(count.value) && scaling_cell_is_serial(cells[t->count_column]))
        count = (struct scaling_cell){1, 1, 0, 0};   /* "Sequential" beside "1 worker": a run on one */
    bool part = count.value > 0 && count.value < 1 && count.high == 0;
    if (!part && (!(count.value >= 1) || count.value != floor(count.value) || count.unit != 1))
        return false;
    struct scaling_cell *grown = realloc(t->cell, (size_t)(t->rows + 1) * t->columns * sizeof *grown);
    int *lines = realloc(t->row_line, (size_t)(t->rows + 1) * sizeof *lines);
    char **settings = realloc(t->row_setting, (size_t)(t->rows + 1) * sizeof *settings), key[1024];
    if (grown)
        t->cell = grown;
    if (lines)
        t->row_line = lines;
    if (settings)
        t->row_setting = settings;
    scaling_row_setting(t, cells, n, key, sizeof key);
    if (!grown || !lines || !settings || !(t->row_setting[t->rows] = strdup(key)))
        return false;
    for (int c = 0; c < t->columns; c++) {
        struct scaling_cell *cell = &t->cell[t->rows * t->columns + c];
        const struct scaling_column *col = &t->column[c];
        *cell = c < n && col->kind != SCALING_OTHER ? scaling_read_measure(cells[c], col->kind, col->clock, col->header_seconds)
                                                    : (struct scaling_cell){NAN, 0, 0, 0};
        bool percent_header = t->column[c].kind == SCALING_EFFICIENCY && strchr(t->column[c].name, '%');
        if (c < n && percent_header && !strchr(cells[c], '%'))   /* (a short row: no cell to read) */
            cell->value /= 100, cell->unit /= 100;   /* "Efficiency (%)" over plain numbers */
    }
    t->cell[t->rows * t->columns + t->count_column] = count;   /* as read above ("Sequential": 1) */
    t->row_line[t->rows++] = number;
    return true;
}

/* A heading line's text ("##### Training performance: NVIDIA DGX A100"), or NULL. */
static const char *heading_of(char *line)
{
    if (line[0] != '#')
        return NULL;
    char *text = line + strspn(line, "#");
    text += strspn(text, " \t");
    text[strcspn(text, "\r\n")] = '\0';
    return text;
}

int scaling_set_add(struct scaling_set *set, const struct scaling_table *t)
{
    struct scaling_table *grown = realloc(set->tables, (size_t)(set->count + 1) * sizeof *grown);
    if (!grown)
        return -1;
    set->tables = grown;
    set->tables[set->count++] = *t;
    return 0;
}

void scaling_table_free(struct scaling_table *t)
{
    for (int r = 0; r < t->rows + t->baselines && t->row_setting; r++)
        free(t->row_setting[r]);
    free(t->cell), free(t->row_line), free(t->row_setting);
}

/* A table read into set, its columns tied; or, where its rows name several settings, a table a
 * setting (those at two job sizes or more; none: why in set->why_not). t is set's or freed. 0, or
 * -1 out of memory. */
static int add_table_or_its_settings(struct scaling_set *set, struct scaling_table *t)
{
    if (t->rows == 0 || !scaling_settings_differ(t)) {
        scaling_tie_columns(t);
        int rc = t->rows > 0 ? scaling_set_add(set, t) : 0;
        if (t->rows == 0 || rc < 0)
            scaling_table_free(t);
        return rc;
    }
    struct scaling_set parts = {0};
    int left_out = 0, rc = scaling_split_settings(t, &parts, &left_out);
    for (int p = 0; p < parts.count; p++) {
        scaling_tie_columns(&parts.tables[p]);
        if (rc == 0 && scaling_set_add(set, &parts.tables[p]) == 0)
            continue;
        rc = -1, scaling_table_free(&parts.tables[p]);
    }
    if (rc == 0 && parts.count == 0) {
        char names[160] = "";
        for (int c = 0; c < t->columns; c++)
            if (t->column[c].worded && strlen(names) + strlen(t->column[c].name) + 3 < sizeof names)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "",
                         t->column[c].name);
        if (!names[0])   /* the job sizes' own words ("8x A100-40GB", "8x A100-80GB") */
            snprintf(names, sizeof names, "the words of \"%.100s\"", t->column[t->count_column].name);
        snprintf(set->why_not, sizeof set->why_not, "its rows are of several settings (%s differ), none at two job "
                 "sizes: no scaling to read", names);
        set->why_not_line = t->line;
    }
    free(parts.tables);
    scaling_table_free(t);
    return rc;
}

int scaling_parse_file(const char *path, struct scaling_set *set, struct dt_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return dt_fail(err, "%s: %s", path, strerror(errno));
    char *line = NULL, *next = NULL, title[256] = "", caption[256] = "", csv = scaling_csv_separator(path, f);
    size_t size = 0, next_size = 0;
    int number = 0, rc = 0;
    ssize_t got = scaling_next_line(&line, &size, f, csv);
    while (got > 0 && rc == 0) {
        number++;
        const char *heading = heading_of(line);
        if (heading)
            snprintf(title, sizeof title, "%s", heading), caption[0] = '\0';
        else if (!starts_row(line) && line[strspn(line, " \t\r\n")])   /* a line of text: a caption */
            snprintf(caption, sizeof caption, "%.*s", (int)strcspn(line, "\r\n"), line);
        ssize_t got_next = scaling_next_line(&next, &next_size, f, csv);
        struct scaling_table t = {.line = number};
        struct transposed turned;
        if (csv ? number == 1 : starts_row(line) && got_next > 0 && is_separator(next)) {
            if (!csv)   /* a CSV file's first line is its header, with no separator under it */
                number++, got_next = scaling_next_line(&next, &next_size, f, csv);   /* the first row: its cells say their units */
            struct first_row first = first_row_read(got_next > 0 && starts_row(next) ? next : NULL);
            if (!csv && got_next > 0 && starts_row(next) && !first.numbers && scaling_is_sub_header(next)) {
                if (scaling_merge_header(line, next, &line, &size) < 0) {   /* the header's second row */
                    rc = -1;
                    break;
                }
                number++, got_next = scaling_next_line(&next, &next_size, f, csv);
                first = first_row_read(got_next > 0 && starts_row(next) ? next : NULL);
            }
            char *header = strdup(line);   /* read_header cuts line into its cells */
            if (read_header(line, &t, first, title)) {   /* else its rows are lines like any other */
                snprintf(t.title, sizeof t.title, "%s", title);
                for (; got_next > 0 && starts_row(next); got_next = scaling_next_line(&next, &next_size, f, csv))
                    read_row(next, ++number, &t);
                rc = scaling_settings_by_date(&t) < 0 || scaling_settings_by_series(&t) < 0
                         ? (scaling_table_free(&t), -1) : add_table_or_its_settings(set, &t);
            } else if (header && scaling_transposed_header(header, caption, title, t.line, &turned)) {
                for (; got_next > 0 && starts_row(next); got_next = scaling_next_line(&next, &next_size, f, csv))
                    rc = rc < 0 ? rc : scaling_transposed_row(&turned, next, ++number, set);
            }
            free(header);
            caption[0] = '\0';
        }
        char *swap = line;   /* the line read ahead is the next one */
        size_t swap_size = size;
        line = next, size = next_size, next = swap, next_size = swap_size, got = got_next;
    }
    bool failed = ferror(f);
    free(line), free(next);
    fclose(f);
    if (rc < 0)
        return dt_fail(err, "%s: out of memory", path);
    return failed ? dt_fail(err, "%s: read error: %s", path, strerror(errno)) : 0;
}

bool scaling_why_not_read(const char *path, char *why, size_t size)
{
    struct scaling_set parsed = {0};
    struct dt_err err;
    if (scaling_parse_file(path, &parsed, &err) == 0 && parsed.why_not[0]) {
        snprintf(why, size, "its table on line %d: %s", parsed.why_not_line, parsed.why_not);
        scaling_set_free(&parsed);
        return true;
    }
    scaling_set_free(&parsed);
    FILE *f = fopen(path, "r");
    char header[8192] = "", line[8192];
    int number = 0;
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {   /* a header row is the line before a separator */
        number++;
        if (!starts_row(header) || !is_separator(line)) {
            snprintf(header, sizeof header, "%s", line);
            continue;
        }
        char *cells[SCALING_MAX_COLUMNS + 1], words[256], ratios[160] = "";
        int n = table_cells(header, cells, SCALING_MAX_COLUMNS + 1), count = -1, measures = 0;
        for (int c = 0; c < n && c < SCALING_MAX_COLUMNS; c++) {
            scaling_header_words(cells[c], words, sizeof words);
            enum scaling_kind kind = scaling_header_kind(cells[c], words);
            count = count < 0 && kind == SCALING_COUNT ? c : count;
            measures += kind == SCALING_RATE || kind == SCALING_TIME;
            size_t used = strlen(ratios);
            if ((kind == SCALING_OVER_COUNTS || kind == SCALING_EFFICIENCY || kind == SCALING_ACROSS) && used < 100)
                snprintf(ratios + used, sizeof ratios - used, "%s\"%s\"", used ? ", " : "", cells[c]);
        }
        found = count >= 0 && measures == 0 && ratios[0];
        if (found)
            snprintf(why, size, "its table on line %d has the job sizes (\"%s\") and ratios (%s) but not the throughput "
                     "or time they were worked out from: nothing to check them against or to table", number - 1,
                     cells[count], ratios);
        header[0] = '\0';
    }
    if (f)
        fclose(f);
    return found;
}

void scaling_set_free(struct scaling_set *set)
{
    for (int i = 0; i < set->count; i++)
        scaling_table_free(&set->tables[i]);
    free(set->tables);
    memset(set, 0, sizeof *set);
}

int scaling_smallest_job(const struct scaling_table *t, int c)
{
    int best = -1;
    for (int r = 0; r < t->rows; r++)
        if ((c < 0 || (!isnan(scaling_at(t, r, c)->value) && scaling_at(t, r, c)->value > 0)) &&
            (best < 0 || scaling_at(t, r, t->count_column)->value < scaling_at(t, best, t->count_column)->value))
            best = r;
    return best;
}

void scaling_over_counts_cells(const struct scaling_table *t, int of, int r, int q, struct scaling_cell *num,
                               struct scaling_cell *den)
{
    bool time = t->column[of].kind == SCALING_TIME;
    int num_row = time ? q : r, den_row = time ? r : q;
    *num = *scaling_at(t, num_row, of), *den = *scaling_at(t, den_row, of);
    if (!t->column[of].per_device)
        return;
    double n = scaling_at(t, num_row, t->count_column)->value, d = scaling_at(t, den_row, t->count_column)->value;
    num->value *= n, num->unit *= n, num->low *= n, num->high *= n;
    den->value *= d, den->unit *= d, den->low *= d, den->high *= d;
}
