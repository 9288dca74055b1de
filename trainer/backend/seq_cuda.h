/* seq_cuda.h - what the language models' GPU files (seq_cuda.cu, attention_cuda.cu,
 * attention_fused_cuda.cu) share: the loops and grids their kernels walk elements with, and the
 * fused attention's entry points (their warp reductions are cuda_state.h's; their draws are
 * backend.h's seq_noise, which CUDA files compile for the GPU too). Device code: included by .cu
 * files only. */
#ifndef DTRAIN_SEQ_CUDA_H
#define DTRAIN_SEQ_CUDA_H

#include "trainer/backend/cuda_state.h"

namespace dtrain_cuda {

/* A loop over rows with a warp a row: every lane of a warp takes the same rows. */
#define WARP_STRIDE(row, rows)                                                                       \
    for (size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32; row < (rows);           \
         row += (size_t)gridDim.x * blockDim.x / 32)

/* A sample's elements as a grid: blockIdx.y (strided) the sample, the rest of the grid strided over
 * its elements, so that no thread divides an element's index to find its sample (a division an
 * element, in kernels that otherwise only move memory). */
#define SAMPLE_STRIDE(i, n, e, per_sample)                                                          \
    for (size_t i = blockIdx.y; i < (size_t)(n); i += gridDim.y)                                    \
        for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < (per_sample);            \
             e += (size_t)gridDim.x * blockDim.x)

#define LAUNCH(st, count) blocks_for(count), THREADS, 0, (st)->stream

/* SAMPLE_STRIDE's grid: a row of blocks a sample (at most 65535 rows, strided past), each row
 * covering the sample's elements. */
inline dim3 sample_grid(int n, size_t per_sample)
{
    unsigned rows = n < 1 ? 1 : n < 65535 ? (unsigned)n : 65535;
    size_t across = (per_sample + THREADS - 1) / THREADS, most = 65535 * 16 / rows;
    return dim3((unsigned)(across < 1 ? 1 : across < most ? across : most), rows);
}
#define LAUNCH_SAMPLES(st, n, per_sample) sample_grid(n, per_sample), THREADS, 0, (st)->stream

/* bf16 mode's fused attention (attention_fused_cuda.cu), backend.h's attention_forward and
 * attention_backward for the shapes it takes: false (nothing done) for the others. */
bool fused_attention_forward(cuda_state *st, const float *qkv, const float *tokens, float *probs, float *y, int n,
                             int T, int H, int heads, const struct seq_draw *drop);
bool fused_attention_backward(cuda_state *st, const float *qkv, const float *probs, const float *dy, float *dqkv,
                              int n, int T, int H, int heads, const struct seq_draw *drop, bool accumulate);

}  // namespace dtrain_cuda

#endif
