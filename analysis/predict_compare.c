/* predict_compare.c - dtrain-analyze predict beside what ran: run records (--records), grouped
 * as repeats of one experiment, and a hand-made method comparison table (--against), each cell's
 * measured mean beside the cost model's prediction for the job it ran as, and the error. */
#include "analysis/predict_compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/audit.h"
#include "common/exchange_methods.h"
#include "analysis/inputs.h"
#include "analysis/methods.h"
#include "formats/profile.h"

/* The job a record ran as: its workers' nodes and ranks per node, its servers. */
static struct cluster_shape shape_of(const struct run_record *r, const struct predict_options *o)
{
    const char *servers = strstr(r->comm_options, "servers=");
    bool colocated = methods_servers_colocated(r);
    int workers = methods_workers_of(r), nodes = r->nodes > 0 ? r->nodes : 1;
    int per_node = colocated ? workers / nodes : r->world_size / nodes;   /* a colocated server is no worker */
    per_node = per_node > 0 ? per_node : 1;
    int job_nodes = (workers + per_node - 1) / per_node;
    if (job_nodes * per_node != workers)   /* a last node not full: as many nodes of one */
        job_nodes = workers, per_node = 1;
    struct cluster_shape c = predict_shape_of_nodes(o, job_nodes, per_node);   /* the links, as measured */
    c.servers_colocated = colocated;   /* the servers as the record says they ran, not as the options */
    c.servers = !servers ? 0 : colocated ? r->nodes : atoi(servers + 8);
    c.servers_round = colocated ? predict_round_at(o, c.nodes) : NULL;
    c.servers_pieces = predict_pieces_at(o, colocated, c.nodes, workers, c.servers);
    return c;
}

/* Whether a and b are repeats of one experiment: model, batch, method and its settings, tag,
 * workers. */
static bool same_group(const struct run_record *a, const struct run_record *b)
{
    return strcmp(a->model, b->model) == 0 && a->batch_per_replica == b->batch_per_replica &&
           strcmp(a->comm, b->comm) == 0 && strcmp(a->comm_options, b->comm_options) == 0 &&
           strcmp(a->tag, b->tag) == 0 && methods_workers_of(a) == methods_workers_of(b);
}

/* Each group's mean +- std beside the prediction for that job, and the error. */
int predict_compare_records(const struct profile *p, const struct predict_options *o, const struct step_costs *s,
                            char **paths, int count, const char *tag)
{
    struct record_set set = {0};
    int rc = load_records("predict", paths, count, &set), rows = 0, predicted_rows = 0, within = 0;
    if (rc == 0)
        printf("| Method | Tag | GPUs | Runs | Measured samples/s | Predicted | Error |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; rc == 0 && i < set.count; i++) {
        const struct run_record *r = &set.runs[i];
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = same_group(&set.runs[j], r);
        if (seen || strcmp(r->model, p->model) != 0 || r->batch_per_replica != o->batch || (tag && strcmp(r->tag, tag)))
            continue;
        double sum = 0, squares = 0;
        int n = 0;
        for (int j = i; j < set.count; j++)
            if (same_group(&set.runs[j], r)) {
                double rate = set.runs[j].final_data_per_sec;
                sum += rate, squares += rate * rate, n++;
            }
        double mean = sum / n, std = n > 1 ? sqrt(fmax(0, (squares - n * mean * mean) / (n - 1))) : 0;
        struct cluster_shape c = shape_of(r, o);
        struct predict_options as_run = *o;   /* a record without node-sums=on ran without them */
        as_run.ps_node_sums_off = !strstr(r->comm_options, "node-sums=on");
        double predicted;
        int known = predict_rate(s, &c, r->comm, &as_run, &predicted);
        if (known == 2) {
            rc = 2;
            break;
        }
        printf("| %s%s%s%s | %s | %d | %d | %.1f +- %.1f | ", r->comm, r->comm_options[0] ? " (" : "",
               r->comm_options, r->comm_options[0] ? ")" : "", r->tag[0] ? r->tag : "-", methods_workers_of(r), n, mean,
               std);
        if (known == 0) {
            double error = (predicted - mean) / mean * 100;
            printf("%.1f | %+.1f%% |\n", predicted, error);
            predicted_rows++, within += fabs(error) <= 15;
        } else
            printf("- | - |\n");
        rows++;
    }
    if (rc == 0 && rows == 0)
        rc = (fprintf(stderr, "dtrain-analyze predict: no run of model %s at batch %d in the records\n", p->model,
                      o->batch), 2);
    else if (rc == 0)
        printf("\n%d of %d cells within 15%%\n", within, predicted_rows);
    free_records(&set);
    return rc;
}

/* The job of `gpus` workers, gpus_per_node a node (fewer on one node when fewer). */
static struct cluster_shape shape_of_gpus(int gpus, const struct predict_options *o)
{
    int per_node = gpus < o->gpus_per_node ? gpus : o->gpus_per_node;
    struct cluster_shape c = predict_shape_of_nodes(o, (gpus + per_node - 1) / per_node, per_node);
    c.allreduce = predict_measured_at(o, gpus);   /* an uneven last node: the job's own size */
    return c;
}

/* A method table's method cell ("ByteScheduler-A2A") as the model names it, or NULL. */
static const char *method_named(const char *cell, char *out, size_t size)
{
    const struct method_facts *m = method_find(cell);
    if (!m || strcasecmp(cell, m->name) != 0)   /* a table's cells are names, not aliases */
        return NULL;
    snprintf(out, size, "%s", m->name);
    return out;
}

/* Each cell's mean +- std beside predicted, the error, and how many cells are within 15%. */
int predict_compare_method_table(const struct predict_options *o, const struct step_costs *s, const char *path,
                                 const char *row)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return fprintf(stderr, "dtrain-analyze predict: %s: %s\n", path, strerror(errno)), 2;
    struct method_set set = {0};
    struct dt_err err;
    int rc = method_table_parse(f, path, &set, &err) < 0 ? (fprintf(stderr, "dtrain-analyze predict: %s\n", err.msg), 2) : 0;
    fclose(f);
    int cells = 0, close = 0;
    for (int t = 0; rc == 0 && t < set.count; t++) {
        const struct method_table *table = &set.tables[t];
        int shift = audit_method_shift(table);
        for (int i = 0; rc == 0 && i < table->count; i++) {
            const struct method_row *r = &table->rows[i];
            const char *last = strrchr(r->label, ',');
            char method[96];
            if (strncmp(r->label, row, strlen(row)) != 0 || !last || !method_named(last + 1 + strspn(last + 1, " "), method,
                                                                                    sizeof method))
                continue;
            for (int k = 0; rc == 0 && k < r->values; k++) {
                int gpus = audit_method_gpus(table, r, k, shift);
                if (gpus <= 0)
                    continue;
                struct cluster_shape c = shape_of_gpus(gpus, o);
                double predicted;
                if ((rc = predict_rate(s, &c, method, o, &predicted)) != 0) {
                    rc = 2;
                    continue;
                }
                double error = (predicted - r->cell[k].mean) / r->cell[k].mean * 100;
                if (cells++ == 0)
                    printf("| Method | GPUs | Measured (%s) | Predicted | Error |\n|---|---|---|---|---|\n", path);
                printf("| %s | %d | %s | %.1f | %+.1f%% |\n", method, gpus, r->cell[k].text, predicted, error);
                close += fabs(error) <= 15;
            }
        }
    }
    if (rc == 0 && cells == 0)
        rc = (fprintf(stderr, "dtrain-analyze predict: no row of %s starts with \"%s\" and names a method\n", path, row), 2);
    else if (rc == 0)
        printf("\n%d of %d cells within 15%%\n", close, cells);
    method_set_free(&set);
    return rc;
}
