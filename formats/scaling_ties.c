/* scaling_ties.c - each ratio column of a published scaling table tied to the columns it was
 * worked out from (see scaling_ties.h): by the words its header shares with theirs, by which way
 * its printed ratios hold, and, for a plain one, by the measure they hold to. */
#include "formats/scaling_ties.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/scaling_cells.h"
#include "formats/scaling_headers.h"

/* How many of a's qualifier words b has. */
static int shared_words(const char *a, const char *b)
{
    char copy[256];
    int n = 0;
    snprintf(copy, sizeof copy, "%s", a);
    for (char *w = strtok(copy, " "); w; w = strtok(NULL, " "))
        n += scaling_has_word(b, w);
    return n;
}

/* The column of kind whose qualifiers share most with q, or -1 when none or a tie; the only one
 * when there is one. */
static int best_of_kind(const struct scaling_table *t, char quals[][96], const char *q, int except,
                        enum scaling_kind kind)
{
    int best = -1, best_score = 0, tied = 0, candidates = 0, only = -1;
    for (int c = 0; c < t->columns; c++) {
        if (t->column[c].kind != kind || c == except)
            continue;
        candidates++, only = c;
        int score = shared_words(q, quals[c]);
        if (score > best_score)
            best = c, best_score = score, tied = 0;
        else if (score == best_score && score > 0)
            tied++;
    }
    if (candidates == 1)
        return only;
    return tied ? -1 : best;
}

/* The throughput column q names, or else the time column: a ratio is of the rates where the table
 * has them ("TF32 Strong Scaling" beside "Throughput - TF32" and "TF32 Training Time"). */
static int best_match(const struct scaling_table *t, char quals[][96], const char *q, int except)
{
    int c = best_of_kind(t, quals, q, except, SCALING_RATE);
    return c >= 0 ? c : best_of_kind(t, quals, q, except, SCALING_TIME);
}

/* The first throughput column, or else the first time column: what a plain "Speedup" or
 * "Efficiency" over the job sizes is of where the table has several measures and its header names
 * none ("Total Time" and "Time/Iteration": tables put the measure first, its breakdowns after). */
static int first_measure(const struct scaling_table *t)
{
    for (int pass = 0; pass < 2; pass++)
        for (int c = 0; c < t->columns; c++)
            if (t->column[c].kind == (pass == 0 ? SCALING_RATE : SCALING_TIME))
                return c;
    return -1;
}

/* Of the measures a plain ratio column c over the job sizes may be of (the time columns alone
 * where times_only): the most precise of those its printed ratios hold to in most rows
 * ("parallel ms/step" to four digits beside "steps/s" to two, which holds any ratio near it: a slip
 * in one row is then the time's, not hidden by the rate's rounding); else the one they hold to in
 * the most rows; first_measure where none holds. */
static int measure_by_its_ratios(const struct scaling_table *t, int c, bool times_only)
{
    int best = -1, best_held = 0, base = scaling_smallest_job(t, -1);
    bool best_most = false;
    double best_width = INFINITY;
    for (int k = 0; k < t->columns && base >= 0; k++) {
        enum scaling_kind kind = t->column[k].kind;
        if (kind != SCALING_TIME && (kind != SCALING_RATE || times_only))
            continue;
        int held = 0, counted = 0;
        double width = 0;
        for (int r = 0; r < t->rows; r++) {
            struct scaling_cell a, b, printed = *scaling_at(t, r, c);
            scaling_over_counts_cells(t, k, r, base, &a, &b);
            if (t->column[c].kind == SCALING_EFFICIENCY) {   /* the printed ratio as a / b: times the job */
                double jobs = scaling_at(t, r, t->count_column)->value / scaling_at(t, base, t->count_column)->value;
                printed.value *= jobs, printed.unit *= jobs;
            }
            double lo, hi, mid;
            if (isnan(printed.value) || !scaling_ratio_range(&a, &b, &lo, &hi, &mid))
                continue;
            held += scaling_cell_within(&printed, lo, hi), counted++;
            width += mid > 0 ? (hi - lo) / mid : INFINITY;   /* a ratio of 0 pins nothing down */
        }
        bool most = 2 * held > counted;
        if (most ? !best_most || width < best_width : !best_most && held > best_held)
            best = k, best_held = held, best_width = width, best_most = most;
    }
    return best >= 0 ? best : first_measure(t);
}

static int columns_of_kind(const struct scaling_table *t, enum scaling_kind kind)
{
    int n = 0;
    for (int c = 0; c < t->columns; c++)
        n += t->column[c].kind == kind;
    return n;
}

/* The last of "X to Y", "X - Y", "X vs Y", "X over Y" in text (a "time to train" is no such "to"):
 * where Y starts, X's length into *left_len; NULL where there is none. */
static const char *last_pair(const char *text, size_t *left_len)
{
    static const char *const joins[] = {" to ", " - ", " vs. ", " vs ", " versus ", " over "};
    const char *best = NULL, *best_right = NULL;
    for (size_t i = 0; i < sizeof joins / sizeof joins[0]; i++)
        for (const char *at = strstr(text, joins[i]); at; at = strstr(at + 1, joins[i])) {
            bool train = i == 0 && at >= text + 4 && strncasecmp(at - 4, "time", 4) == 0;
            if (!train && (!best || at > best))
                best = at, best_right = at + strlen(joins[i]);
        }
    if (best)
        *left_len = (size_t)(best - text);
    return best_right;
}

/* The qualifiers of the two sides a speedup between columns names: "(TF32 to mixed precision)",
 * "(TF32 - mixed precision)", "(Mixed Precision vs TF32)" in the header's last brackets, else "X to
 * Y" in its words ("tf32" and "mixed"); false when it names no two. */
static bool split_to(const char *raw, const char *words, char *before, char *after, size_t size)
{
    char inner[256] = "", left[256], left_words[256], right_words[256];
    const char *open = strrchr(raw, '('), *close = open ? strchr(open, ')') : NULL;
    if (open && close)
        snprintf(inner, sizeof inner, "%.*s", (int)(close - open - 1), open + 1);
    const char *text = inner, *right;
    size_t left_len = 0;
    if (!(right = last_pair(text, &left_len)))
        right = last_pair(text = words, &left_len);
    if (!right)
        return false;
    snprintf(left, sizeof left, "%.*s", (int)left_len, text);
    scaling_header_words(left, left_words, sizeof left_words);
    scaling_header_words(right, right_words, sizeof right_words);
    scaling_header_qualifiers(left_words, before, size);
    scaling_header_qualifiers(right_words, after, size);
    return before[0] && after[0];
}

/* Whether column c reads 1 (or 100%) at the table's smallest job: a ratio to that job. */
static bool one_at_smallest(const struct scaling_table *t, int c)
{
    int smallest = scaling_smallest_job(t, -1);
    const struct scaling_cell *cell = smallest >= 0 ? scaling_at(t, smallest, c) : NULL;
    return cell && fabs(cell->value - 1) <= cell->unit / 2 + 1e-12;
}

/* Ties a speedup between two columns: "(X to Y)", or "with Y" where the table has two columns of
 * rates (or of times), one of them Y. With one such column the speedup is over the counts. */
static void tie_across(struct scaling_table *t, int c, const char *words, char quals[][96])
{
    struct scaling_column *col = &t->column[c];
    char before[96], after[96];
    int rates = columns_of_kind(t, SCALING_RATE), times = columns_of_kind(t, SCALING_TIME);
    enum scaling_kind pair = rates == 2 ? SCALING_RATE : rates == 0 && times == 2 ? SCALING_TIME : SCALING_OTHER;
    if (split_to(col->name, words, before, after, sizeof before)) {
        col->of = best_match(t, quals, before, -1), col->to = best_match(t, quals, after, col->of);
    } else if (rates + times == 1) {   /* a plain "Speedup" beside one throughput: over the counts */
        col->kind = SCALING_OVER_COUNTS, col->of = best_match(t, quals, quals[c], -1);
        return;
    } else if (!quals[c][0] && !scaling_has_word(words, "with") && one_at_smallest(t, c)) {
        /* a plain "Speedup" of 1.00 at the smallest job, beside several measures: over the counts */
        col->kind = SCALING_OVER_COUNTS;   /* of a time where it says so ("Time to train speedup") */
        col->of = measure_by_its_ratios(t, c, scaling_has_word(words, "time") && columns_of_kind(t, SCALING_TIME) > 0);
        return;
    } else if (pair != SCALING_OTHER) {   /* "with Y": Y against the other of the two */
        col->to = best_of_kind(t, quals, quals[c], -1, pair);
        for (int k = 0; k < t->columns && col->to >= 0; k++)
            if (t->column[k].kind == pair && k != col->to)
                col->of = k;
    }
    if (col->of < 0 || col->to < 0)
        snprintf(col->why, sizeof col->why, "cannot tell which two columns \"%s\" compares", col->name);
}

/* Whether printed is a / b as printed, within the rounding of all three. */
static bool ratio_holds(const struct scaling_cell *printed, const struct scaling_cell *a, const struct scaling_cell *b)
{
    double lo, hi, mid;
    return a->value > 0 && b->value - b->unit / 2 > 0 && scaling_ratio_range(a, b, &lo, &hi, &mid) &&
           scaling_cell_within(printed, lo, hi);
}

/* A speedup between two columns points the way its numbers say: writers put "AMP to TF32" for
 * AMP over TF32 and "TF32 to mixed precision" for mixed over TF32. Where more of the table's
 * printed ratios hold the other way round than the way the header was read, of and to swap. */
static void orient_across(struct scaling_table *t, int c)
{
    struct scaling_column *col = &t->column[c];
    if (col->of < 0 || col->to < 0)
        return;
    bool time = t->column[col->of].kind == SCALING_TIME;
    int as_read = 0, turned = 0;
    for (int r = 0; r < t->rows; r++) {
        const struct scaling_cell *printed = scaling_at(t, r, c), *of = scaling_at(t, r, col->of),
                                  *to = scaling_at(t, r, col->to);
        if (isnan(printed->value))
            continue;
        as_read += ratio_holds(printed, time ? of : to, time ? to : of);   /* as audit reads it */
        turned += ratio_holds(printed, time ? to : of, time ? of : to);
    }
    if (turned > as_read) {
        int keep = col->of;
        col->of = col->to, col->to = keep;
    }
}

/* Whether a ratio over the job sizes whose header does not say strong or weak scaling
 * ("Scalability", "Scaling") is per job, an efficiency: no value above 1.05 where the table's
 * largest job is at least twice its smallest (a speedup would pass 1). */
static bool per_job_by_its_values(const struct scaling_table *t, int c, const char *words)
{
    double smallest = INFINITY, largest = 0, most = -INFINITY;
    if (scaling_has_word(words, "strong") || scaling_has_word(words, "weak") || scaling_has_word(words, "speedup"))
        return false;
    for (int r = 0; r < t->rows; r++) {
        double count = scaling_at(t, r, t->count_column)->value, value = scaling_at(t, r, c)->value;
        smallest = fmin(smallest, count), largest = fmax(largest, count);
        most = isnan(value) ? most : fmax(most, value);
    }
    return largest >= 2 * smallest && most > 0 && most <= 1.05;
}

void scaling_tie_columns(struct scaling_table *t)
{
    char words[SCALING_MAX_COLUMNS][256], quals[SCALING_MAX_COLUMNS][96];
    for (int c = 0; c < t->columns; c++) {
        scaling_header_words(t->column[c].name, words[c], sizeof words[c]);
        scaling_header_qualifiers(words[c], quals[c], sizeof quals[c]);
    }
    for (int c = 0; c < t->columns; c++) {
        struct scaling_column *col = &t->column[c];
        col->of = col->to = -1;
        if (col->kind == SCALING_ACROSS)
            tie_across(t, c, words[c], quals), orient_across(t, c);
        else if (col->kind == SCALING_OVER_COUNTS || col->kind == SCALING_EFFICIENCY) {
            if (col->kind == SCALING_OVER_COUNTS && per_job_by_its_values(t, c, words[c]))
                col->kind = SCALING_EFFICIENCY;   /* "scalability" 98.61% at 2 threads */
            col->of = best_match(t, quals, quals[c], -1);
            if (col->of < 0 && !quals[c][0])   /* a plain "Efficiency": of the measure its ratios hold to */
                col->of = measure_by_its_ratios(t, c, false);
            if (col->of < 0)
                snprintf(col->why, sizeof col->why, "cannot tell which throughput or time column \"%s\" is of",
                         col->name);
        }
    }
}
