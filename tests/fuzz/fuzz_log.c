/* fuzz_log.c - libFuzzer target: any bytes as a trainer log or notebook through the seed-log
 * reader and the notebook audit. Invariants: no crash, no leak; every run has a line, a peak
 * that is a rate (finite, >= 0) and an accuracy in [0, 1] or none; at least one GPU; a baseline
 * that is a 1-GPU run. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/audit.h"
#include "analysis/throughput.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *in = fmemopen((void *)data, size, "r");
    if (!in)
        return 0;
    struct log_runs runs = {0};
    if (throughput_read(in, "fuzz", &runs, &(struct dt_err){0}) == 0) {
        throughput_baselines(&runs);
        for (int i = 0; i < runs.count; i++) {
            const struct log_run *r = &runs.runs[i];
            if (r->line < 1 || !(r->peak_data_per_sec >= 0) || isinf(r->peak_data_per_sec) ||
                (!isnan(r->final_accuracy) && (r->final_accuracy < 0 || r->final_accuracy > 1)))
                abort();
            if (r->id.gpus < 1 || r->id.node_count < 0 || r->id.node_count > RUNID_MAX_NODES ||
                (r->baseline && (r->baseline->id.gpus != 1 || isinf(r->speedup))))
                abort();
        }
        struct audit a = {0};
        if (audit_notebook(&runs, &a) > runs.count)
            abort();
        audit_free(&a);
    }
    free(runs.runs);
    fclose(in);
    return 0;
}
