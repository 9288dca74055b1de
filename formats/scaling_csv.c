/* scaling_csv.c - published scaling tables saved as CSV or TSV, read as Markdown rows (see
 * scaling_csv.h). */
#include "formats/scaling_csv.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/scaling_table.h"
#include "formats/table.h"

/* The separator of a published CSV file by its name ("results.csv": ',' or, where its first line
 * has more, ';' as spreadsheets in decimal-comma locales write; ".tsv": a tab), or 0: Markdown. */
char scaling_csv_separator(const char *path, FILE *f)
{
    const char *dot = strrchr(path, '.');
    if (!dot || (strcasecmp(dot, ".csv") != 0 && strcasecmp(dot, ".tsv") != 0))
        return 0;
    if (strcasecmp(dot, ".tsv") == 0)
        return '\t';
    char first[4096] = "";
    if (!fgets(first, sizeof first, f))
        first[0] = '\0';
    rewind(f);
    int commas = 0, semicolons = 0;
    for (const char *c = first; *c; c++)
        commas += *c == ',', semicolons += *c == ';';
    return semicolons > commas ? ';' : ',';
}

/* The next line of f; a CSV file's (separator) as a Markdown row ("| a | b |"), its decimal commas
 * points where ';' separates. As getline. */
ssize_t scaling_next_line(char **line, size_t *size, FILE *f, char separator)
{
    ssize_t got = getline(line, size, f);
    if (got <= 0 || !separator || !(*line)[strspn(*line, " \t\r\n")])
        return got;
    char *cells[SCALING_MAX_COLUMNS + 1], *copy = strdup(*line);
    int n = copy ? table_csv_cells(copy + (strncmp(copy, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0), separator, cells,
                                   SCALING_MAX_COLUMNS + 1) : 0;
    size_t need = 4 + strlen(*line) * 2 + (size_t)n * 3;
    char *row = malloc(need);
    if (!copy || !row)
        return free(copy), free(row), -1;
    size_t used = (size_t)snprintf(row, need, "|");
    for (int c = 0; c < n; c++) {
        for (char *d = cells[c]; separator == ';' && *d; d++)
            if (*d == ',' && d > cells[c] && isdigit((unsigned char)d[-1]) && isdigit((unsigned char)d[1]))
                *d = '.';
        for (char *d = cells[c]; *d; d++)
            *d = *d == '|' ? '/' : *d;   /* a cell's own bar is not a column */
        used += (size_t)snprintf(row + used, need - used, " %s |", cells[c]);
    }
    snprintf(row + used, need - used, "\n");
    free(copy), free(*line);
    *line = row, *size = need;
    return (ssize_t)strlen(row);
}
