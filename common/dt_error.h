/* dt_error.h - how errors travel up: a message buffer filled deep down, printed once at the top. */
#ifndef DT_ERROR_H
#define DT_ERROR_H

#include <stddef.h>

/* Long enough for a message that quotes a hostlist expression, a variable's value and the fix. */
#define DT_ERR_MSG_MAX 1024

struct dt_err {
    char msg[DT_ERR_MSG_MAX];
};

/* Fills err->msg (if err is not NULL) from a printf format and returns -1, so callers can write
 * `return dt_fail(err, "...", ...);`. */
int dt_fail(struct dt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "context: " to an existing message (e.g. the variable name that held bad input) and
 * returns -1. */
int dt_wrap(struct dt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
