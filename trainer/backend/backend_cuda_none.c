/* backend_cuda_none.c - the GPU entry points of a dtrain-train built without CUDA (no nvcc found,
 * or make CUDA=0): there is no device, and asking for one says how to get it. Nothing else here
 * is reached, since no cuda backend or NCCL comm can be created. */
#include <math.h>
#include <stdio.h>

#include "trainer/backend/backend_cuda.h"
#include "trainer/comm/comm_nccl.h"

static const char without[] = "this dtrain-train was built without CUDA (no nvcc at build time, or make CUDA=0)";

int backend_cuda_devices(void) { return 0; }
int backend_cuda_probe(char *why, size_t size) { return snprintf(why, size, "%s", without), 0; }
void backend_cuda_versions(char *out, size_t size) { snprintf(out, size, "%s", without); }

struct backend *backend_cuda_create(int device, const struct cuda_options *options, char *why, size_t why_size)
{
    (void)device, (void)options;
    snprintf(why, why_size, "%s", without);
    return NULL;
}

void backend_cuda_destroy(struct backend *be) { (void)be; }
const char *backend_cuda_error(const struct backend *be) { return (void)be, without; }
int backend_cuda_upload(struct backend *be, void *d, const void *h, size_t n) { return (void)be, (void)d, (void)h, (void)n, -1; }
int backend_cuda_download(struct backend *be, void *h, const void *d, size_t n) { return (void)be, (void)d, (void)h, (void)n, -1; }
int backend_cuda_sync(struct backend *be) { return (void)be, -1; }
int backend_cuda_pin(struct backend *be, void *h, size_t n, char *why, size_t size) { return (void)be, (void)h, (void)n, snprintf(why, size, "%s", without), -1; }
void backend_cuda_unpin(struct backend *be, void *h) { (void)be, (void)h; }
int backend_cuda_stage(struct backend *be, int slot, const struct cuda_copy *c, int n) { return (void)be, (void)slot, (void)c, (void)n, -1; }
int backend_cuda_staged(struct backend *be) { return (void)be, -1; }
void *backend_cuda_stream(struct backend *be) { return (void)be, NULL; }
void backend_cuda_device_name(struct backend *be, char *name, size_t size) { (void)be, snprintf(name, size, "none"); }

void backend_cuda_sgd(struct backend *be, float *p, const float *g, float *m, size_t count, float lr, float momentum,
                      float weight_decay, bool first)
{
    (void)be, (void)p, (void)g, (void)m, (void)count, (void)lr, (void)momentum, (void)weight_decay, (void)first;
}

void backend_cuda_adam_scalars(struct backend *be, float step_size, float root2)
{
    (void)be, (void)step_size, (void)root2;
}

void backend_cuda_adam(struct backend *be, float *p, const float *g, float *m, float *v, size_t count, float beta1,
                       float beta2, float eps, float weight_decay)
{
    (void)be, (void)p, (void)g, (void)m, (void)v, (void)count, (void)beta1, (void)beta2, (void)eps, (void)weight_decay;
}

int backend_cuda_capture_begin(struct backend *be) { return (void)be, -1; }
int backend_cuda_capture_end(struct backend *be, int slot) { return (void)be, (void)slot, -1; }
bool backend_cuda_graph_ready(const struct backend *be, int slot) { return (void)be, (void)slot, false; }
int backend_cuda_graph_launch(struct backend *be, int slot) { return (void)be, (void)slot, -1; }
double backend_cuda_deferred_loss(struct backend *be) { return (void)be, NAN; }

struct comm *comm_nccl_create(struct comm *host, void *compute_stream, struct dt_err *err)
{
    (void)host, (void)compute_stream;
    dt_fail(err, "%s", without);
    return NULL;
}

void comm_nccl_destroy(struct comm *c) { (void)c; }

struct cuda_staging *backend_cuda_staging_create(struct backend *be, int slots, char *why, size_t size)
{
    (void)be, (void)slots;
    snprintf(why, size, "%s", without);
    return NULL;
}
void backend_cuda_staging_destroy(struct cuda_staging *s) { (void)s; }
void backend_cuda_staging_thread(struct cuda_staging *s) { (void)s; }
int backend_cuda_staging_out(struct cuda_staging *s, int slot, float *h, const float *d, size_t n) { return (void)s, (void)slot, (void)h, (void)d, (void)n, -1; }
int backend_cuda_staging_wait(struct cuda_staging *s, int slot, double *t) { return (void)s, (void)slot, *t = -1, -1; }
int backend_cuda_staging_in(struct cuda_staging *s, float *d, const float *h, size_t n) { return (void)s, (void)d, (void)h, (void)n, -1; }
const char *backend_cuda_staging_error(const struct cuda_staging *s) { return (void)s, without; }
