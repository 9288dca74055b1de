/* profile_model.c - a profile held against a model (see profile.h): its layers, names and
 * parameter counts. */
#include "formats/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/nn/nn.h"

int profile_for_model(struct profile *p, const struct model *m, struct dt_err *err)
{
    memset(p, 0, sizeof *p);
    p->layers = model_layer_spans(m, NULL, NULL);
    size_t n = (size_t)p->layers + 1;
    p->names = calloc(n, sizeof *p->names);
    p->params = calloc(n, sizeof *p->params);
    p->forward = calloc(n, sizeof *p->forward);
    p->backward = calloc(n, sizeof *p->backward);
    const char **kinds = calloc(n, sizeof *kinds);
    size_t *first = calloc(n, sizeof *first);
    if (!p->names || !p->params || !p->forward || !p->backward || !kinds || !first) {
        free(kinds), free(first), profile_free(p);
        return dt_fail(err, "out of memory");
    }
    model_layer_spans(m, first, p->params);
    model_layer_kinds(m, kinds);
    for (int l = 0; l < p->layers; l++)
        snprintf(p->names[l], sizeof p->names[l], "%s %d", kinds[l], l);
    snprintf(p->model, sizeof p->model, "%s", m->name);
    free(kinds), free(first);
    return 0;
}

int profile_matches(const struct profile *p, const struct model *m, struct dt_err *err)
{
    struct profile mine;
    if (profile_for_model(&mine, m, err) < 0)
        return -1;
    int rc = 0;
    if (mine.layers != p->layers)
        rc = dt_fail(err, "the profile has %d layers, model %s %d (profiled: %s)", p->layers, m->name, mine.layers,
                     p->model);
    for (int l = 0; rc == 0 && l < p->layers; l++)
        if (strcmp(mine.names[l], p->names[l]) != 0 || mine.params[l] != p->params[l])
            rc = dt_fail(err, "layer %d is %s of %zu parameters in the profile, %s of %zu in model %s (profiled: %s)",
                         l, p->names[l], p->params[l], mine.names[l], mine.params[l], m->name, p->model);
    profile_free(&mine);
    return rc;
}
