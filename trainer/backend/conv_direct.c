/* conv_direct.c - stride-1 convolutions computed directly, for the small layers where im2col +
 * GEMM spends more time copying than multiplying (LeNet: 6 output channels, K = 25).
 *
 * The "wide row" trick: over a zero-padded input plane of width wp, output position (oy, ox) and
 * tap (ky, kx) read input index (oy + ky) * wp + ox + kx. Computing outputs for ox in [0, wp) as
 * well, q = oy * wp + ox runs contiguously, so every inner loop is one long unit-stride run
 * (acc[q] += w * in[q + ky * wp + kx]) that vectorises; the wp - w_out extra columns per row are
 * dropped at the end. Four output channels are computed together so each input load feeds four
 * multiply-adds. Dot products keep 16 separate lane sums, so they vectorise without -ffast-math. */
#include "trainer/backend/conv_direct.h"

#include <stdlib.h>
#include <string.h>

/* Compiled for AVX-512 and AVX2 as well as plain x86-64, chosen at run time. Not under a sanitizer:
 * the choosing (an ifunc resolver) runs while the program is still being loaded, before the
 * sanitizer's runtime, and ThreadSanitizer's instrumented resolver crashes there. */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define HOT_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HOT_LOOP
#endif

#define LANES 16

struct geometry {
    int hp, wp;        /* padded input plane */
    size_t plane;      /* hp * wp */
    size_t len;        /* wide outputs per output plane: (h_out - 1) * wp + w_out */
};

static struct geometry geometry_of(const struct conv_shape *s)
{
    struct geometry g = {.hp = s->h + 2 * s->pad, .wp = s->w + 2 * s->pad};
    g.plane = (size_t)g.hp * g.wp;
    g.len = (size_t)(s->h_out - 1) * g.wp + s->w_out;
    return g;
}

size_t conv_direct_scratch(const struct conv_shape *s)
{
    struct geometry g = geometry_of(s);
    /* padded input planes, their gradient, 4 wide accumulators or c_out wide dy planes */
    return 2 * (size_t)s->c * g.plane + (size_t)(s->c_out > 4 ? s->c_out : 4) * g.len;
}

bool conv_direct_suits(const struct conv_shape *s)
{
    /* Measured (bench/conv_layers, batch 128, one thread): direct is 2.4x faster on LeNet's conv1
     * (1->6, 5x5), 1.3x on the CNN's conv1 and 1.2x on the ResNet stem (1->64, 3x3), all with one
     * input channel; from 6 input channels on (LeNet's conv2) im2col + GEMM wins, by 2-18x for
     * ResNet's wide layers. */
    return s->stride == 1 && s->c * s->kh * s->kw <= 32;
}

/* Copies image n's channels into zero-padded planes. */
static void pad_planes(const struct conv_shape *s, const struct geometry *g, const float *x, float *padded)
{
    if (s->pad == 0) {
        memcpy(padded, x, (size_t)s->c * g->plane * sizeof(float));
        return;
    }
    memset(padded, 0, (size_t)s->c * g->plane * sizeof(float));
    for (int ci = 0; ci < s->c; ci++)
        for (int y = 0; y < s->h; y++)
            memcpy(padded + ci * g->plane + (size_t)(y + s->pad) * g->wp + s->pad, x + ((size_t)ci * s->h + y) * s->w,
                   s->w * sizeof(float));
}

HOT_LOOP
static void axpy4(size_t len, const float *restrict src, float w0, float w1, float w2, float w3, float *restrict a0,
                  float *restrict a1, float *restrict a2, float *restrict a3)
{
    for (size_t q = 0; q < len; q++) {
        float v = src[q];
        a0[q] += w0 * v;
        a1[q] += w1 * v;
        a2[q] += w2 * v;
        a3[q] += w3 * v;
    }
}

HOT_LOOP
static void axpy2(size_t len, const float *restrict src, float w0, float w1, float *restrict a0, float *restrict a1)
{
    for (size_t q = 0; q < len; q++) {
        float v = src[q];
        a0[q] += w0 * v;
        a1[q] += w1 * v;
    }
}

HOT_LOOP
static void axpy1(size_t len, const float *restrict src, float w, float *restrict acc)
{
    for (size_t q = 0; q < len; q++)
        acc[q] += w * src[q];
}

/* sum_q a[q] * b[q] with LANES independent partial sums (vectorises without reassociation). */
HOT_LOOP
static float dot_product(size_t len, const float *restrict a, const float *restrict b)
{
    float part[LANES] = {0};
    size_t q = 0;
    for (; q + LANES <= len; q += LANES)
        for (int l = 0; l < LANES; l++)
            part[l] += a[q + l] * b[q + l];
    float sum = 0;
    for (int l = 0; l < LANES; l++)
        sum += part[l];
    for (; q < len; q++)
        sum += a[q] * b[q];
    return sum;
}

/* sum of a plane, LANES partial sums */
HOT_LOOP
static float plane_sum(size_t len, const float *restrict a)
{
    float part[LANES] = {0};
    size_t q = 0;
    for (; q + LANES <= len; q += LANES)
        for (int l = 0; l < LANES; l++)
            part[l] += a[q + l];
    float sum = 0;
    for (int l = 0; l < LANES; l++)
        sum += part[l];
    for (; q < len; q++)
        sum += a[q];
    return sum;
}

void conv_direct_forward(const struct conv_shape *s, const float *x, const float *w, const float *b, float *y,
                         float *scratch)
{
    struct geometry g = geometry_of(s);
    float *padded = scratch, *acc = scratch + 2 * (size_t)s->c * g.plane;
    int taps = s->kh * s->kw;
    size_t in_size = (size_t)s->c * s->h * s->w, out_plane = (size_t)s->h_out * s->w_out;
    for (int n = 0; n < s->n; n++) {
        pad_planes(s, &g, x + n * in_size, padded);
        for (int co = 0; co < s->c_out; co += 4) {
            int group = s->c_out - co < 4 ? s->c_out - co : 4;
            for (int j = 0; j < group; j++) {
                float bias = b ? b[co + j] : 0.0f;
                for (size_t q = 0; q < g.len; q++)
                    acc[j * g.len + q] = bias;
            }
            for (int ci = 0; ci < s->c; ci++)
                for (int ky = 0; ky < s->kh; ky++)
                    for (int kx = 0; kx < s->kw; kx++) {
                        const float *src = padded + ci * g.plane + (size_t)ky * g.wp + kx;
                        size_t tap = (size_t)ci * taps + ky * s->kw + kx, per_co = (size_t)s->c * taps;
                        if (group == 4)
                            axpy4(g.len, src, w[(co + 0) * per_co + tap], w[(co + 1) * per_co + tap],
                                  w[(co + 2) * per_co + tap], w[(co + 3) * per_co + tap], acc, acc + g.len,
                                  acc + 2 * g.len, acc + 3 * g.len);
                        else if (group >= 2)
                            axpy2(g.len, src, w[co * per_co + tap], w[(co + 1) * per_co + tap], acc, acc + g.len);
                        if (group == 3 || group == 1)
                            axpy1(g.len, src, w[(co + group - 1) * per_co + tap], acc + (group - 1) * g.len);
                    }
            for (int j = 0; j < group; j++)
                for (int oy = 0; oy < s->h_out; oy++)
                    memcpy(y + ((size_t)n * s->c_out + co + j) * out_plane + (size_t)oy * s->w_out,
                           acc + j * g.len + (size_t)oy * g.wp, s->w_out * sizeof(float));
        }
    }
}

void conv_direct_backward(const struct conv_shape *s, const float *x, const float *w, const float *dy, float *dx,
                          float *dw, float *db, float *scratch, bool accumulate)
{
    struct geometry g = geometry_of(s);
    float *padded = scratch, *dpadded = scratch + (size_t)s->c * g.plane, *wide = dpadded + (size_t)s->c * g.plane;
    int taps = s->kh * s->kw;
    size_t in_size = (size_t)s->c * s->h * s->w, out_plane = (size_t)s->h_out * s->w_out, per_co = (size_t)s->c * taps;
    for (int n = 0; n < s->n; n++) {
        /* dy of this image on wide rows, zero in the dropped columns */
        for (int co = 0; co < s->c_out; co++) {
            float *d = wide + co * g.len;
            const float *src = dy + ((size_t)n * s->c_out + co) * out_plane;
            for (int oy = 0; oy < s->h_out; oy++) {
                memcpy(d + (size_t)oy * g.wp, src + (size_t)oy * s->w_out, s->w_out * sizeof(float));
                if (oy + 1 < s->h_out)
                    memset(d + (size_t)oy * g.wp + s->w_out, 0, (g.wp - s->w_out) * sizeof(float));
            }
            if (db)
                db[co] += plane_sum(out_plane, src);
        }
        pad_planes(s, &g, x + n * in_size, padded);
        for (int co = 0; co < s->c_out; co++)
            for (int ci = 0; ci < s->c; ci++)
                for (int ky = 0; ky < s->kh; ky++)
                    for (int kx = 0; kx < s->kw; kx++)
                        dw[co * per_co + (size_t)ci * taps + ky * s->kw + kx] +=
                            dot_product(g.len, wide + co * g.len, padded + ci * g.plane + (size_t)ky * g.wp + kx);
        if (!dx)
            continue;
        memset(dpadded, 0, (size_t)s->c * g.plane * sizeof(float));
        for (int ci = 0; ci < s->c; ci++)
            for (int ky = 0; ky < s->kh; ky++)
                for (int kx = 0; kx < s->kw; kx++) {
                    float *dst = dpadded + ci * g.plane + (size_t)ky * g.wp + kx;
                    for (int co = 0; co < s->c_out; co++)
                        axpy1(g.len, wide + co * g.len, w[co * per_co + (size_t)ci * taps + ky * s->kw + kx], dst);
                }
        float *dxn = dx + n * in_size;
        for (int ci = 0; ci < s->c; ci++)
            for (int yy = 0; yy < s->h; yy++) {
                const float *src = dpadded + ci * g.plane + (size_t)(yy + s->pad) * g.wp + s->pad;
                float *d = dxn + ((size_t)ci * s->h + yy) * s->w;
                for (int xx = 0; xx < s->w; xx++)
                    d[xx] = (accumulate ? d[xx] : 0.0f) + src[xx];
            }
    }
}
