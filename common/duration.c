/* duration.c - H:MM:SS[.fff] parsing and formatting (see duration.h). */
#include "common/duration.h"

#include "common/dt_parse.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Digits after the seconds' '.', or -1 when what follows is not ".digits" or nothing. */
static int fraction_digits(const char *after_seconds)
{
    if (after_seconds[0] == '\0')
        return 0;
    if (after_seconds[0] != '.')
        return -1;
    size_t n = strspn(after_seconds + 1, "0123456789");
    return n == 0 || n > 9 || after_seconds[1 + n] != '\0' ? -1 : (int)n;
}

double duration_parse(const char *text)
{
    long h = 0;
    int i = 0;
    if (!isdigit((unsigned char)text[0]))
        return -1;
    for (; isdigit((unsigned char)text[i]) && i < 9; i++)
        h = h * 10 + (text[i] - '0');
    const char *rest = text + i;
    if (strlen(rest) < 6 || rest[0] != ':' || rest[3] != ':' || !isdigit((unsigned char)rest[1]) ||
        !isdigit((unsigned char)rest[2]) || !isdigit((unsigned char)rest[4]) || !isdigit((unsigned char)rest[5]))
        return -1;
    int digits = fraction_digits(rest + 6);
    int m = (rest[1] - '0') * 10 + rest[2] - '0', s = (rest[4] - '0') * 10 + rest[5] - '0';
    if (digits < 0 || m > 59 || s > 59)
        return -1;
    double fraction = 0, scale = 1;
    for (int d = 0; d < digits; d++) {
        scale /= 10;
        fraction += (rest[7 + d] - '0') * scale;
    }
    return (double)(h * 3600 + m * 60 + s) + fraction;
}

/* The next bigger field of a clock: seconds to minutes, minutes to hours, hours to days; 0 past days. */
static double bigger_field(double field)
{
    return field == 1 ? 60 : field == 60 ? 3600 : field == 3600 ? 86400 : 0;
}

/* Reads "A:B[:C[:D]]" into parts (only the last with a fraction); returns their count, or -1. */
static int clock_parts(const char *text, double parts[4])
{
    int count = 0;
    const char *p = text;
    for (;;) {
        char *end;
        if (count == 4 || !isdigit((unsigned char)*p))
            return -1;
        parts[count++] = strtod(p, &end);
        if (*end != ':')
            return *end ? -1 : count;
        if ((end - p) != (long)strspn(p, "0123456789"))
            return -1;   /* only the last part has a fraction */
        p = end + 1;
    }
}

/* The seconds the last part of a clock counts: last_field, or in Slurm's day form what the count
 * of parts after the day says (D-HH, D-HH:MM, D-HH:MM:SS). */
static double last_part_field(const char *text, double last_field)
{
    const char *dash = strchr(text, '-');
    if (!dash)
        return last_field;
    int colons = 0;
    for (const char *c = dash; *c; c++)
        colons += *c == ':';
    return colons == 0 ? 3600 : colons == 1 ? 60 : 1;
}

double duration_parse_fields(const char *text, double last_field)
{
    double parts[4], days = 0;
    const char *dash = strchr(text, '-');
    if (dash) {   /* Slurm's D-HH[:MM[:SS]]: whole days, then hours below 24 */
        size_t digits = strspn(text, "0123456789");
        if (digits == 0 || text + digits != dash)
            return -1;
        days = strtod(text, NULL);
        text = dash + 1;
    }
    int count = clock_parts(text, parts);
    if (count < (dash ? 1 : 2))
        return -1;
    double field = last_part_field(dash ? dash : text, last_field), value = 0;   /* after a day, hours first */
    for (int i = count - 1; i >= 0; i--) {
        double bigger = bigger_field(field);
        bool bounded = i > 0 || dash;   /* all parts but a clock's first; hours after a day too */
        if (field == 0 || (i > 0 && bigger == 0) || (bounded && parts[i] >= bigger / field))
            return -1;   /* a part beyond days, or one as large as the next part's unit */
        value += parts[i] * field;
        field = bigger;
    }
    return days * 86400 + value;
}

double duration_fields_unit(const char *text, double last_field)
{
    return duration_unit(text) * last_part_field(text, last_field);
}

double duration_parse_clock(const char *text)
{
    return duration_parse_fields(text, 1);
}

/* A clock unit's field ("d", "hh", "min", "ss", ...) in seconds; 0 for no such field. */
static double field_seconds(const char *name, size_t len)
{
    static const struct { const char *name; double seconds; } fields[] = {
        {"d", 86400}, {"dd", 86400}, {"day", 86400}, {"days", 86400}, {"h", 3600}, {"hh", 3600}, {"hr", 3600},
        {"hrs", 3600}, {"hour", 3600}, {"hours", 3600}, {"m", 60}, {"mm", 60}, {"min", 60}, {"mins", 60},
        {"minutes", 60}, {"s", 1}, {"ss", 1}, {"sec", 1}, {"secs", 1}, {"seconds", 1}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (strlen(fields[i].name) == len && strncasecmp(name, fields[i].name, len) == 0)
            return fields[i].seconds;
    return 0;
}

double duration_clock_unit(const char *unit)
{
    double field = 0, last = -1;
    int count = 0;
    for (const char *p = unit; *p;) {
        size_t len = strcspn(p, ":-");
        double seconds = field_seconds(p, len);
        if (seconds == 0 && len > 1 && (p[0] == 'd' || p[0] == 'D') && field_seconds(p + 1, len - 1) == 3600) {
            if (count > 0)
                return -1;
            field = 86400, count = 1;   /* "dhh": "d-hh" with its '-' taken out */
            seconds = 3600;
        }
        if (seconds == 0 || (count > 0 && bigger_field(seconds) != field))
            return -1;   /* not a field, or not the next smaller one */
        field = last = seconds, count++;
        p += len;
        if (*p && !p[1])
            return -1;
        p += *p != '\0';
    }
    return count >= 2 ? last : -1;
}

double duration_unit(const char *text)
{
    return dt_last_digit_unit(text, strlen(text));
}

void duration_format(double seconds, int decimals, char *out)
{
    static const unsigned long scales[] = {1, 10, 100, 1000};
    if (decimals < 0 || decimals > 3)
        decimals = 0;
    unsigned long per_second = scales[decimals];
    /* the longest it writes, 999999999:59:59.999: a table's sum of absurd runtimes (an average the
     * audit recomputes) must not overflow the integer it is rounded into */
    const double longest = 999999999.0 * 3600 + 3599 + (double)(per_second - 1) / (double)per_second;
    if (seconds > longest)
        seconds = longest;
    /* rounded in whole units of the last digit, without libm */
    unsigned long units = seconds > 0 ? (unsigned long)(seconds * (double)per_second + 0.5) : 0;
    unsigned long t = units / per_second;
    unsigned m = (unsigned)(t % 3600 / 60), s = (unsigned)(t % 60);
    int n = snprintf(out, 32, "%lu:%02u:%02u", t / 3600 % 1000000000UL, m % 60, s % 60);
    if (decimals > 0)
        snprintf(out + n, (size_t)(32 - n), ".%0*lu", decimals, units % per_second);
}
