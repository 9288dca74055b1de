/* scaling_audit.c - published scaling tables checked and shown (see scaling_audit.h). */
#include "analysis/scaling_audit.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "formats/scaling_cells.h"

/* The row of the smallest job with a number in column c, or -1. */
static int baseline_row(const struct scaling_table *t, int c)
{
    int best = -1;
    for (int r = 0; r < t->rows; r++)
        if (!isnan(scaling_at(t, r, c)->value) && scaling_at(t, r, c)->value > 0 &&
            (best < 0 || scaling_at(t, r, t->count_column)->value < scaling_at(t, best, t->count_column)->value))
            best = r;
    return best;
}

/* What a / b may be, each printed to its last digit (half of it either way): lo, hi, and the
 * ratio of the printed numbers. False when either is missing. */
static bool ratio_range(const struct scaling_cell *a, const struct scaling_cell *b, double *lo, double *hi,
                        double *mid)
{
    if (isnan(a->value) || isnan(b->value) || !(b->value > 0))
        return false;
    *mid = a->value / b->value;
    *lo = (a->value - a->unit / 2) / (b->value + b->unit / 2);
    *hi = b->value - b->unit / 2 > 0 ? (a->value + a->unit / 2) / (b->value - b->unit / 2) : INFINITY;
    return true;
}

/* The two cells a ratio cell of column c in row r was worked out from, faster over slower:
 * a time's ratio is the slower time over the faster. False where the column is not tied. */
static bool ratio_cells(const struct scaling_table *t, int r, int c, const struct scaling_cell **num,
                        const struct scaling_cell **den, int *num_column, int *den_column)
{
    const struct scaling_column *col = &t->column[c];
    if (col->of < 0 || (col->kind == SCALING_ACROSS && col->to < 0))
        return false;
    bool time = t->column[col->of].kind == SCALING_TIME;
    if (col->kind == SCALING_ACROSS) {
        *num_column = time ? col->of : col->to, *den_column = time ? col->to : col->of;
        *num = scaling_at(t, r, *num_column), *den = scaling_at(t, r, *den_column);
        return true;
    }
    int base = baseline_row(t, col->of);
    if (base < 0)
        return false;
    *num_column = *den_column = col->of;
    *num = scaling_at(t, time ? base : r, col->of), *den = scaling_at(t, time ? r : base, col->of);
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
    double seconds = t->column[c].kind == SCALING_TIME ? scaling_header_seconds(t->column[c].name) : 0;
    return seconds > 0 ? seconds : 1;
}

/* One ratio or efficiency cell against what its columns give. 0, or -1 out of memory. */
static int audit_cell(const struct scaling_table *t, int r, int c, struct audit *out)
{
    const struct scaling_cell *printed = scaling_at(t, r, c), *num, *den;
    double lo, hi, mid;
    int num_column, den_column;
    if (isnan(printed->value) || !ratio_cells(t, r, c, &num, &den, &num_column, &den_column) ||
        !ratio_range(num, den, &lo, &hi, &mid))
        return 0;
    const struct scaling_column *col = &t->column[c];
    double jobs = 1;
    if (col->kind == SCALING_EFFICIENCY) {
        int base = baseline_row(t, col->of);
        jobs = scaling_at(t, r, t->count_column)->value / scaling_at(t, base, t->count_column)->value;
        lo /= jobs, hi /= jobs, mid /= jobs;
    }
    double half = printed->unit / 2 + 1e-9 * fabs(printed->value);
    if (printed->value + half >= lo && printed->value - half <= hi)
        return 0;
    int d = decimals_of(printed->high > printed->low ? printed->unit - (printed->high - printed->low) : printed->unit);
    char jobs_text[48] = "", printed_text[64], num_text[64], den_text[64];
    if (col->kind == SCALING_EFFICIENCY)
        snprintf(jobs_text, sizeof jobs_text, " / %g", jobs);
    return audit_add(out, t->row_line[r],
                     "%s %s at %g %s does not follow from %s: %s / %s%s = %.*f (%.*f-%.*f with their rounding)",
                     col->name, cell_text(printed, 1, printed_text, sizeof printed_text),
                     scaling_at(t, r, t->count_column)->value, t->count_noun,
                     t->column[col->kind == SCALING_ACROSS ? col->to : col->of].name,
                     cell_text(num, shown_in(t, num_column), num_text, sizeof num_text),
                     cell_text(den, shown_in(t, den_column), den_text, sizeof den_text), jobs_text,
                     d + 1, mid, d + 2, lo, d + 2, hi);
}

int scaling_audit(const struct scaling_table *t, struct audit *out)
{
    for (int c = 0; c < t->columns; c++) {
        enum scaling_kind k = t->column[c].kind;
        if (k != SCALING_OVER_COUNTS && k != SCALING_ACROSS && k != SCALING_EFFICIENCY)
            continue;
        for (int r = 0; r < t->rows; r++)
            if (audit_cell(t, r, c, out) < 0)
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
                                     col->kind == SCALING_RATE ? "throughput" : "time",
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
        int base = baseline_row(t, c);
        if ((col->kind != SCALING_RATE && col->kind != SCALING_TIME) || base < 0)
            continue;
        fprintf(out, "# %s%s%s (%s:%d)\n\n| %s | %s%s | Speedup | Efficiency |\n|---|---|---|---|\n", t->title,
                t->title[0] ? ": " : "", col->name, path, t->line, count, col->name,
                col->kind == SCALING_TIME ? " (s)" : "");   /* read in any unit, printed in seconds */
        double base_count = scaling_at(t, base, t->count_column)->value;
        for (int r = 0; r < t->rows; r++) {
            const struct scaling_cell *v = scaling_at(t, r, c), *n = scaling_at(t, r, t->count_column);
            if (isnan(v->value) || !(v->value > 0))
                continue;
            double b = scaling_at(t, base, c)->value;
            double speedup = col->kind == SCALING_TIME ? b / v->value : v->value / b;
            char value[64];   /* a range ("24-26 hours") as its two ends, its middle in the ratios */
            fprintf(out, "| %g | %s | %.2f | %.2f |\n", n->value, cell_text(v, 1, value, sizeof value), speedup,
                    speedup / (n->value / base_count));
        }
        fputc('\n', out);
    }
}
