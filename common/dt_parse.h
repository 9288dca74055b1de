/* dt_parse.h - strict number parsing for command-line options and environment variables. */
#ifndef DT_PARSE_H
#define DT_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* Parses all of `text` as a base-10 integer in [min, max]: no sign unless min < 0, no spaces, no
 * trailing characters. Returns 0, or -1 when the text is not such a number. */
int dt_parse_long(const char *text, long min, long max, long *out);

/* Like dt_parse_long for an int. */
int dt_parse_int(const char *text, int min, int max, int *out);

/* Parses all of `text` as a decimal number in [min, max] ("60", "0.5", "1e3"): no spaces, no sign
 * unless min < 0, no "nan" or "inf". Returns 0, or -1. */
int dt_parse_double(const char *text, double min, double max, double *out);

/* A size in bytes: digits with an optional K, M or G (powers of 1024, either case), as nccl-tests
 * takes them ("8", "64K", "256M"), in [min, max]. Returns 0, or -1. */
int dt_parse_bytes(const char *text, long min, long max, long *out);

/* The digits after the '.' of a number as written in text[0..length): 0 for "81", 2 for "81.84"
 * (and for "0:00:02.43"). */
int dt_decimals(const char *text, size_t length);

/* The unit of its last digit: 1 for "81", 0.01 for "81.84". What a printed figure may be off by
 * is half of it. */
double dt_last_digit_unit(const char *text, size_t length);

#endif
