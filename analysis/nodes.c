/* nodes.c - slow nodes from the runs they took part in (nodes.h). */
#include "analysis/nodes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stats.h"

/* One run of the configuration being filled. */
struct pending_run {
    char **nodes;
    int count;
    double seconds;
    char where[200];
};

/* One node's ratio in one run. */
struct sample {
    char node[64];
    double ratio;
    char where[400];
};

struct node_study {
    char label[120];
    struct pending_run *runs;
    int run_count, run_cap;
    struct sample *samples;
    int sample_count, sample_cap;
    int compared;              /* configurations that gave ratios */
};

struct node_study *nodes_study_new(void)
{
    return calloc(1, sizeof(struct node_study));
}

static void drop_runs(struct node_study *s)
{
    for (int i = 0; i < s->run_count; i++) {
        for (int k = 0; k < s->runs[i].count; k++)
            free(s->runs[i].nodes[k]);
        free(s->runs[i].nodes);
    }
    s->run_count = 0;
}

void nodes_study_free(struct node_study *s)
{
    if (!s)
        return;
    drop_runs(s);
    free(s->runs);
    free(s->samples);
    free(s);
}

int nodes_begin(struct node_study *s, const char *label)
{
    drop_runs(s);
    snprintf(s->label, sizeof s->label, "%s", label);
    return 0;
}

int nodes_add_run(struct node_study *s, const char *const *nodes, int count, double seconds, const char *where)
{
    if (count <= 0 || !(seconds > 0) || !isfinite(seconds))
        return 0;   /* nothing to compare */
    if (s->run_count == s->run_cap) {
        int cap = s->run_cap ? 2 * s->run_cap : 16;
        struct pending_run *grown = realloc(s->runs, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        s->runs = grown, s->run_cap = cap;
    }
    struct pending_run *r = &s->runs[s->run_count];
    *r = (struct pending_run){.nodes = calloc((size_t)count, sizeof(char *)), .count = count, .seconds = seconds};
    if (!r->nodes)
        return -1;
    s->run_count++;
    snprintf(r->where, sizeof r->where, "%s", where);
    for (int k = 0; k < count; k++)
        if (!(r->nodes[k] = strdup(nodes[k])))
            return -1;
    return 0;
}

static int add_sample(struct node_study *s, const char *node, double ratio, const char *where)
{
    if (s->sample_count == s->sample_cap) {
        int cap = s->sample_cap ? 2 * s->sample_cap : 64;
        struct sample *grown = realloc(s->samples, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        s->samples = grown, s->sample_cap = cap;
    }
    struct sample *x = &s->samples[s->sample_count++];
    snprintf(x->node, sizeof x->node, "%s", node);
    x->ratio = ratio;
    snprintf(x->where, sizeof x->where, "%s", where);
    return 0;
}

/* Whether the runs were on more than one set of nodes (else nothing tells the nodes apart). */
static bool on_different_nodes(const struct node_study *s)
{
    for (int i = 1; i < s->run_count; i++) {
        if (s->runs[i].count != s->runs[0].count)
            return true;
        for (int k = 0; k < s->runs[i].count; k++)
            if (strcmp(s->runs[i].nodes[k], s->runs[0].nodes[k]) != 0)
                return true;
    }
    return false;
}

int nodes_end(struct node_study *s)
{
    if (s->run_count < 2 || !on_different_nodes(s))
        return drop_runs(s), 0;
    double *t = malloc((size_t)s->run_count * sizeof *t);
    if (!t)
        return -1;
    for (int i = 0; i < s->run_count; i++)
        t[i] = s->runs[i].seconds;
    double median = stats_sort_median(t, s->run_count);
    free(t);
    s->compared++;
    for (int i = 0; i < s->run_count; i++) {
        const struct pending_run *r = &s->runs[i];
        char where[400];
        snprintf(where, sizeof where, "%s, %s", s->label, r->where);
        for (int k = 0; k < r->count; k++)
            if (add_sample(s, r->nodes[k], r->seconds / median, where) < 0)
                return -1;
    }
    drop_runs(s);
    return 0;
}

static int by_median_ratio(const void *a, const void *b)
{
    const struct node_speed *x = a, *y = b;
    if (x->median_ratio != y->median_ratio)
        return x->median_ratio < y->median_ratio ? 1 : -1;
    return strcmp(x->node, y->node);
}

/* The samples of one node into its speed. */
static int summarise_node(const struct node_study *s, const char *node, double threshold, struct node_speed *out)
{
    double *ratios = malloc((size_t)s->sample_count * sizeof *ratios);
    if (!ratios)
        return -1;
    *out = (struct node_speed){.worst_ratio = -1};
    snprintf(out->node, sizeof out->node, "%s", node);
    for (int i = 0; i < s->sample_count; i++) {
        const struct sample *x = &s->samples[i];
        if (strcmp(x->node, node) != 0)
            continue;
        ratios[out->runs++] = x->ratio;
        out->slow_runs += x->ratio >= 1 + threshold;
        if (x->ratio > out->worst_ratio)
            out->worst_ratio = x->ratio, snprintf(out->worst_where, sizeof out->worst_where, "%s", x->where);
    }
    out->median_ratio = stats_sort_median(ratios, out->runs);
    out->slow = out->slow_runs >= NODES_MIN_SLOW && out->slow_runs >= NODES_SLOW_SHARE * out->runs;
    free(ratios);
    return 0;
}

struct node_speed *nodes_rank(const struct node_study *s, double threshold, int *count, int *compared)
{
    *count = 0, *compared = s->compared;
    struct node_speed *speeds = calloc((size_t)(s->sample_count ? s->sample_count : 1), sizeof *speeds);
    if (!speeds)
        return NULL;
    for (int i = 0; i < s->sample_count; i++) {
        int seen = 0;
        while (seen < *count && strcmp(speeds[seen].node, s->samples[i].node) != 0)
            seen++;
        if (seen == *count && summarise_node(s, s->samples[i].node, threshold, &speeds[(*count)++]) < 0) {
            free(speeds);
            return *count = 0, NULL;
        }
    }
    qsort(speeds, (size_t)*count, sizeof *speeds, by_median_ratio);
    return speeds;
}
