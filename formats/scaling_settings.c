/* scaling_settings.c - a table's rows split by the settings they name (see scaling_settings.h). */
#include "formats/scaling_settings.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether one of the header's words, whole and in any case, is among words. */
static bool header_has(const char *header, const char *const *words, size_t count)
{
    char word[64];
    for (const char *c = header; *c;) {
        size_t n = 0;
        while (*c && !isalnum((unsigned char)*c))
            c++;
        while (isalnum((unsigned char)*c) && n + 1 < sizeof word)
            word[n++] = (char)tolower((unsigned char)*c++);
        word[n] = '\0';
        for (size_t i = 0; n > 0 && i < count; i++)
            if (strcmp(word, words[i]) == 0)
                return true;
    }
    return false;
}

static const char *const dates[] = {"date", "day", "when", "submitted"};

bool scaling_names_date(const char *header)
{
    return header_has(header, dates, sizeof dates / sizeof dates[0]);
}

bool scaling_names_setting(const char *header)
{
    static const char *const not_settings[] = {"notes", "note", "comment", "comments", "remark", "remarks", "link",
                                               "source", "reference", "commit", "log", "url", "author", "batch",
                                               "size", "memory"};
    return !scaling_names_date(header) && !header_has(header, not_settings, sizeof not_settings / sizeof not_settings[0]);
}

/* Whether a cell is words ("Puhti", "A100-80GB") or code ("`2023.2-gpu`", "`gromacs-stmv.sh`"), not
 * a number, a count or nothing. */
static bool is_words(const char *cell)
{
    static const char *const missing[] = {"na", "n/a", "n.a.", "nan", "oom", "tbd", "none", "-", "--", "x"};
    const char *c = cell + strspn(cell, " \t*_");
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)   /* a value not there, not a setting */
        if (strncasecmp(c, missing[i], strlen(missing[i])) == 0 && !isalnum((unsigned char)c[strlen(missing[i])]))
            return false;
    return *c == '`' || isalpha((unsigned char)*c);
}

/* What a job-size cell says besides the count, where it names a machine ("8x A100-40GB":
 * "A100-40GB"; "1024 V100 GPUs": "V100 GPUs"), or NULL ("8", "2 GPUs", "4 nodes"). */
static const char *count_words(const char *cell)
{
    static const char *const nouns[] = {"gpus", "gpu", "nodes", "node", "workers", "worker", "ranks", "rank",
                                        "devices", "device", "accelerators", "cores", "processes", "tasks"};
    const char *c = cell + strspn(cell, " *");
    c += strspn(c, "0123456789.,");
    c += strspn(c, " ");
    if ((*c == 'x' || *c == 'X' || *c == '*') && !isalpha((unsigned char)c[1]))
        c += 1 + strspn(c + 1, " ");
    if (!isalpha((unsigned char)*c))
        return NULL;
    for (size_t i = 0; i < sizeof nouns / sizeof nouns[0]; i++) {
        size_t len = strlen(nouns[i]);
        if (strncasecmp(c, nouns[i], len) == 0 && !isalnum((unsigned char)c[len + strspn(c + len, " *")]))
            return NULL;
    }
    return c;
}

/* Whether a setting's cell says only yes or no ("yes", "off", "true"): it names the setting with
 * its column's name ("Kokkos yes"), alone it says nothing. */
static bool yes_or_no(const char *cell)
{
    static const char *const words[] = {"yes", "no", "true", "false", "on", "off", "enabled", "disabled", "y", "n"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(cell, words[i]) == 0)
            return true;
    return false;
}

void scaling_row_setting(struct scaling_table *t, char **cells, int n, char *key, size_t size)
{
    size_t used = 0;
    key[0] = '\0';
    const char *machine = t->count_column < n ? count_words(cells[t->count_column]) : NULL;
    if (machine)   /* the job size's own words: two machines at one size are two settings */
        used += (size_t)snprintf(key, size, "%s", machine);
    for (int c = 0; c < n && c < t->columns && used + 1 < size; c++) {
        if (!t->column[c].setting || !is_words(cells[c]))
            continue;
        used += (size_t)snprintf(key + used, size - used, "%s%s%s%s", used ? ", " : "",
                                 yes_or_no(cells[c]) ? t->column[c].name : "", yes_or_no(cells[c]) ? " " : "", cells[c]);
        t->column[c].worded = true;
    }
    for (int c = 0; c < n && c < t->columns && used + 1 < size; c++)
        if (t->column[c].dated)
            used += (size_t)snprintf(key + used, size - used, "\x1f%s", cells[c]);
    used += used + 1 < size ? (size_t)snprintf(key + used, size - used, "\x1e") : 0;
    for (int c = 0; c < n && c < t->columns && used + 1 < size; c++)   /* the rest, for scaling_series.c */
        if (t->column[c].kind == SCALING_OTHER && !t->column[c].dated && !(t->column[c].setting && is_words(cells[c])))
            used += (size_t)snprintf(key + used, size - used, "%d=%s\x1d", c, cells[c]);
    if (used >= size)
        key[size - 1] = '\0';
}

size_t scaling_key_setting_length(const char *key)
{
    return strcspn(key, "\x1f\x1e");
}

void scaling_key_cell(const char *key, int c, char *out, size_t size)
{
    char tag[16];
    size_t tag_len = (size_t)snprintf(tag, sizeof tag, "%d=", c);
    out[0] = '\0';
    const char *p = strchr(key, '\x1e');
    for (p = p ? p + 1 : NULL; p && *p; p = strchr(p, '\x1d') ? strchr(p, '\x1d') + 1 : NULL)
        if (strncmp(p, tag, tag_len) == 0) {
            snprintf(out, size, "%.*s", (int)strcspn(p + tag_len, "\x1d"), p + tag_len);
            return;
        }
}

/* Whether rows a and b name the same setting (their keys before the date). */
static bool same_setting(const struct scaling_table *t, int a, int b)
{
    const char *ka = t->row_setting[a], *kb = t->row_setting[b];
    size_t len = scaling_key_setting_length(ka);
    return scaling_key_setting_length(kb) == len && strncmp(ka, kb, len) == 0;
}

/* Whether two row keys' dates (after the setting, before the other cells) are the same. */
static bool same_day(const char *a, const char *b)
{
    a += scaling_key_setting_length(a), b += scaling_key_setting_length(b);
    size_t la = strcspn(a, "\x1e"), lb = strcspn(b, "\x1e");
    return la == lb && strncmp(a, b, la) == 0;
}

/* Row r's key: its setting alone, or where dated its setting and its day, the date cells joined
 * by ", " ("mahti, 2023-05-23"). 0, or -1 out of memory. */
static int key_of_row(struct scaling_table *t, int r, bool dated)
{
    char *key = t->row_setting[r], *rest = key + strcspn(key, "\x1e");
    size_t len = scaling_key_setting_length(key);
    if (!dated || key[len] != '\x1f') {   /* the setting, and the other cells after it */
        memmove(key + len, rest, strlen(rest) + 1);
        return 0;
    }
    char *joined = malloc(2 * strlen(key) + 1), *out = joined;
    if (!joined)
        return -1;
    for (const char *c = key; c < rest; c++)
        if (*c != '\x1f')
            *out++ = *c;
        else if (out > joined)
            *out++ = ',', *out++ = ' ';
    strcpy(out, rest);
    free(key);
    t->row_setting[r] = joined;
    return 0;
}

int scaling_settings_by_date(struct scaling_table *t)
{
    int *first = malloc(((size_t)t->rows + 1) * sizeof *first);   /* the first row of each row's setting */
    bool *again = calloc((size_t)t->rows + 1, sizeof *again);     /* its setting ran a size again another day */
    int rc = first && again ? 0 : -1;
    for (int r = 0; rc == 0 && r < t->rows; r++) {
        first[r] = r;
        for (int q = 0; q < r && first[r] == r; q++)
            if (same_setting(t, q, r))
                first[r] = first[q];
    }
    for (int a = 0; rc == 0 && a < t->rows; a++)
        for (int b = a + 1; b < t->rows; b++)
            if (first[a] == first[b] && !same_day(t->row_setting[a], t->row_setting[b]) &&
                scaling_at(t, a, t->count_column)->value == scaling_at(t, b, t->count_column)->value)
                again[first[a]] = true;
    for (int r = 0; rc == 0 && r < t->rows; r++)
        rc = key_of_row(t, r, again[first[r]]);
    free(first), free(again);
    return rc;
}

/* Whether two rows' settings share a word cell (their keys' parts: "H100 node, TF32" and "A100
 * node, TF32" share TF32). */
static bool share_a_cell(const char *a, const char *b)
{
    size_t la = scaling_key_setting_length(a), lb = scaling_key_setting_length(b);
    for (const char *p = a; p < a + la; p += strcspn(p, ","), p += strspn(p, ", ")) {
        size_t lp = strcspn(p, ",");
        lp = p + lp > a + la ? (size_t)(a + la - p) : lp;
        for (const char *q = b; q < b + lb; q += strcspn(q, ","), q += strspn(q, ", ")) {
            size_t lq = strcspn(q, ",");
            lq = q + lq > b + lb ? (size_t)(b + lb - q) : lq;
            if (lp == lq && strncmp(p, q, lp) == 0)
                return true;
        }
    }
    return false;
}

/* Whether the rows' words are labels of the runs of one scaling ("exp045" at 1 GPU, "exp046" at 4),
 * not settings each run at one size: no two rows share a word cell or a job size. (Machines of
 * which one ran twice, "H100 node" at 4 and 8 GPUs, are settings.) */
static bool rows_are_labelled(const struct scaling_table *t)
{
    for (int a = 0; a < t->rows; a++)
        for (int b = a + 1; b < t->rows; b++)
            if (share_a_cell(t->row_setting[a], t->row_setting[b]) ||
                scaling_at(t, a, t->count_column)->value == scaling_at(t, b, t->count_column)->value)
                return false;
    return t->rows >= 2;
}

bool scaling_settings_differ(const struct scaling_table *t)
{
    for (int r = 1; r < t->rows; r++)
        if (strcmp(t->row_setting[r], t->row_setting[0]) != 0)
            return !rows_are_labelled(t);
    return false;
}

bool scaling_row_prints_one(const struct scaling_table *t, int r)
{
    for (int c = 0; c < t->columns; c++) {
        enum scaling_kind kind = t->column[c].kind;
        if ((kind == SCALING_OVER_COUNTS || kind == SCALING_ACROSS || kind == SCALING_EFFICIENCY) &&
            scaling_at(t, r, c)->value == 1)
            return true;
    }
    return false;
}

/* A table of t's rows naming setting, titled by it; NULL-celled (rows 0) out of memory. */
static struct scaling_table part_of(const struct scaling_table *t, const char *setting)
{
    struct scaling_table part = *t;
    part.rows = 0, part.baselines = 0, part.one_setting = true;
    part.cell = malloc((size_t)t->rows * t->columns * sizeof *part.cell);
    part.row_line = malloc((size_t)t->rows * sizeof *part.row_line);
    part.row_setting = calloc((size_t)t->rows, sizeof *part.row_setting);
    if (!part.cell || !part.row_line || !part.row_setting) {
        scaling_table_free(&part);
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
    double smallest = INFINITY;
    for (int r = 0; r < part.rows; r++)
        smallest = fmin(smallest, scaling_at(&part, r, t->count_column)->value);
    for (int r = 0; r < t->rows; r++) {   /* other settings' runs at that size, and reference runs below it */
        double count = scaling_at(t, r, t->count_column)->value;
        if (strcmp(t->row_setting[r], setting) == 0 || !(count == smallest || (count < smallest && scaling_row_prints_one(t, r))))
            continue;
        int k = part.rows + part.baselines++;
        memcpy(&part.cell[k * t->columns], &t->cell[r * t->columns], (size_t)t->columns * sizeof *part.cell);
        part.row_line[k] = t->row_line[r];
        part.row_setting[k] = strdup(t->row_setting[r]);
    }
    return part;
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
            scaling_table_free(&part);
            continue;
        }
        if (scaling_set_add(parts, &part) < 0)
            return scaling_table_free(&part), -1;
    }
    return 0;
}
