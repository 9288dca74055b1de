/* restart.c - checkpoints and resumption of a run, and --params-out (see restart.h). */
#include "trainer/loop/restart.h"

#include <stdio.h>

#include "common/atomic_file.h"
#include "trainer/loop/checkpoint.h"

/* What must match for a checkpoint to belong to this run (FNV-1a over its description). */
static uint64_t run_fingerprint(const struct train_config *cfg, const struct model *m, int workers)
{
    char text[512];
    snprintf(text, sizeof text, "%s|%s|%s|%d|%d|%llu|%zu|%zu", cfg->model, cfg->dataset, cfg->optimizer, cfg->batch,
             workers, (unsigned long long)cfg->seed, m->num_params, m->num_buffers);
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = text; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return h;
}

static struct checkpoint checkpoint_view(struct run *r, const struct train_config *cfg)
{
    return (struct checkpoint){.fingerprint = run_fingerprint(cfg, &r->model, r->workers.count),
                               .num_params = r->model.num_params, .num_buffers = r->model.num_buffers,
                               .params = r->params, .buffers = r->buffers, .opt_m = r->opt.m, .opt_v = r->opt.v,
                               .opt_step = r->opt.step};
}

/* Every rank's state = rank 0's (after rank 0 read a checkpoint). */
static int broadcast_state(struct run *r, struct comm *comm, struct dt_err *err)
{
    size_t n = r->model.num_params * sizeof(float);
    return comm->broadcast(comm, r->params, n, 0, err) < 0 ||
                   comm->broadcast(comm, r->buffers, r->model.num_buffers * sizeof(float), 0, err) < 0 ||
                   comm->broadcast(comm, r->opt.m, n, 0, err) < 0 ||
                   (r->opt.v && comm->broadcast(comm, r->opt.v, n, 0, err) < 0)
               ? -1 : 0;
}

long restart_resume(struct run *r, const struct train_config *cfg, int *resumed, struct dt_err *err)
{
    struct comm *comm = r->workers.comm;
    struct checkpoint ck = checkpoint_view(r, cfg);
    long found = 0;
    if (comm->rank == 0) {
        int rc = checkpoint_load_newest(cfg->checkpoint_dir, &ck, err);
        found = rc < 0 ? -1 : rc == 1;
    }
    if (comm->broadcast(comm, &found, sizeof found, 0, err) < 0 || found < 0)
        return -1;
    if (!found)
        return 0;
    long state[3] = {ck.step, ck.opt_step, ck.resumed};
    if (comm->broadcast(comm, state, sizeof state, 0, err) < 0 || broadcast_state(r, comm, err) < 0)
        return -1;
    if (state[0] < 0 || state[1] < 0)   /* load_one refuses such files: this would be a bug */
        return dt_fail(err, "checkpoint in %s: step %ld, optimizer step %ld", cfg->checkpoint_dir, state[0], state[1]);
    r->opt.step = state[1];
    *resumed = (int)state[2] + 1;
    if (device_upload_state(r, err) < 0)
        return -1;
    return state[0];
}

int restart_save(struct run *r, const struct train_config *cfg, long step, int resumed, struct dt_err *err)
{
    if (device_download_state(r, err) < 0)
        return -1;
    struct checkpoint ck = checkpoint_view(r, cfg);
    ck.step = step;
    ck.opt_step = r->opt.step;
    ck.resumed = resumed;
    return r->workers.comm->rank == 0 ? checkpoint_save(cfg->checkpoint_dir, &ck, err) : 0;
}

struct params_out {
    const float *params;
    size_t count;
};

static int fill_params(FILE *out, const void *arg)
{
    const struct params_out *p = arg;
    return fwrite(p->params, sizeof(float), p->count, out) == p->count ? 0 : -1;
}

int restart_write_params(struct run *r, const char *prefix, struct dt_err *err)
{
    if (device_download(r, r->params, r->dev.params, r->model.num_params, err) < 0)
        return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s.rank%d", prefix, r->workers.comm->rank);
    struct params_out p = {r->params, r->model.num_params};
    struct dt_err inner;
    if (atomic_write(path, fill_params, &p, &inner) < 0)
        return dt_fail(err, "--params-out: %s", inner.msg);
    return 0;
}
