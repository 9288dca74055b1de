/* duration.c - H:MM:SS parsing and formatting (see duration.h). */
#include "duration.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

long duration_parse(const char *text)
{
    long h = 0;
    int i = 0;
    if (!isdigit((unsigned char)text[0]))
        return -1;
    for (; isdigit((unsigned char)text[i]) && i < 9; i++)
        h = h * 10 + (text[i] - '0');
    const char *rest = text + i;
    if (strlen(rest) != 6 || rest[0] != ':' || rest[3] != ':' || !isdigit((unsigned char)rest[1]) ||
        !isdigit((unsigned char)rest[2]) || !isdigit((unsigned char)rest[4]) || !isdigit((unsigned char)rest[5]))
        return -1;
    int m = (rest[1] - '0') * 10 + rest[2] - '0', s = (rest[4] - '0') * 10 + rest[5] - '0';
    if (m > 59 || s > 59)
        return -1;
    return h * 3600 + m * 60 + s;
}

void duration_format(double seconds, char *out)
{
    unsigned long t = seconds > 0 ? (unsigned long)(seconds + 0.5) : 0;   /* rounded, without libm */
    unsigned m = (unsigned)(t % 3600 / 60), s = (unsigned)(t % 60);
    snprintf(out, 24, "%lu:%02u:%02u", t / 3600 % 1000000000UL, m % 60, s % 60);
}
