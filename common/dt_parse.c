/* dt_parse.c - strict number parsing (see dt_parse.h). */
#include "common/dt_parse.h"

#include <string.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

int dt_parse_long(const char *text, long min, long max, long *out)
{
    if (!text || !*text)
        return -1;
    const char *digits = text;
    if (*digits == '-' && min < 0)
        digits++;
    if (!isdigit((unsigned char)*digits))
        return -1;   /* strtol would accept leading spaces and '+'; an option value should not */
    errno = 0;
    char *end;
    long value = strtol(text, &end, 10);
    if (errno || *end != '\0' || value < min || value > max)
        return -1;
    *out = value;
    return 0;
}

int dt_parse_int(const char *text, int min, int max, int *out)
{
    long value;
    if (dt_parse_long(text, min, max, &value) < 0)
        return -1;
    *out = (int)value;
    return 0;
}

int dt_parse_double(const char *text, double min, double max, double *out)
{
    if (!text || !(isdigit((unsigned char)text[0]) || text[0] == '.' || (min < 0 && text[0] == '-')))
        return -1;   /* no spaces, no sign unless negatives are allowed; nan and inf are not numbers */
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (errno != 0 || *end != '\0' || !(value >= min && value <= max))
        return -1;
    *out = value;
    return 0;
}

int dt_parse_bytes(const char *text, long min, long max, long *out)
{
    char digits[32];
    size_t len = text ? strlen(text) : 0;
    if (len == 0 || len >= sizeof digits)
        return -1;
    memcpy(digits, text, len + 1);
    int shift = 0;
    switch (digits[len - 1]) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    }
    if (shift)
        digits[len - 1] = '\0';
    long value;
    if (dt_parse_long(digits, 0, LONG_MAX >> shift, &value) < 0)
        return -1;
    value <<= shift;
    if (value < min || value > max)
        return -1;
    *out = value;
    return 0;
}

int dt_decimals(const char *text, size_t length)
{
    const char *dot = memchr(text, '.', length);
    return dot ? (int)(length - (size_t)(dot - text) - 1) : 0;
}

double dt_last_digit_unit(const char *text, size_t length)
{
    double unit = 1;
    for (int decimals = dt_decimals(text, length); decimals > 0; decimals--)
        unit /= 10;
    return unit;
}
