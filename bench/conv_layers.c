/* conv_layers.c - per convolution shape, forward + backward time of im2col + GEMM against the
 * direct method, batch 128, one thread: the measurement behind conv_direct_suits().
 * Usage: conv_layers [REPEATS]     (make bench) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "trainer/backend/backend.h"
#include "trainer/backend/conv_direct.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double time_layer(struct backend *be, const struct conv_shape *s, float *x, float *w, float *b, float *y,
                         float *dx, float *dw, float *db, int repeats)
{
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = now_ms();
        be->conv_forward(be->state, s, x, w, b, y);
        be->conv_backward(be->state, s, x, w, y, dx, dw, db, false);
        double t = now_ms() - t0;
        if (t < best)
            best = t;
    }
    return best;
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 5;
    static const struct { const char *name; int c, hw, c_out, k, pad; } layers[] = {
        {"lenet conv1 1->6 5x5 28", 1, 28, 6, 5, 0},       {"lenet conv2 6->16 5x5 12", 6, 12, 16, 5, 0},
        {"cnn conv1 1->32 3x3 28", 1, 28, 32, 3, 1},       {"cnn conv2 32->64 3x3 14", 32, 14, 64, 3, 1},
        {"resnet stem 1->64 3x3 28", 1, 28, 64, 3, 1},     {"resnet 64->64 3x3 28", 64, 28, 64, 3, 1},
        {"resnet 128->128 3x3 14", 128, 14, 128, 3, 1},    {"resnet 256->256 3x3 7", 256, 7, 256, 3, 1},
        {"resnet 512->512 3x3 4", 512, 4, 512, 3, 1},
    };
    struct backend *be = backend_cpu_create(1);
    printf("| layer (batch 128), forward + backward | im2col + OpenBLAS ms | direct ms | oneDNN ms | auto picks |\n"
           "|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        struct conv_shape s = {.n = 128, .c = layers[i].c, .h = layers[i].hw, .w = layers[i].hw, .c_out = layers[i].c_out,
                               .kh = layers[i].k, .kw = layers[i].k, .stride = 1, .pad = layers[i].pad};
        s.h_out = conv_out_size(s.h, s.kh, 1, s.pad);
        s.w_out = conv_out_size(s.w, s.kw, 1, s.pad);
        size_t in = (size_t)s.n * s.c * s.h * s.w, out = (size_t)s.n * s.c_out * s.h_out * s.w_out;
        size_t wn = (size_t)s.c_out * s.c * s.kh * s.kw;
        float *x = calloc(in, 4), *dx = calloc(in, 4), *y = calloc(out, 4), *w = calloc(wn, 4), *dw = calloc(wn, 4);
        float *b = calloc((size_t)s.c_out, 4), *db = calloc((size_t)s.c_out, 4);
        for (size_t j = 0; j < in; j++)
            x[j] = (float)(j % 7) - 3;
        for (size_t j = 0; j < wn; j++)
            w[j] = (float)(j % 5) * 0.1f;
        backend_cpu_set_conv_mode(be, CPU_CONV_GEMM);
        double gemm = time_layer(be, &s, x, w, b, y, dx, dw, db, repeats);
        backend_cpu_set_conv_mode(be, CPU_CONV_DIRECT);
        double direct = time_layer(be, &s, x, w, b, y, dx, dw, db, repeats);
        backend_cpu_set_conv_mode(be, CPU_CONV_DNNL);
        double dnnl = time_layer(be, &s, x, w, b, y, dx, dw, db, repeats);
        printf("| %s | %.2f | %.2f | %.2f | %s |\n", layers[i].name, gemm, direct, dnnl,
               conv_direct_suits(&s) ? "direct" : "oneDNN");
        free(x), free(dx), free(y), free(w), free(dw), free(b), free(db);
    }
    backend_cpu_destroy(be);
    return 0;
}
