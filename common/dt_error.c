/* dt_error.c - fill and prefix error messages (see dt_error.h). */
#include "common/dt_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int dt_fail(struct dt_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int dt_wrap(struct dt_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char joined[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(joined, sizeof joined, fmt, ap);
    va_end(ap);
    size_t used = n < 0 ? 0 : (size_t)n < sizeof joined ? (size_t)n : sizeof joined - 1;
    /* A message too long for the buffer loses its tail, never its start. */
    size_t room = sizeof joined - used - 1;
    size_t sep = room < 2 ? room : 2;
    memcpy(joined + used, ": ", sep);
    used += sep;
    size_t tail = strnlen(err->msg, sizeof err->msg);
    if (tail > sizeof joined - used - 1)
        tail = sizeof joined - used - 1;
    memcpy(joined + used, err->msg, tail);
    joined[used + tail] = '\0';
    memcpy(err->msg, joined, sizeof err->msg);
    return -1;
}
