/* sgemm_peak.c - this machine's single-core SGEMM rate through OpenBLAS, the yardstick for the
 * trainer's achieved GFLOP/s: the best of square sizes 256..4096. Usage: sgemm_peak */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void)
{
    openblas_set_num_threads(1);
    double best = 0;
    int best_n = 0;
    for (int n = 256; n <= 4096; n *= 2) {
        float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n), *c = malloc(sizeof(float) * n * n);
        for (long i = 0; i < (long)n * n; i++)
            a[i] = b[i] = (float)(i % 13) * 0.01f;
        int reps = n <= 512 ? 50 : n <= 1024 ? 8 : 2;
        double fastest = 1e30;
        for (int r = 0; r < reps; r++) {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
            if (s < fastest)
                fastest = s;
        }
        double gflops = 2.0 * n * n * (double)n / fastest / 1e9;
        if (gflops > best)
            best = gflops, best_n = n;
        free(a), free(b), free(c);
    }
    printf("single-core SGEMM peak (OpenBLAS): %.1f GFLOP/s (n = %d)\n", best, best_n);
    return 0;
}
