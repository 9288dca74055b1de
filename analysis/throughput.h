/* throughput.h - trainer logs in the reference format (formats/log_lines.h) into one summary per run: the
 * peak data/sec (the reference headline figure is the largest Step value), the last test accuracy
 * and the epochs logged. A Markdown heading (the reference experiments' notebooks: "### lm6-120.7") starts a
 * new run; a file without headings (a slurm-%j.out) is one run. The headings name the model, the
 * node and the GPUs (runid.h), so each run gets its speedup against its own 1-GPU baseline. */
#ifndef THROUGHPUT_H
#define THROUGHPUT_H

#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/dt_error.h"

#include "analysis/runid.h"

struct log_run {
    char source[256];          /* the file */
    int line;                  /* of its heading, or of its first log line */
    char heading[400];         /* the headings above it, "" when the file has none */
    char title[128];           /* the nearest of them: "lm6-198.38-1.648x, baseline: 120.7" */
    int steps_logged, epochs;
    double peak_data_per_sec, final_accuracy;   /* final_accuracy: NAN when no epoch had one */
    struct run_identity id;    /* from the headings */
    int heading_level, read_level;   /* as written, and as read: a run heading written at its model's
                                        level ("## lm1-41.9") is read at its siblings' ("###") */
    uint64_t fingerprint;      /* of every number of its Step and Epoch lines: copies share it */
    /* From throughput_baselines: the 1-GPU run of the same model on the same node (for several
     * nodes, the slowest of their 1-GPU runs: what the mix must beat); NULL when there is none. */
    const struct log_run *baseline;
    double speedup, efficiency;   /* NAN without a baseline */
};

struct log_runs {
    struct log_run *runs;
    int count, cap;
};

/* Appends the runs of one log to set. Returns 0, or -1 with err (out of memory, or a read error:
 * the runs before it are kept). */
int throughput_read(FILE *in, const char *source, struct log_runs *set, struct dt_err *err);

/* Moves from's runs to the end of into (from is left empty). 0, or -1 out of memory. */
int throughput_take(struct log_runs *into, struct log_runs *from);

/* The 1-GPU run of of's model on node (one of of's; NULL: a run whose headings name no node, as a
 * lab's "VGG16-3090-64batch_size"): the same file's first, as its author meant, another file's
 * when it has none; NULL when there is none with Step lines. */
const struct log_run *throughput_one_gpu_run(const struct log_runs *set, const struct log_run *of, const char *node);

/* Finds each run's baseline and computes its speedup and efficiency (speedup / GPUs). */
void throughput_baselines(struct log_runs *set);

void throughput_print(FILE *out, const struct log_runs *set, bool csv);

#endif
