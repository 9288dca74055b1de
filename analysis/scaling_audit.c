/* scaling_audit.c - published scaling tables checked and shown (see scaling_audit.h). */
#include "analysis/scaling_audit.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "formats/scaling_cells.h"
#include "formats/scaling_settings.h"

/* The two cells a ratio cell of column c in row r was worked out from, faster over slower:
 * a time's ratio is the slower time over the faster. False where the column is not tied. */
static bool ratio_cells(const struct scaling_table *t, int r, int c, struct scaling_cell *num, struct scaling_cell *den,
                        int *num_column, int *den_column)
{
    const struct scaling_column *col = &t->column[c];
    if (col->of < 0 || (col->kind == SCALING_ACROSS && col->to < 0))
        return false;
    bool time = t->column[col->of].kind == SCALING_TIME;
    if (col->kind == SCALING_ACROSS) {
        *num_column = time ? col->of : col->to, *den_column = time ? col->to : col->of;
        *num = *scaling_at(t, r, *num_column), *den = *scaling_at(t, r, *den_column);
        return true;
    }
    int base = scaling_smallest_job(t, col->of);
    if (base < 0)
        return false;
    *num_column = *den_column = col->of;
    scaling_over_counts_cells(t, col->of, r, base, num, den);
    return true;
}
static int decimals_of(double unit)
{
    int d = (int)lround(-log10(unit));
    return d > 0 ? d : 0;
}

/* A cell as the table printed it: its number to its last digit, or a range's two ends; in the
 * unit its header names ("(Hrs)"), seconds of them (1 for any other column). */
static const char *cell_text(const struct scaling_cell *cell, double seconds, char *text, size_t size)
{
    int d = decimals_of((cell->high > cell->low ? cell->unit - (cell->high - cell->low) : cell->unit) / seconds);
    if (cell->high > cell->low)
        snprintf(text, size, "%.*f-%.*f", d, cell->low / seconds, d, cell->high / seconds);
    else
        snprintf(text, size, "%.*f", d, cell->value / seconds);
    return text;
}

/* The seconds of the unit column c's header names for its plain numbers (its "(Hrs)"), or 1. */
static double shown_in(const struct scaling_table *t, int c)
{
    double seconds = t->column[c].kind == SCALING_TIME ? t->column[c].header_seconds : 0;
    return seconds > 0 ? seconds : 1;
}

/* Another row that row r's ratio in column c (over the counts) does follow from: one at the
 * baseline's job size, where the table ran that size more than once ("Batch size 64" beside 32 at 1
 * GPU, each precision's ratios over its faster run), or another setting's run below it that prints
 * a ratio of 1 there, the table's reference ("Baseline" at 1 GPU, every optimization's speedup over
 * it, the one run at 2 and 4 GPUs too); -1 where none does. */
static int other_baseline(const struct scaling_table *t, int r, int c)
{
    const struct scaling_column *col = &t->column[c];
    int base = col->kind == SCALING_ACROSS || col->of < 0 ? -1 : scaling_smallest_job(t, col->of);
    for (int q = 0; base >= 0 && q < t->rows + t->baselines; q++) {   /* its own rows, then others' */
        double lo, hi, mid, count = scaling_at(t, q, t->count_column)->value;
        struct scaling_cell num, den;
        double base_count = scaling_at(t, base, t->count_column)->value;
        bool reference = q >= t->rows && count < base_count && scaling_row_prints_one(t, q);
        if (q == base || (count != base_count && !reference))
            continue;
        scaling_over_counts_cells(t, col->of, r, q, &num, &den);
        if (!scaling_ratio_range(&num, &den, &lo, &hi, &mid))
            continue;
        double jobs = col->kind == SCALING_EFFICIENCY ? scaling_at(t, r, t->count_column)->value / count : 1;
        const struct scaling_cell *printed = scaling_at(t, r, c);
        if (scaling_cell_within(printed, lo / jobs, hi / jobs))
            return q;
    }
    return -1;
}

/* One ratio or efficiency cell against what its columns give, into out; where it follows from
 * another run (other_baseline), a note instead, once a column, and that run in *over: the column's
 * cells that follow from neither are then held to it. 0, or -1 out of memory. */
static int audit_cell(const struct scaling_table *t, int r, int c, struct audit *out, struct audit *notes, int *over)
{
    const struct scaling_cell *printed = scaling_at(t, r, c);
    struct scaling_cell num, den;
    double lo, hi, mid;
    int num_column, den_column;
    if (isnan(printed->value) || !ratio_cells(t, r, c, &num, &den, &num_column, &den_column) ||
        !scaling_ratio_range(&num, &den, &lo, &hi, &mid))
        return 0;
    const struct scaling_column *col = &t->column[c];
    double jobs = 1;
    if (col->kind == SCALING_EFFICIENCY) {
        int base = scaling_smallest_job(t, col->of);
        jobs = scaling_at(t, r, t->count_column)->value / scaling_at(t, base, t->count_column)->value;
        lo /= jobs, hi /= jobs, mid /= jobs;
    }
    if (scaling_cell_within(printed, lo, hi))
        return 0;
    int other = other_baseline(t, r, c), base = other >= 0 ? scaling_smallest_job(t, col->of) : -1;
    if (other >= 0) {
        char of_text[64], base_text[64];
        if (*over >= 0)
            return 0;
        *over = other;
        bool below = scaling_at(t, other, t->count_column)->value < scaling_at(t, base, t->count_column)->value;
        return audit_add(notes, t->row_line[r], "%s is over line %d's run at %g %s (%s), not line %d's (%s): %s",
                         col->name, t->row_line[other],
                         scaling_at(t, other, t->count_column)->value, t->count_noun,
                         cell_text(scaling_at(t, other, col->of), shown_in(t, col->of), of_text, sizeof of_text),
                         t->row_line[base], cell_text(scaling_at(t, base, col->of), shown_in(t, col->of), base_text,
                                                      sizeof base_text),
                         below ? "the table's reference run, its ratio 1; checked against it"
                               : "the table ran that size twice; not checked against the first");
    }
    if (*over >= 0 && col->kind != SCALING_ACROSS) {   /* the run the column's other cells are over */
        scaling_over_counts_cells(t, col->of, r, *over, &num, &den);
        if (!scaling_ratio_range(&num, &den, &lo, &hi, &mid))
            return 0;
        if (col->kind == SCALING_EFFICIENCY) {
            jobs = scaling_at(t, r, t->count_column)->value / scaling_at(t, *over, t->count_column)->value;
            lo /= jobs, hi /= jobs, mid /= jobs;
        }
    }
    int d = decimals_of(printed->high > printed->low ? printed->unit - (printed->high - printed->low) : printed->unit);
    char jobs_text[48] = "", printed_text[64], num_text[64], den_text[64];
    if (col->kind == SCALING_EFFICIENCY)
        snprintf(jobs_text, sizeof jobs_text, " / %g", jobs);
    /* a ratio cut to its digits rather than rounded (7.779 printed 7.77) is a way of printing, said so */
    double scale = pow(10, d);
    bool cut = printed->high <= printed->low && fabs(floor(mid * scale + 1e-9) / scale - printed->value) < 0.5 / scale;
    return audit_add(out, t->row_line[r],
                     "%s %s at %g %s does not follow from %s: %s / %s%s = %.*f (%.*f-%.*f with their rounding)%s",
                     col->name, cell_text(printed, 1, printed_text, sizeof printed_text),
                     scaling_at(t, r, t->count_column)->value, t->count_noun,
                     t->column[col->kind == SCALING_ACROSS ? col->to : col->of].name,
                     cell_text(&num, shown_in(t, num_column), num_text, sizeof num_text),
                     cell_text(&den, shown_in(t, den_column), den_text, sizeof den_text), jobs_text,
                     d + 1, mid, d + 2, lo, d + 2, hi, cut ? "; it is the ratio cut to its digits, not rounded" : "");
}

/* Whether row r's printed ratio in column c is column of's ratio over the counts (within its
 * rounding, or cut to its digits). */
static bool over_counts_holds(const struct scaling_table *t, int r, int c, int of)
{
    int base = scaling_smallest_job(t, of);
    const struct scaling_cell *printed = scaling_at(t, r, c);
    double lo, hi, mid;
    if (base < 0 || isnan(printed->value))
        return true;   /* nothing to hold it against */
    struct scaling_cell num, den;
    scaling_over_counts_cells(t, of, r, base, &num, &den);
    if (!scaling_ratio_range(&num, &den, &lo, &hi, &mid))
        return true;
    double scale = 1 / printed->unit;
    return scaling_cell_within(printed, lo, hi) ||
           (printed->value >= floor(lo * scale + 1e-9) / scale - 1e-9 && printed->value <= floor(hi * scale + 1e-9) / scale + 1e-9);
}

/* Two columns of ratios over the counts that hold each other's (weak scaling FP32 printed where
 * mixed precision's belongs and back: a copy's slip, made once): one finding for the pair, at the
 * header, in place of one a cell. Whether c is one of such a pair (its partner into *other). */
static bool swapped_pair(const struct scaling_table *t, int c, int *other)
{
    const struct scaling_column *a = &t->column[c];
    for (int d = 0; a->kind == SCALING_OVER_COUNTS && a->of >= 0 && d < t->columns; d++) {
        const struct scaling_column *b = &t->column[d];
        if (d == c || b->kind != SCALING_OVER_COUNTS || b->of < 0 || b->of == a->of)
            continue;
        bool swapped = true, own = true;
        for (int r = 0; r < t->rows; r++) {
            swapped = swapped && over_counts_holds(t, r, c, b->of) && over_counts_holds(t, r, d, a->of);
            own = own && over_counts_holds(t, r, c, a->of) && over_counts_holds(t, r, d, b->of);
        }
        if (swapped && !own)
            return *other = d, true;
    }
    return false;
}

/* Whether efficiency column c is its speedups over the smallest job divided by the whole job size,
 * where that job is not one (a sweep from 2 processes printing 2.81x and 70.3% at 4: 2.81 / 4, not
 * 2.81 / 2): every printed value holds so, and some does not hold as speedup / the sizes' ratio. */
static bool efficiency_over_whole_sizes(const struct scaling_table *t, int c)
{
    const struct scaling_column *col = &t->column[c];
    int base = col->kind == SCALING_EFFICIENCY && col->of >= 0 ? scaling_smallest_job(t, col->of) : -1;
    double base_count = base >= 0 ? scaling_at(t, base, t->count_column)->value : 1;
    int held = 0, not_relative = 0;
    for (int r = 0; base >= 0 && base_count != 1 && r < t->rows; r++) {
        struct scaling_cell num, den;
        double lo, hi, mid, count = scaling_at(t, r, t->count_column)->value;
        const struct scaling_cell *printed = scaling_at(t, r, c);
        scaling_over_counts_cells(t, col->of, r, base, &num, &den);
        if (r == base || isnan(printed->value) || !scaling_ratio_range(&num, &den, &lo, &hi, &mid))
            continue;
        if (!scaling_cell_within(printed, lo / count, hi / count))
            return false;
        held++;
        not_relative += !scaling_cell_within(printed, lo / (count / base_count), hi / (count / base_count));
    }
    return held > 0 && not_relative > 0;
}

int scaling_audit(const struct scaling_table *t, struct audit *out, struct audit *notes)
{
    bool told[SCALING_MAX_COLUMNS] = {false};
    for (int c = 0; c < t->columns; c++) {
        enum scaling_kind k = t->column[c].kind;
        int other, over = -1;   /* the run column c's ratios are over, where not its smallest job's */
        if (k != SCALING_OVER_COUNTS && k != SCALING_ACROSS && k != SCALING_EFFICIENCY)
            continue;
        if (swapped_pair(t, c, &other)) {
            if (!told[c] && !told[other] &&
                audit_add(out, t->line, "\"%s\" and \"%s\" are swapped: each holds the ratios of the other's "
                          "column (\"%s\" and \"%s\")", t->column[c].name, t->column[other].name,
                          t->column[t->column[other].of].name, t->column[t->column[c].of].name) < 0)
                return -1;
            told[c] = told[other] = true;
            continue;
        }
        if (efficiency_over_whole_sizes(t, c)) {   /* one finding for the column, not one a row */
            int base = scaling_smallest_job(t, t->column[c].of);
            double n = scaling_at(t, base, t->count_column)->value;
            if (audit_add(out, t->line, "\"%s\" is each speedup over %g %s divided by the whole job size, not by "
                          "its ratio to %g: every efficiency printed is %g times too small", t->column[c].name, n,
                          t->count_noun, n, n) < 0)
                return -1;
            continue;
        }
        for (int r = 0; r < t->rows; r++)
            if (audit_cell(t, r, c, out, notes, &over) < 0)
                return -1;
    }
    return 0;
}

/* Whether column c holds a range ("24-26 hours"). */
static bool has_range(const struct scaling_table *t, int c)
{
    for (int r = 0; r < t->rows; r++)
        if (scaling_at(t, r, c)->high > scaling_at(t, r, c)->low)
            return true;
    return false;
}

void scaling_describe(const struct scaling_table *t, char *text, size_t size)
{
    size_t used = t->sizes_in_header
                      ? (size_t)snprintf(text, size, "read as a scaling table: \"%s\", a row, its %s the header's "
                                         "columns", t->title, t->count_noun)
                      : (size_t)snprintf(text, size, "read as a scaling table: \"%s\" the job sizes%s%s%s",
                                         t->column[t->count_column].name, t->count_in_cells ? " (its cells count " : "",
                                         t->count_in_cells ? t->count_noun : "", t->count_in_cells ? ")" : "");
    for (int c = 0; c < t->columns && used < size; c++) {
        const struct scaling_column *col = &t->column[c];
        const char *of = col->of >= 0 ? t->column[col->of].name : "", *to = col->to >= 0 ? t->column[col->to].name : "";
        switch (col->kind) {
        case SCALING_RATE:
        case SCALING_TIME:
            used += (size_t)snprintf(text + used, size - used, "; \"%s\" a %s%s%s", col->name,
                                     col->kind == SCALING_TIME ? "time"
                                     : col->per_device ? "throughput, a device's share" : "throughput",
                                     col->from_heading ? " (as the heading says)" : "",
                                     has_range(t, c) ? ", a range as its middle within its ends" : "");
            break;
        case SCALING_OVER_COUNTS:
        case SCALING_EFFICIENCY:
            used += (size_t)(col->of < 0 ? snprintf(text + used, size - used, "; \"%s\" not checked: %s", col->name,
                                                    col->why)
                                         : snprintf(text + used, size - used, "; \"%s\" = \"%s\" over the smallest job's%s",
                                                    col->name, of, col->kind == SCALING_EFFICIENCY ? ", per job size" : ""));
            break;
        case SCALING_ACROSS:
            used += (size_t)(col->of < 0 || col->to < 0
                                 ? snprintf(text + used, size - used, "; \"%s\" not checked: %s", col->name, col->why)
                                 : snprintf(text + used, size - used, "; \"%s\" = \"%s\" against \"%s\"", col->name, to,
                                            of));
            break;
        default: break;
        }
    }
    if (t->one_setting && t->rows > 0 && used < size)   /* said last: the columns' reading is the table's */
        snprintf(text + used, size - used, "; the rows of %s (its rows name several settings, each read apart)",
                 t->row_setting[0]);
}

void scaling_print(FILE *out, const struct scaling_table *t, const char *path)
{
    const char *count = t->count_in_cells ? t->count_noun : t->column[t->count_column].name;
    for (int c = 0; c < t->columns; c++) {
        const struct scaling_column *col = &t->column[c];
        int base = scaling_smallest_job(t, c);
        int sizes = 0;   /* a measure at one job size has no speedup to table */
        for (int r = 0; r < t->rows && sizes < 2; r++)
            sizes += !isnan(scaling_at(t, r, c)->value) && scaling_at(t, r, t->count_column)->value !=
                                                              scaling_at(t, base < 0 ? r : base, t->count_column)->value;
        if ((col->kind != SCALING_RATE && col->kind != SCALING_TIME) || base < 0 || sizes == 0)
            continue;
        fprintf(out, "# %s%s%s (%s:%d)\n\n| %s | %s%s | Speedup | Efficiency |\n|---|---|---|---|\n", t->title,
                t->title[0] ? ": " : "", col->name, path, t->line, count, col->name,
                col->kind == SCALING_TIME && col->header_seconds != 1 ? " (s)" : "");   /* read in any unit, printed in
                                                                                          seconds, where its own says not */
        double base_count = scaling_at(t, base, t->count_column)->value;
        for (int r = 0; r < t->rows; r++) {
            const struct scaling_cell *v = scaling_at(t, r, c), *n = scaling_at(t, r, t->count_column);
            if (isnan(v->value) || !(v->value > 0))
                continue;
            double b = scaling_at(t, base, c)->value;
            double speedup = col->kind == SCALING_TIME ? b / v->value : v->value / b;
            if (col->per_device)   /* a device's share: the job's rate is it times the job size */
                speedup *= n->value / base_count;
            char value[64];   /* a range ("24-26 hours") as its two ends, its middle in the ratios */
            fprintf(out, "| %g | %s | %.2f | %.2f |\n", n->value, cell_text(v, 1, value, sizeof value), speedup,
                    speedup / (n->value / base_count));
        }
        fputc('\n', out);
    }
}
