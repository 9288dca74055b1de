/* duration.h - run times as the seeds' tables write them: H:MM:SS. */
#ifndef DURATION_H
#define DURATION_H

/* Parses "H:MM:SS" (hours of any length, minutes and seconds two digits below 60). Returns the
 * seconds, or -1 when the text is not such a duration. */
long duration_parse(const char *text);

/* Writes seconds (rounded) as "H:MM:SS" into out (at least 24 bytes). */
void duration_format(double seconds, char *out);

#endif
