/* duration.h - run times as the reference tables write them: H:MM:SS, with a fraction of a second
 * (H:MM:SS.ss) where runs are too short for whole seconds to tell them apart. */
#ifndef DURATION_H
#define DURATION_H

/* Parses "H:MM:SS" or "H:MM:SS.fff" (hours of any length, minutes and seconds two digits below
 * 60). Returns the seconds, or -1 when the text is not such a duration. */
double duration_parse(const char *text);

/* A clock time as people write it in tables: H:MM:SS or MM:SS (the first part of any length, the
 * others below 60), only the last with a fraction ("1:02:03", "12:30", "0:00:02.5"). Returns the
 * seconds, or -1. Lenient where duration_parse is the reference format's own. */
double duration_parse_clock(const char *text);

/* The unit of the last digit text was written with: 1 for "0:51:27", 0.01 for "0:00:02.43". */
double duration_unit(const char *text);

/* Writes seconds rounded to `decimals` places (0-3) as "H:MM:SS[.fff]" into out (at least 32
 * bytes); beyond 999999999:59:59.999 (and infinity) it writes that, NaN and negatives as 0. */
void duration_format(double seconds, int decimals, char *out);

#endif
