/* throughput.h - trainer logs in the seeds' format (logs/seedlog.h) into one summary per run: the
 * peak data/sec (the seeds' headline figure is the largest Step value), the last test accuracy
 * and the epochs logged. A Markdown heading (the seeds' notebooks: "### lm6-120.7") starts a
 * new run; a file without headings (a slurm-%j.out) is one run. */
#ifndef THROUGHPUT_H
#define THROUGHPUT_H

#include <stdio.h>

struct log_run {
    char source[256];          /* the file */
    int line;                  /* of its heading, or of its first log line */
    char heading[400];         /* the headings above it, "" when the file has none */
    char title[128];           /* the nearest of them: "lm6-198.38-1.648x, baseline: 120.7" */
    int steps_logged, epochs;
    double peak_data_per_sec, final_accuracy;   /* final_accuracy: NAN when no epoch had one */
};

struct log_runs {
    struct log_run *runs;
    int count, cap;
};

/* Appends the runs of one log to set. Returns 0, or -1 when out of memory. */
int throughput_read(FILE *in, const char *source, struct log_runs *set);

void throughput_print(FILE *out, const struct log_runs *set);

#endif
