/* duration.c - H:MM:SS[.fff] parsing and formatting (see duration.h). */
#include "common/duration.h"

#include "common/dt_parse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

double duration_parse_clock(const char *text)
{
    double parts[3], value = 0;
    int count = 0;
    const char *p = text;
    while (count < 3) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return -1;
        parts[count++] = strtod(p, &end);
        int last = *end != ':';
        if (!last && (end - p) != (long)strspn(p, "0123456789"))
            return -1;   /* only the seconds have a fraction */
        p = end + !last;
        if (last)
            break;
    }
    if (*p || count < 2)
        return -1;
    for (int i = 0; i < count; i++) {
        if (i > 0 && parts[i] >= 60)
            return -1;
        value = value * 60 + parts[i];
    }
    return value;
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
