/* blas_cuda.cu - the CUDA backend's linear layers: cuBLAS GEMMs (TF32, or bf16 operands with fp32
 * accumulation), row-major arrays read as column-major transposes, and the bias's two kernels. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
}
#include "trainer/backend/cuda_state.h"

using namespace dtrain_cuda;

namespace {

/* Every row of y (n x out) = b: a block a row at a time, its threads along the row (a thread an
 * element found its column as i % out, a division an element in a kernel that only writes). */
__global__ void k_fill_rows(float *y, const float *b, int n, int out)
{
    for (size_t row = blockIdx.x; row < (size_t)n; row += gridDim.x)
        for (int j = threadIdx.x; j < out; j += blockDim.x)
            y[row * out + j] = b[j];
}

/* db[j] += the sum over rows of dy[row][j]. A block takes 32 neighbouring columns of SUM_ROWS
 * rows, its 8 rows of threads reading whole 128-byte lines a step, their sums met in shared
 * memory and added to db atomically. (A thread a column walking all n rows alone filled 3 blocks
 * at BERT-Base's hidden size: a bias's gradient took longer than its layer's GEMMs.) */
constexpr int SUM_COLUMNS = 32, SUM_THREAD_ROWS = 8, SUM_ROWS = 256;

__global__ void k_sum_rows(const float *dy, float *db, int n, int out)
{
    __shared__ double partial[SUM_THREAD_ROWS][SUM_COLUMNS];
    int j = blockIdx.x * SUM_COLUMNS + threadIdx.x, first = blockIdx.y * SUM_ROWS;
    int last = min(n, first + SUM_ROWS);
    double sum = 0;
    for (int i = first + (int)threadIdx.y; j < out && i < last; i += SUM_THREAD_ROWS)
        sum += dy[(size_t)i * out + j];
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && j < out) {
        for (int r = 1; r < SUM_THREAD_ROWS; r++)
            sum += partial[r][threadIdx.x];
        atomicAdd(&db[j], (float)sum);
    }
}

/* C (m x n, col-major, fp32) = A . B + beta C, A and B fp32 (TF32 math) or their bf16 copies. */
void gemm(cuda_state *st, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const void *a, int lda,
          const void *b, int ldb, bool accumulate, float *c, int ldc, const char *what)
{
    if (!a || !b)
        return;   /* a failed cast, already reported */
    float one = 1.0f, zero = 0.0f;
    cudaDataType_t type = st->bf16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t compute = st->bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    blas_ok(st, cublasGemmEx(st->blas, op_a, op_b, m, n, k, &one, a, type, lda, b, type, ldb, accumulate ? &one : &zero,
                             c, CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT), what);
}

void cuda_linear_forward(void *s, const float *x, const float *w, const float *b, float *y, int n, int in, int out)
{
    cuda_state *st = state_of(s);
    k_fill_rows<<<blocks_for((size_t)n * THREADS), THREADS, 0, st->stream>>>(y, b, n, out);
    launched(st, "linear bias");
    /* y^T (out x n) = w (in x out, col-major)^T . x^T (in x n) */
    gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, bf16_operand(st, HALF_W, w, (size_t)out * in), in,
         bf16_operand(st, HALF_X, x, (size_t)n * in), in, true, y, out, "cublasGemmEx (linear forward)");
}

void cuda_linear_backward(void *s, const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                          int n, int in, int out, bool accumulate)
{
    cuda_state *st = state_of(s);
    const void *dy_op = bf16_operand(st, HALF_DY, dy, (size_t)n * out);
    /* dw (in x out, col-major) += x^T (in x n) . dy (n x out) */
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, bf16_operand(st, HALF_X, x, (size_t)n * in), in, dy_op, out, true, dw, in,
         "cublasGemmEx (linear weight gradient)");
    dim3 sum_grid((out + SUM_COLUMNS - 1) / SUM_COLUMNS, (n + SUM_ROWS - 1) / SUM_ROWS);
    k_sum_rows<<<sum_grid, dim3(SUM_COLUMNS, SUM_THREAD_ROWS), 0, st->stream>>>(dy, db, n, out);
    launched(st, "linear bias gradient");
    if (dx)   /* dx^T (in x n) = w^T (in x out) . dy^T (out x n) */
        gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, bf16_operand(st, HALF_W, w, (size_t)out * in), in, dy_op, out,
             accumulate, dx, in, "cublasGemmEx (linear input gradient)");
}

}  // namespace

void dtrain_cuda::install_blas(struct backend *table)
{
    table->linear_forward = cuda_linear_forward;
    table->linear_backward = cuda_linear_backward;
}
