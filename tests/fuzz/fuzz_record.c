/* fuzz_record.c - libFuzzer target: any bytes through the run-record parser and through its
 * jansson reference (formats/record_ref.c). Invariants: no crash, no leak; both accept or both refuse
 * (one difference allowed: the reference also refuses a repeated key the record does not use);
 * when both accept, every field is the same; a record that parses has world_size host names. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_doubles(const double *a, const double *b, int count)
{
    return count == 0 || memcmp(a, b, (size_t)count * sizeof(double)) == 0;
}

static int same_record(const struct run_record *a, const struct run_record *b)
{
    const size_t strings[] = {offsetof(struct run_record, job_id), offsetof(struct run_record, step_id),
                              offsetof(struct run_record, model), offsetof(struct run_record, dataset),
                              offsetof(struct run_record, optimizer), offsetof(struct run_record, backend),
                              offsetof(struct run_record, comm), offsetof(struct run_record, start_time),
                              offsetof(struct run_record, end_time), offsetof(struct run_record, exit_state),
                              offsetof(struct run_record, version)};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if (strcmp((const char *)a + strings[i], (const char *)b + strings[i]) != 0)
            return 0;
    const char *const texts[][2] = {{a->job_name, b->job_name}, {a->error, b->error}, {a->tag, b->tag},
                                    {a->comm_options, b->comm_options}, {a->emulation, b->emulation}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)   /* the texts of any length */
        if (strcmp(texts[i][0], texts[i][1]) != 0)
            return 0;
    if (strcmp(a->nodelist, b->nodelist) != 0)
        return 0;
    for (int i = 0; i < a->world_size; i++)
        if (strcmp(a->hostnames[i], b->hostnames[i]) != 0)
            return 0;
    if ((a->rank_compute_read == NULL) != (b->rank_compute_read == NULL))
        return 0;
    for (int i = 0; a->rank_compute_read && i < a->world_size; i++)
        if (a->rank_compute_read[i] != b->rank_compute_read[i])
            return 0;
    return a->nodes == b->nodes && a->gpus_per_node == b->gpus_per_node && a->world_size == b->world_size &&
           a->batch_per_replica == b->batch_per_replica && a->epochs == b->epochs && a->threads == b->threads &&
           a->resumed == b->resumed && a->steps_per_rank == b->steps_per_rank && a->max_steps == b->max_steps && a->epochs_done == b->epochs_done &&
           same_doubles(&a->lr, &b->lr, 1) && same_doubles(&a->runtime_seconds, &b->runtime_seconds, 1) &&
           same_doubles(&a->peak_data_per_sec, &b->peak_data_per_sec, 1) &&
           same_doubles(&a->final_data_per_sec, &b->final_data_per_sec, 1) &&
           same_doubles(&a->tokens_per_sec, &b->tokens_per_sec, 1) &&
           same_doubles(a->epoch_seconds, b->epoch_seconds, a->epochs_done) &&
           same_doubles(a->epoch_accuracy, b->epoch_accuracy, a->epochs_done);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    struct run_record fast, reference;
    struct dt_err fast_err, reference_err;
    int fast_rc = record_parse(line, &fast, &fast_err);
    int reference_rc = record_parse_reference(line, &reference, &reference_err);
    if (fast_rc == 0 && (fast.world_size < 1 || !fast.hostnames))
        abort();
    if (fast_rc != reference_rc && !(fast_rc == 0 && strstr(reference_err.msg, "duplicate")))
        abort();
    if (fast_rc == 0 && reference_rc == 0 && !same_record(&fast, &reference))
        abort();
    if (fast_rc == 0)
        record_free(&fast);
    if (reference_rc == 0)
        record_free(&reference);
    free(line);
    return 0;
}
