/* runid.h - what a notebook's headings say about the run under them: the model, the node(s), the
 * GPUs on each. The reference experiments name runs only in headings, at whatever level the author chose:
 *   ## ResNet18-2x2080ti-128batch_size / ### lm1-160.70-1.96x, baseline: 81.84   -> ResNet18, lm1, 2 GPUs
 *   ## ResNet18-lm1:3x2080ti, lm6:2x2080ti-128batch_size, 339.75-4.15x, ...      -> ResNet18, lm1+lm6, 5
 *   # Single node 2 GPUs / ## ResNet18 / ### lm6-198.38-1.648x, ...             -> ResNet18, lm6, 2
 *   ## ResNet50-2080ti / ### lm6-60.44                                          -> ResNet50, lm6, 1
 * so the speedup of a run can be taken against the 1-GPU run of the same model on the same node. */
#ifndef RUNID_H
#define RUNID_H

#include <stdbool.h>

#define RUNID_MAX_NODES 8

struct run_identity {
    char model[64];                        /* "" when no heading names one */
    int node_count;                        /* 0 when no heading names a node */
    char node[RUNID_MAX_NODES][32];
    int node_gpus[RUNID_MAX_NODES];
    int gpus;                              /* over all its nodes; 1 when no heading says more */
};

/* levels[0] is the "#" heading, levels[5] the "######" one; "" where there is none. */
void runid_from_headings(const char levels[6][128], struct run_identity *id);

/* "lm6-120.7", "lm1:2x2080ti, lm6:...": a heading that names a run rather than a model or section. */
bool runid_is_run_heading(const char *heading);

/* The figure a run heading states: "241.8" of "lm1-241.8-2.95x, baseline: 81.84", "120.7" of
 * "lm6-120.7", "339.75" of "ResNet18-lm1:3x2080ti, ..., 339.75-4.15x, baseline: 81.84"; "" when it
 * states none. As printed, so a reader knows its precision. */
void runid_headline(const char *title, char *out, int size);

/* "lm1+lm6" */
void runid_nodes(const struct run_identity *id, char *out, int size);

#endif
