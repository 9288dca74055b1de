/* export.c - a run's initial parameters and encoded data for a peer framework (see export.h). */
#include "trainer/loop/export.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/atomic_file.h"

struct bytes {
    const void *data;
    size_t size;
};

static int fill_bytes(FILE *out, const void *arg)
{
    const struct bytes *b = arg;
    return b->size == 0 || fwrite(b->data, b->size, 1, out) == 1 ? 0 : -1;
}

static int write_bytes(const char *dir, const char *name, const void *data, size_t size, struct dt_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct bytes b = {data, size};
    return atomic_write(path, fill_bytes, &b, err);
}

struct meta {
    const struct run *r;
    const struct train_config *cfg;
};

/* What the peer needs to build and train the same model the same way. */
static int fill_meta(FILE *out, const void *arg)
{
    const struct meta *m = arg;
    const struct dataset *train = &m->r->train;
    fprintf(out, "{\"format\": \"dtrain-export\", \"version\": 1, \"model\": \"%s\", \"dataset\": \"%s\", "
            "\"params\": %zu, \"length\": %d, \"vocab\": %d, \"classes\": %d, \"train\": %ld, \"test\": %ld, "
            "\"dropout\": %g, \"optimizer\": \"%s\", \"lr\": %g, \"momentum\": %g, \"weight_decay\": %g, "
            "\"batch\": %d, \"epochs\": %d, \"max_steps\": %ld, \"seed\": %lu}\n",
            m->cfg->model, m->cfg->dataset, m->r->model.num_params, train->c, train->vocab, train->classes,
            train->text.count, m->r->test.text.count, m->cfg->dropout_set ? m->cfg->dropout : TRAIN_DEFAULT_DROPOUT,
            m->cfg->optimizer, m->cfg->lr, m->cfg->momentum,
            m->cfg->weight_decay, m->cfg->batch, m->cfg->epochs, m->cfg->max_steps, (unsigned long)m->cfg->seed);
    return 0;
}

static int write_split(const char *dir, const char *name, const struct dataset *ds, struct dt_err *err)
{
    char file[64];
    snprintf(file, sizeof file, "%s.ids", name);
    if (write_bytes(dir, file, ds->text.ids, (size_t)ds->text.count * ds->text.len * sizeof *ds->text.ids, err) < 0)
        return -1;
    snprintf(file, sizeof file, "%s.labels", name);
    return write_bytes(dir, file, ds->text.labels, (size_t)ds->text.count, err);
}

int export_run(const struct run *r, const struct train_config *cfg, const char *dir, struct dt_err *err)
{
    if (r->train.vocab == 0 || !r->train.text.ids || !r->test.text.ids)
        return dt_fail(err, "--export-run writes a text dataset's tokens (wordnet, sst5, tsv), not %s", cfg->dataset);
    if (r->gpu)
        return dt_fail(err, "--export-run writes the CPU's parameters: leave out --device cuda");
    if (make_dirs(dir) < 0)
        return dt_fail(err, "--export-run %s: %s", dir, strerror(errno));
    struct meta m = {r, cfg};
    char path[4200];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    if (write_bytes(dir, "params.f32", r->params, r->model.num_params * sizeof(float), err) < 0 ||
        write_split(dir, "train", &r->train, err) < 0 || write_split(dir, "test", &r->test, err) < 0)
        return -1;
    return atomic_write(path, fill_meta, &m, err);
}
