/* scaling_transposed.c - scaling tables with a column a job size (see scaling_transposed.h). */
#include "formats/scaling_transposed.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/scaling_cells.h"
#include "formats/scaling_headers.h"
#include "formats/table.h"

/* A column header's job size: "1*8" or "2x4" (nodes times GPUs: the GPUs), "8 GPUs", "2 nodes",
 * or a plain whole number where plain is allowed; 0 where it is none. What it counts into noun. */
static double size_of_header(const char *cell, bool plain, const char **noun)
{
    const char *c = cell + strspn(cell, " *");
    char *end;
    double a = strtod(c, &end);
    if (end == c || !(a > 0) || a != floor(a))
        return 0;
    const char *rest = end + strspn(end, " ");
    if ((*rest == '*' || *rest == 'x' || *rest == 'X') && isdigit((unsigned char)rest[1 + strspn(rest + 1, " ")])) {
        double b = strtod(rest + 1, &end);
        rest = end + strspn(end, " *");
        return b > 0 && b == floor(b) && *rest == '\0' ? (*noun = "GPUs", a * b) : 0;
    }
    if (scaling_cell_is_count(cell, noun))
        return a;
    return plain && (*rest == '\0' || *rest == '*') ? a : 0;
}

/* The kind a text names (a rate or a time), or SCALING_OTHER; its words into measure. */
static enum scaling_kind measure_of(const char *text, char *measure, size_t size)
{
    char words[256];
    scaling_header_words(text, words, sizeof words);
    enum scaling_kind kind = text[0] ? scaling_header_kind(text, words) : SCALING_OTHER;
    if (kind == SCALING_RATE || kind == SCALING_TIME)
        snprintf(measure, size, "%.120s", text);
    return kind == SCALING_RATE || kind == SCALING_TIME ? kind : SCALING_OTHER;
}

bool scaling_transposed_header(char *header, const char *caption, const char *heading, int line,
                               struct transposed *tt)
{
    char *cells[SCALING_MAX_COLUMNS + 2], corner[256];
    int n = table_cells(header, cells, SCALING_MAX_COLUMNS + 1);
    if (n < 3 || n > SCALING_MAX_COLUMNS)
        return false;
    memset(tt, 0, sizeof *tt);
    snprintf(corner, sizeof corner, "%s", cells[0]);
    char words[256];
    scaling_header_words(corner, words, sizeof words);
    const char *noun = "GPUs";
    bool plain = strstr(words, "gpu") || strstr(words, "node");   /* "model \ num_node * num_gpus" */
    for (int c = 1; c < n; c++) {
        tt->size[c - 1] = size_of_header(cells[c], plain, &noun);
        if (!(tt->size[c - 1] > 0))
            return false;
    }
    tt->sizes = n - 1, tt->line = line;
    snprintf(tt->noun, sizeof tt->noun, "%s", strstr(words, "gpu") ? "GPUs" : noun);
    tt->kind = measure_of(corner, tt->measure, sizeof tt->measure);
    if (tt->kind == SCALING_OTHER)
        tt->kind = measure_of(caption, tt->measure, sizeof tt->measure);
    if (tt->kind == SCALING_OTHER)
        tt->kind = measure_of(heading, tt->measure, sizeof tt->measure);
    snprintf(tt->title, sizeof tt->title, "%s", heading[0] ? heading : caption);
    tt->header_seconds = scaling_header_seconds(tt->measure);
    return tt->kind != SCALING_OTHER;
}

/* A two-column scaling table (the job sizes, the measure) of room rows, titled for label. */
static struct scaling_table table_for(const struct transposed *tt, const char *label, int rows)
{
    struct scaling_table t = {.line = tt->line, .columns = 2, .count_column = 0, .sizes_in_header = true};
    if (strcmp(tt->title, tt->measure) == 0 || !tt->title[0])   /* the caption said the measure: the row's label */
        snprintf(t.title, sizeof t.title, "%.200s", label);
    else
        snprintf(t.title, sizeof t.title, "%.160s (%.80s)", tt->title, label);
    snprintf(t.count_noun, sizeof t.count_noun, "%s", tt->noun);
    t.column[0] = (struct scaling_column){.kind = SCALING_COUNT, .of = -1, .to = -1, .clock = 1};
    snprintf(t.column[0].name, sizeof t.column[0].name, "%s", tt->noun);
    t.column[1] = (struct scaling_column){.kind = tt->kind, .of = -1, .to = -1, .clock = 1,
                                          .header_seconds = tt->header_seconds};
    snprintf(t.column[1].name, sizeof t.column[1].name, "%s", tt->measure);
    t.cell = calloc((size_t)rows * 2 + 1, sizeof *t.cell);
    t.row_line = calloc((size_t)rows + 1, sizeof *t.row_line);
    t.row_setting = calloc((size_t)rows + 1, sizeof *t.row_setting);
    return t;
}

int scaling_transposed_row(const struct transposed *tt, char *row, int line, struct scaling_set *set)
{
    char *cells[SCALING_MAX_COLUMNS + 2];
    int n = table_cells(row, cells, SCALING_MAX_COLUMNS + 1);
    if (n < 3)
        return 0;
    struct scaling_table t = table_for(tt, cells[0], tt->sizes);
    bool room = t.cell && t.row_line && t.row_setting;
    for (int c = 1; room && c < n && c <= tt->sizes; c++) {
        struct scaling_cell v = scaling_read_measure(cells[c], tt->kind, 1, t.column[1].header_seconds);
        if (isnan(v.value) || !(v.value > 0))
            continue;   /* "OOM", blank */
        t.cell[t.rows * 2] = (struct scaling_cell){tt->size[c - 1], 1, 0, 0};
        t.cell[t.rows * 2 + 1] = v;
        t.row_line[t.rows] = line;
        room = (t.row_setting[t.rows++] = strdup("")) != NULL;
    }
    int rc = !room ? -1 : t.rows < 2 ? 0 : scaling_set_add(set, &t);
    if (rc < 0 || t.rows < 2)   /* not the set's */
        scaling_table_free(&t);
    return rc;
}
