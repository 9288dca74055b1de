/* grouping.h - which consecutive layers' gradients travel together, the arithmetic behind MG-WFBP
 * and Horovod-style fusion, kept free of MPI so it is tested on hand-worked examples.
 *
 * Layers are numbered from the input (0) to the output (L - 1); backward finishes them from L - 1
 * down to 0. A plan is merged[l] for l >= 1: layer l's gradients go out with layer l - 1's (then
 * with whatever l - 1 goes with). merged[0] is always false. Groups are runs of merged layers. */
#ifndef GROUPING_H
#define GROUPING_H

#include <stdbool.h>
#include <stddef.h>

/* An allreduce of `bytes` takes alpha + beta * bytes seconds (the alpha-beta model). */
struct alpha_beta {
    double alpha, beta;
};

/* MG-WFBP's rule (Shi, Chu, Li, INFOCOM 2019; HKBU-HPML/MG-WFBP _generate_groups_mgwfbp): with
 * backward[l] the seconds layer l's backward takes and bytes[l] its gradients, walk from the last
 * layer towards the first and merge layer l into l - 1 when l - 1's gradients are ready before
 * l's allreduce could start plus alpha (one start-up saved outweighs the wait). Fills merged[L],
 * returns the number of groups; *finish (may be NULL) gets the predicted end of the last
 * allreduce, counted from the start of backward. */
int grouping_mgwfbp(int layers, const double *backward, const size_t *bytes, struct alpha_beta cost, bool *merged,
                    double *finish);

/* Horovod's fusion by size (HKBU-HPML/MG-WFBP _generate_groups_with_threshold): from the last layer
 * towards the first, layers join the open group until it holds threshold bytes or more. 0: every
 * layer alone (WFBP); larger than the model: one group (BSP). Returns the number of groups. */
int grouping_threshold(int layers, const size_t *bytes, size_t threshold, bool *merged);

/* The least-squares line seconds = alpha + beta * bytes through n >= 2 measurements. 0, or -1 when
 * the sizes do not differ. */
int grouping_fit(int n, const double *bytes, const double *seconds, struct alpha_beta *cost);

/* The allreduces MG-WFBP's plan is fitted on: GROUPING_FIT_SIZES sizes from GROUPING_FIT_FIRST_BYTES,
 * doubling (32 KiB to 2 MiB; dtrain-train times them on the job's links, the cost model reads them
 * off its measured allreduce, so both plan alike). */
#define GROUPING_FIT_SIZES 7
#define GROUPING_FIT_FIRST_BYTES ((size_t)32 << 10)

/* The alpha and beta MG-WFBP plans with from such a fit: a start-up or a rate fitted below zero (too
 * small to measure) is none. */
struct alpha_beta grouping_plan_cost(struct alpha_beta fit);

#endif
