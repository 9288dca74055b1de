/* seq_gelu.c - the fast CPU backend's GELU (erf form), alone in a file because it is compiled with
 * -ffast-math: that lets GCC call glibc's vector erff and expf (libmvec) on 8 floats at a time,
 * 3-4x the scalar calls, where nothing else may change (-ffast-math would break the -INFINITY of
 * seq_fast.c's masked softmax). Inputs are finite activations; the results agree with the
 * reference (seq_kernels.c) to float precision, as test_seq checks. */
#include "trainer/backend/seq_fast.h"

#include <math.h>

void fast_gelu_forward(void *state, const float *restrict x, float *restrict y, size_t count)
{
    (void)state;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < count; i++)
        y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
}

void fast_gelu_backward(void *state, const float *restrict x, const float *restrict dy, float *restrict dx,
                        size_t count, bool accumulate)
{
    (void)state;
    const float k = (float)(0.5 * M_2_SQRTPI * M_SQRT1_2);   /* 1 / sqrt(2 pi) */
    if (accumulate) {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < count; i++)
            dx[i] += dy[i] * (0.5f * (1.0f + erff(x[i] * (float)M_SQRT1_2)) + x[i] * expf(-0.5f * x[i] * x[i]) * k);
    } else {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < count; i++)
            dx[i] = dy[i] * (0.5f * (1.0f + erff(x[i] * (float)M_SQRT1_2)) + x[i] * expf(-0.5f * x[i] * x[i]) * k);
    }
}
