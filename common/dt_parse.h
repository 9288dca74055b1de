/* dt_parse.h - strict number parsing for command-line options and environment variables. */
#ifndef DT_PARSE_H
#define DT_PARSE_H

#include <stdbool.h>

/* Parses all of `text` as a base-10 integer in [min, max]: no sign unless min < 0, no spaces, no
 * trailing characters. Returns 0, or -1 when the text is not such a number. */
int dt_parse_long(const char *text, long min, long max, long *out);

/* Like dt_parse_long for an int. */
int dt_parse_int(const char *text, int min, int max, int *out);

#endif
