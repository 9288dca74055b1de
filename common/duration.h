/* duration.h - run times as the reference tables write them: H:MM:SS, with a fraction of a second
 * (H:MM:SS.ss) where runs are too short for whole seconds to tell them apart. */
#ifndef DURATION_H
#define DURATION_H

/* Parses "H:MM:SS" or "H:MM:SS.fff" (hours of any length, minutes and seconds two digits below
 * 60). Returns the seconds, or -1 when the text is not such a duration. */
double duration_parse(const char *text);

/* A clock time as people write it in tables: H:MM:SS or MM:SS (the first part of any length, the
 * others below 60), only the last with a fraction ("1:02:03", "12:30", "0:00:02.5"), or Slurm's
 * D-HH:MM:SS ("1-02:03:04", also D-HH:MM and D-HH). Returns the seconds, or -1. Lenient where
 * duration_parse is the reference format's own. */
double duration_parse_clock(const char *text);

/* The same with the last part counting last_field seconds (60 for "1:30" under a header that says
 * [h:m], 3600 under [d:h]); each part but the first below the next's range (60, 60, 24). */
double duration_parse_fields(const char *text, double last_field);

/* The seconds of the last printed digit of such a clock: 60 for "1:30" at last_field 60, 0.01 for
 * "0:00:02.43" at 1, 60 for Slurm's "1-02:03". */
double duration_fields_unit(const char *text, double last_field);

/* The seconds of the last field a clock unit names ("h:mm:ss" and "mm:ss" 1, "h:m" 60, "d:h" 3600,
 * "d-hh:mm:ss" 1, "min:sec" 1), or -1 where unit is not two or more fields in a row. */
double duration_clock_unit(const char *unit);

/* The unit of the last digit text was written with: 1 for "0:51:27", 0.01 for "0:00:02.43". */
double duration_unit(const char *text);

/* Writes seconds rounded to `decimals` places (0-3) as "H:MM:SS[.fff]" into out (at least 32
 * bytes); beyond 999999999:59:59.999 (and infinity) it writes that, NaN and negatives as 0. */
void duration_format(double seconds, int decimals, char *out);

#endif
