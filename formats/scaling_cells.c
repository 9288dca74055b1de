/* scaling_cells.c - the cells of published scaling tables as they are printed (see scaling_cells.h):
 * numbers with thousands separators and units, times with their unit or as clocks. */
#include "formats/scaling_cells.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/duration.h"

/* Seconds per unit a time cell (or header) names, 0 for none: "hours", "h", "min", "s". */
static double time_unit(const char *text, size_t *len)
{
    static const struct { const char *name; double seconds; } units[] = {
        {"days", 86400}, {"day", 86400}, {"hours", 3600}, {"hour", 3600}, {"hrs", 3600}, {"hr", 3600}, {"h", 3600},
        {"minutes", 60}, {"mins", 60},
        {"min", 60}, {"m", 60}, {"seconds", 1}, {"sec", 1}, {"s", 1}, {"milliseconds", 1e-3}, {"ms", 1e-3},
        {"us", 1e-6}, {"\xC2\xB5s", 1e-6}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t n = strlen(units[i].name);
        if (strncasecmp(text, units[i].name, n) == 0 && !isalpha((unsigned char)text[n]))
            return *len = n, units[i].seconds;
    }
    return *len = 0, 0;
}

/* The length of a thousands separator at c before a group of three digits ("," or a space, a
 * no-break or a thin one: "1,022,722", "29 911"), or 0. */
static size_t thousands_at(const char *c)
{
    size_t len = *c == ',' || *c == ' ' ? 1 : strncmp(c, "\xC2\xA0", 2) == 0 ? 2
               : strncmp(c, "\xE2\x80\xAF", 3) == 0 || strncmp(c, "\xE2\x80\x89", 3) == 0 ? 3 : 0;
    const char *g = c + len;
    return len && isdigit((unsigned char)g[0]) && isdigit((unsigned char)g[1]) && isdigit((unsigned char)g[2]) &&
                   !isdigit((unsigned char)g[3]) ? len : 0;
}

/* A number as printed, thousands separated (thousands_at) or not, into *value; the size of its
 * last digit into *unit; the text after it. NULL when there is no number. */
static const char *read_number(const char *text, double *value, double *unit)
{
    char digits[64];
    size_t n = 0, sep;
    int decimals = -1;
    const char *c = text;
    while (n + 1 < sizeof digits) {
        if (n > 0 && decimals < 0 && (sep = thousands_at(c)) > 0) {
            c += sep;
            continue;
        }
        if (!isdigit((unsigned char)*c) && *c != '.')
            break;
        if (*c == '.')
            decimals = 0;
        else if (decimals >= 0)
            decimals++;
        digits[n++] = *c++;
    }
    digits[n] = '\0';
    if (n == 0 || !isdigit((unsigned char)digits[0]) || strchr(digits, '.') != strrchr(digits, '.'))
        return NULL;
    *value = strtod(digits, NULL);
    *unit = pow(10, -(decimals > 0 ? decimals : 0));
    return c;
}

/* A clock time, "1:02:03", "5:40" or Slurm's "1-02:03:04", its last part counting clock seconds
 * (60 under a header that says [h:mm]); -1 where text (blanks around it) is not one. */
static double clock_cell(const char *text, double clock, double *unit)
{
    char copy[64];
    size_t n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    if (n >= sizeof copy || !memchr(text, ':', n))
        return -1;
    snprintf(copy, sizeof copy, "%.*s", (int)n, text);
    *unit = duration_fields_unit(copy, clock);
    return duration_parse_fields(copy, clock);
}

/* A range's upper end after its lower one (rest: the text after "24"): "-26 hours", "-1.8x" (or an en
 * dash), " to 15": its number and the size of its last digit, and the text after it; NULL where rest does
 * not go on to a larger number. Slurm's "2-05" (a day and five hours) is no range: a range's upper
 * end has no leading zero. */
static const char *range_end(const char *rest, double low, double *high, double *unit)
{
    const char *c = rest + strspn(rest, " ");
    if (*c == '-')
        c++;
    else if (strncmp(c, "\xE2\x80\x93", 3) == 0)   /* an en dash */
        c += 3;
    else if (strncasecmp(c, "to ", 3) == 0)
        c += 3;
    else
        return NULL;
    c += strspn(c, " ");
    if (c[0] == '0' && isdigit((unsigned char)c[1]))
        return NULL;
    const char *after = read_number(c, high, unit);
    return after && *high > low ? after : NULL;
}

/* A cell without its emphasis ("**44** min") and code marks ("`1069.2`"), which are not part of
 * what it says, into plain; its length. */
static size_t cell_unmarked(const char *marked, char *plain, size_t size)
{
    size_t n = 0;
    for (const char *c = marked; *c && n + 1 < size; c++)
        if (*c != '*' && *c != '`')
            plain[n++] = *c;
    plain[n] = '\0';
    return n;
}

/* A cell of a column of kind: "938 img/s", "7.2k img/s", "7.72 x", "93%", "~14 hours" (approximate: not read),
 * "2h 18min", a range ("24-26 hours": its middle, unit its width and the last digit's size), a
 * clock ("1:02:03"; its last part counting clock seconds). NAN where it holds no number. */
struct scaling_cell scaling_read_cell(const char *marked, enum scaling_kind kind, double clock)
{
    struct scaling_cell cell = {NAN, 0, 0, 0};
    char plain[256];
    cell_unmarked(marked, plain, sizeof plain);
    const char *text = plain;
    while (isspace((unsigned char)*text))
        text++;
    double seconds_unit, clock_seconds = kind == SCALING_TIME ? clock_cell(text, clock, &seconds_unit) : -1;
    if (clock_seconds >= 0)
        return (struct scaling_cell){clock_seconds, seconds_unit, 0, 0};
    double value, unit, high = 0, high_unit;
    const char *rest = read_number(text, &value, &unit);
    if (!rest)
        return cell;   /* "-", "~14 hours", "n/a" */
    const char *range = range_end(rest, value, &high, &high_unit);
    if (range)
        cell.low = value, cell.high = high, unit = high - value + fmax(unit, high_unit), value = (value + high) / 2,
        rest = range;
    while (isspace((unsigned char)*rest))
        rest++;
    size_t len;
    double seconds = kind == SCALING_TIME ? time_unit(rest, &len) : 0, scale = 1;
    if (seconds > 0) {   /* "2h 18min": each part in seconds */
        scale = seconds;
        double more, more_unit;
        const char *next = range ? NULL : read_number(rest + len + strspn(rest + len, " "), &more, &more_unit);
        size_t more_len;
        double more_seconds = next ? time_unit(next + strspn(next, " "), &more_len) : 0;
        if (more_seconds > 0)
            value += more * more_seconds / seconds, unit = more_unit * more_seconds / seconds;
    } else if (*rest == '%')
        scale = 0.01;
    else if (kind == SCALING_RATE && strchr("kKMG", *rest) && *rest && !isalpha((unsigned char)rest[1]))
        scale = *rest == 'G' ? 1e9 : *rest == 'M' ? 1e6 : 1e3;   /* "7.2k img/s", "1.2M tokens/s" */
    cell.value = value * scale, cell.unit = unit * scale, cell.low *= scale, cell.high *= scale;
    return cell;
}

/* Whether a cell is a job size by its own text: "2 GPUs", "4 nodes", "8x A100" (GPUs). */
bool scaling_cell_is_count(const char *cell, const char **noun)
{
    static const struct { const char *word, *noun; } counts[] = {
        {"gpus", "GPUs"}, {"gpu", "GPUs"}, {"nodes", "nodes"}, {"node", "nodes"}, {"workers", "workers"},
        {"worker", "workers"}, {"ranks", "ranks"}, {"rank", "ranks"}};
    double value, unit;
    const char *rest = read_number(cell + strspn(cell, " \t*"), &value, &unit);
    if (!rest || unit != 1 || !(value >= 1))
        return false;
    rest += strspn(rest, " ");
    if ((*rest == 'x' || *rest == 'X') && isupper((unsigned char)rest[1 + strspn(rest + 1, " ")]))
        return *noun = "GPUs", true;   /* "8x A100", "2 x V100" (not "2x faster") */
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        size_t n = strlen(counts[i].word);
        if (strncasecmp(rest, counts[i].word, n) == 0 && !isalpha((unsigned char)rest[n]))
            return *noun = counts[i].noun, true;
    }
    return false;
}

/* The seconds a clock cell's last part counts by its header: 60 for "Time to train [h:mm]", 3600 for
 * "(d:h)"; 1 where the header names no clock ("(90E)", "(Hrs)"); 0 where it names a resource's
 * hours ("Walltime [node-h]", "(GPU-hours)"): a cost, not a time. */
double scaling_header_clock(const char *header)
{
    const char *open = strpbrk(header, "[(");
    char unit[32];
    size_t len = open ? strcspn(open + 1, "])") : 0, unit_len;
    if (!open || len == 0 || len >= sizeof unit)
        return 1;
    snprintf(unit, sizeof unit, "%.*s", (int)len, open + 1);
    for (char *c = unit; *c; c++)
        *c = *c == ' ' ? '-' : *c;   /* "d hh:mm": a day and its hours apart */
    double last = duration_clock_unit(unit);
    if (last > 0)
        return last;
    const char *dash = strrchr(unit, '-');   /* "node-h", "GPU-hours": a resource's time, a cost */
    bool cost = dash && dash > unit && isalpha((unsigned char)dash[-1]) && time_unit(dash + 1, &unit_len) > 0 &&
                !dash[1 + unit_len];
    return cost ? 0 : 1;
}

struct scaling_cell scaling_read_measure(const char *text, enum scaling_kind kind, double clock, double header_seconds)
{
    struct scaling_cell cell = scaling_read_cell(text, kind, clock);
    if (kind == SCALING_TIME && header_seconds > 0 && !scaling_cell_is_time(text))   /* "14.5" under "(Hrs)" */
        cell.value *= header_seconds, cell.unit *= header_seconds, cell.low *= header_seconds,
            cell.high *= header_seconds;
    return cell;
}

double scaling_header_seconds(const char *header)
{
    for (const char *open = strpbrk(header, "[("); open; open = strpbrk(open + 1, "[(")) {
        const char *unit = open + 1 + strspn(open + 1, " ");
        size_t len;
        double seconds = time_unit(unit, &len);
        if (seconds > 0 && strchr(")]", unit[len + strspn(unit + len, " ")]))
            return seconds;   /* "(Hrs)", "[min]", "(s)"; not "(min:sec)", "(90E)" */
    }
    return 0;
}

bool scaling_ratio_range(const struct scaling_cell *a, const struct scaling_cell *b, double *lo, double *hi,
                         double *mid)
{
    if (isnan(a->value) || isnan(b->value) || !(b->value > 0))
        return false;
    *mid = a->value / b->value;
    *lo = (a->value - a->unit / 2) / (b->value + b->unit / 2);
    *hi = b->value - b->unit / 2 > 0 ? (a->value + a->unit / 2) / (b->value - b->unit / 2) : INFINITY;
    return true;
}

bool scaling_cell_within(const struct scaling_cell *printed, double lo, double hi)
{
    double half = printed->unit / 2 + 1e-9 * fabs(printed->value);
    return printed->value + half >= lo && printed->value - half <= hi;
}

bool scaling_cell_is_rate(const char *cell)
{
    double value, unit;
    const char *rest = read_number(cell + strspn(cell, " \t"), &value, &unit);
    if (!rest)
        return false;
    rest += strspn(rest, " ");
    const char *per = strstr(rest, "/s");   /* "img/s", "samples/sec", "tokens/s" */
    return (per && per > rest && isalpha((unsigned char)per[-1]) && !isalpha((unsigned char)per[2 + strspn(per + 2, "ec")])) ||
           strncasecmp(rest, "fps", 3) == 0;
}

bool scaling_cell_is_time(const char *cell)
{
    double value, unit;
    size_t len;
    const char *rest = read_number(cell + strspn(cell, " \t"), &value, &unit);
    return (rest && time_unit(rest + strspn(rest, " "), &len) > 0) || clock_cell(cell, 1, &unit) >= 0;
}

bool scaling_cell_is_serial(const char *cell)
{
    static const char *const words[] = {"sequential", "serial", "seq", "single"};
    char plain[64];
    size_t n = cell_unmarked(cell, plain, sizeof plain);
    while (n > 0 && isspace((unsigned char)plain[n - 1]))
        n--;
    plain[n] = '\0';
    const char *text = plain + strspn(plain, " \t");
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(text, words[i]) == 0)
            return true;
    return false;
}
