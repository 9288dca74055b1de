/* scaling_csv.h - published scaling tables saved as CSV or TSV ("gpus,time,fps"; a spreadsheet's
 * export with ';' and decimal commas): each line handed to scaling_table.c's reader as the
 * Markdown row it would be, the file's first line its header. */
#ifndef SCALING_CSV_H
#define SCALING_CSV_H

#include <stdio.h>
#include <sys/types.h>

/* The separator of a published CSV file by its name ("results.csv": ',' or, where its first line
 * has more, ';'; ".tsv": a tab), or 0: Markdown. Leaves f at its start. */
char scaling_csv_separator(const char *path, FILE *f);

/* The next line of f; a CSV file's (separator, not 0) as a Markdown row ("| a | b |"), its decimal
 * commas points where ';' separates. As getline: its length, or -1 at the end (or out of memory). */
ssize_t scaling_next_line(char **line, size_t *size, FILE *f, char separator);

#endif
