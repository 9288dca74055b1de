/* backend_cpu.c - the fast CPU backend. Linear layers are OpenBLAS SGEMMs. Convolutions take the
 * way measured fastest for their shape (bench/conv_layers): one input channel, computed directly
 * (conv_direct.c); otherwise oneDNN's JIT kernels (conv_dnnl.c), about twice OpenBLAS's speed;
 * im2col + SGEMM over a chunk of images remains for when oneDNN refuses a shape. The language
 * models' attention, layer norm and GELU are seq_fast.c's. The other memory-bound kernels are
 * shared with the reference backend. */
#include "trainer/backend/backend.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/backend/conv_direct.h"
#include "trainer/backend/conv_dnnl.h"
#include "trainer/backend/kernels.h"
#include "trainer/backend/seq_fast.h"

/* im2col columns for one chunk of images: 8 M floats (32 MiB) keeps a chunk in memory without
 * growing with the batch, and is big enough that every GEMM stays efficient. */
#define CPU_COLS_MAX ((size_t)8 << 20)

struct cpu_state {
    int threads;
    enum cpu_conv_mode conv_mode;
    struct conv_dnnl *dnnl;      /* NULL when oneDNN could not start: GEMM then */
    float *cols, *out, *dcols, *direct;   /* scratch, grown on demand */
    size_t cols_cap, out_cap, dcols_cap, direct_cap;
    bool failed;                 /* an allocation failed: later calls do nothing (the caller checks) */
};

static float *scratch_buffer(struct cpu_state *st, float **buf, size_t *cap, size_t count)
{
    if (count > *cap) {
        free(*buf);
        *buf = malloc(count * sizeof(float));
        *cap = *buf ? count : 0;
        if (!*buf)
            st->failed = true;
    }
    return *buf;
}

static void cpu_linear_forward(void *state, const float *x, const float *w, const float *b, float *y, int n, int in,
                               int out)
{
    (void)state;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
    if (b)
        for (int i = 0; i < n; i++)
            for (int o = 0; o < out; o++)
                y[(size_t)i * out + o] += b[o];
}

static void cpu_linear_backward(void *state, const float *x, const float *w, const float *dy, float *dx, float *dw,
                                float *db, int n, int in, int out, bool accumulate)
{
    (void)state;
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dy, out, w, in, accumulate ? 1.0f : 0.0f,
                    dx, in);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw, in);
    if (db)
        for (int i = 0; i < n; i++)
            for (int o = 0; o < out; o++)
                db[o] += dy[(size_t)i * out + o];
}

/* How many images one im2col chunk holds. */
static int chunk_images(const struct conv_shape *s)
{
    size_t per_image = (size_t)s->c * s->kh * s->kw * s->h_out * s->w_out;
    size_t images = CPU_COLS_MAX / (per_image ? per_image : 1);
    if (images < 1)
        images = 1;
    return images > (size_t)s->n ? s->n : (int)images;
}

/* The output columns [*lo, *hi) whose input column ox*stride - pad + kx is inside the image. */
static void valid_span(const struct conv_shape *s, int kx, int *lo, int *hi)
{
    int first = s->pad - kx;   /* smallest ox*stride that lands on column 0 */
    *lo = first <= 0 ? 0 : (first + s->stride - 1) / s->stride;
    int last = s->w - 1 + s->pad - kx;   /* largest ox*stride that lands on column w-1 */
    *hi = last < 0 ? 0 : last / s->stride + 1;
    if (*hi > s->w_out)
        *hi = s->w_out;
    if (*lo > *hi)
        *lo = *hi;
}

/* cols[(ci*kh+ky)*kw+kx][img*hw_out + oy*w_out + ox] = x[first+img][ci][iy][ix] (0 in the padding) */
static void im2col(const struct conv_shape *s, const float *restrict x, int first, int images, float *restrict cols)
{
    size_t hw_out = (size_t)s->h_out * s->w_out, row_len = hw_out * images;
    for (int ci = 0; ci < s->c; ci++)
        for (int ky = 0; ky < s->kh; ky++)
            for (int kx = 0; kx < s->kw; kx++) {
                float *row = cols + ((size_t)(ci * s->kh + ky) * s->kw + kx) * row_len;
                int lo, hi;
                valid_span(s, kx, &lo, &hi);
                for (int img = 0; img < images; img++) {
                    const float *plane = x + ((size_t)(first + img) * s->c + ci) * s->h * s->w;
                    for (int oy = 0; oy < s->h_out; oy++) {
                        int iy = oy * s->stride - s->pad + ky;
                        float *d = row + img * hw_out + (size_t)oy * s->w_out;
                        if (iy < 0 || iy >= s->h) {
                            memset(d, 0, sizeof(float) * s->w_out);
                            continue;
                        }
                        const float *src = plane + (size_t)iy * s->w - s->pad + kx;   /* src[ox*stride] */
                        memset(d, 0, sizeof(float) * lo);
                        if (s->stride == 1)
                            memcpy(d + lo, src + lo, sizeof(float) * (hi - lo));
                        else
                            for (int ox = lo; ox < hi; ox++)
                                d[ox] = src[ox * s->stride];
                        memset(d + hi, 0, sizeof(float) * (s->w_out - hi));
                    }
                }
            }
}

/* The inverse scatter: dx[first+img][ci][iy][ix] += dcols[...] */
static void col2im(const struct conv_shape *s, const float *restrict dcols, int first, int images, float *restrict dx)
{
    size_t hw_out = (size_t)s->h_out * s->w_out, row_len = hw_out * images;
    for (int ci = 0; ci < s->c; ci++)
        for (int ky = 0; ky < s->kh; ky++)
            for (int kx = 0; kx < s->kw; kx++) {
                const float *row = dcols + ((size_t)(ci * s->kh + ky) * s->kw + kx) * row_len;
                int lo, hi;
                valid_span(s, kx, &lo, &hi);
                for (int img = 0; img < images; img++) {
                    float *plane = dx + ((size_t)(first + img) * s->c + ci) * s->h * s->w;
                    for (int oy = 0; oy < s->h_out; oy++) {
                        int iy = oy * s->stride - s->pad + ky;
                        if (iy < 0 || iy >= s->h)
                            continue;
                        float *d = plane + (size_t)iy * s->w - s->pad + kx;
                        const float *g = row + img * hw_out + (size_t)oy * s->w_out;
                        for (int ox = lo; ox < hi; ox++)
                            d[ox * s->stride] += g[ox];
                    }
                }
            }
}

static bool use_direct(const struct cpu_state *st, const struct conv_shape *s)
{
    if (s->stride != 1 || st->conv_mode == CPU_CONV_GEMM || st->conv_mode == CPU_CONV_DNNL)
        return false;
    return st->conv_mode == CPU_CONV_DIRECT || conv_direct_suits(s);
}

static bool use_dnnl(const struct cpu_state *st)
{
    return st->dnnl && (st->conv_mode == CPU_CONV_AUTO || st->conv_mode == CPU_CONV_DNNL);
}

static void cpu_conv_forward(void *state, const struct conv_shape *s, const float *x, const float *w, const float *b,
                             float *y)
{
    struct cpu_state *st = state;
    if (use_direct(st, s)) {
        float *work = scratch_buffer(st, &st->direct, &st->direct_cap, conv_direct_scratch(s));
        if (!st->failed)
            conv_direct_forward(s, x, w, b, y, work);
        return;
    }
    if (use_dnnl(st) && conv_dnnl_forward(st->dnnl, s, x, w, b, y) == 0)
        return;   /* (a shape oneDNN refuses falls through to GEMM) */
    int per_chunk = chunk_images(s);
    int k = s->c * s->kh * s->kw;
    size_t hw_out = (size_t)s->h_out * s->w_out;
    bool keep = s->cols && per_chunk == s->n;   /* one chunk: backward can reuse the columns */
    float *cols = keep ? s->cols : scratch_buffer(st, &st->cols, &st->cols_cap, (size_t)k * hw_out * per_chunk);
    float *out = scratch_buffer(st, &st->out, &st->out_cap, (size_t)s->c_out * hw_out * per_chunk);
    if (st->failed)
        return;
    for (int first = 0; first < s->n; first += per_chunk) {
        int images = s->n - first < per_chunk ? s->n - first : per_chunk;
        int cols_n = (int)(hw_out * images);
        im2col(s, x, first, images, cols);
        /* out[c_out][img*hw + p] = w[c_out][k] . cols[k][img*hw + p] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->c_out, cols_n, k, 1.0f, w, k, cols, cols_n, 0.0f,
                    out, cols_n);
        for (int img = 0; img < images; img++)
            for (int co = 0; co < s->c_out; co++) {
                float *dst = y + ((size_t)(first + img) * s->c_out + co) * hw_out;
                const float *src = out + (size_t)co * cols_n + img * hw_out;
                float bias = b ? b[co] : 0.0f;
                for (size_t p = 0; p < hw_out; p++)
                    dst[p] = src[p] + bias;
            }
    }
}

static void cpu_conv_backward(void *state, const struct conv_shape *s, const float *x, const float *w, const float *dy,
                              float *dx, float *dw, float *db, bool accumulate)
{
    struct cpu_state *st = state;
    if (use_direct(st, s)) {
        float *work = scratch_buffer(st, &st->direct, &st->direct_cap, conv_direct_scratch(s));
        if (!st->failed)
            conv_direct_backward(s, x, w, dy, dx, dw, db, work, accumulate);
        return;
    }
    if (use_dnnl(st) && conv_dnnl_backward(st->dnnl, s, x, w, dy, dx, dw, db, accumulate) == 0)
        return;
    if (dx && !accumulate)   /* col2im scatters: start from zero */
        memset(dx, 0, (size_t)s->n * s->c * s->h * s->w * sizeof(float));
    int per_chunk = chunk_images(s);
    int k = s->c * s->kh * s->kw;
    size_t hw_out = (size_t)s->h_out * s->w_out;
    bool kept = s->cols && per_chunk == s->n;   /* the forward pass left the columns there */
    float *cols = kept ? s->cols : scratch_buffer(st, &st->cols, &st->cols_cap, (size_t)k * hw_out * per_chunk);
    float *dyc = scratch_buffer(st, &st->out, &st->out_cap, (size_t)s->c_out * hw_out * per_chunk);
    float *dcols = scratch_buffer(st, &st->dcols, &st->dcols_cap, (size_t)k * hw_out * per_chunk);
    if (st->failed)
        return;
    for (int first = 0; first < s->n; first += per_chunk) {
        int images = s->n - first < per_chunk ? s->n - first : per_chunk;
        int cols_n = (int)(hw_out * images);
        /* dy of the chunk as one [c_out][img*hw + p] matrix */
        for (int img = 0; img < images; img++)
            for (int co = 0; co < s->c_out; co++)
                memcpy(dyc + (size_t)co * cols_n + img * hw_out, dy + ((size_t)(first + img) * s->c_out + co) * hw_out,
                       hw_out * sizeof(float));
        if (db)
            for (int co = 0; co < s->c_out; co++) {
                double sum = 0;
                for (int p = 0; p < cols_n; p++)
                    sum += dyc[(size_t)co * cols_n + p];
                db[co] += (float)sum;
            }
        if (!kept)
            im2col(s, x, first, images, cols);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->c_out, k, cols_n, 1.0f, dyc, cols_n, cols, cols_n, 1.0f,
                    dw, k);
        if (!dx)
            continue;   /* the model's input: no gradient wanted */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, cols_n, s->c_out, 1.0f, w, k, dyc, cols_n, 0.0f, dcols,
                    cols_n);
        col2im(s, dcols, first, images, dx);
    }
}

struct backend *backend_cpu_create(int threads)
{
    struct backend *b = calloc(1, sizeof *b);
    struct cpu_state *st = calloc(1, sizeof *st);
    if (!b || !st) {
        free(b);
        free(st);
        return NULL;
    }
    *b = *backend_reference();
    b->name = "cpu";
    b->state = st;
    st->threads = threads > 0 ? threads : 1;
    openblas_set_num_threads(st->threads);
    omp_set_num_threads(st->threads);   /* oneDNN's pool (Debian builds it with OpenMP) */
    st->dnnl = conv_dnnl_create();
    b->linear_forward = cpu_linear_forward;
    b->linear_backward = cpu_linear_backward;
    b->conv_forward = cpu_conv_forward;
    b->conv_backward = cpu_conv_backward;
    b->attention_forward = fast_attention_forward;
    b->attention_backward = fast_attention_backward;
    b->layernorm_forward = fast_layernorm_forward;
    b->layernorm_backward = fast_layernorm_backward;
    b->gelu_forward = fast_gelu_forward;
    b->gelu_backward = fast_gelu_backward;
    return b;
}

void backend_cpu_set_conv_mode(struct backend *backend, enum cpu_conv_mode mode)
{
    ((struct cpu_state *)backend->state)->conv_mode = mode;
}

bool backend_cpu_failed(const struct backend *backend)
{
    return ((const struct cpu_state *)backend->state)->failed;
}

void backend_cpu_destroy(struct backend *backend)
{
    if (!backend)
        return;
    struct cpu_state *st = backend->state;
    free(st->cols);
    free(st->out);
    free(st->dcols);
    free(st->direct);
    conv_dnnl_destroy(st->dnnl);
    free(st);
    free(backend);
}
