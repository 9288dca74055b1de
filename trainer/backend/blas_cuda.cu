/* blas_cuda.cu - the CUDA backend's linear layers: cuBLAS GEMMs (TF32, or bf16 operands with fp32
 * accumulation), row-major arrays read as column-major transposes. The forward adds the bias in
 * cuBLASLt's epilogue (one plan a shape and alignment, found once); where cuBLASLt offers no
 * algorithm, the bias is written into every row first and the GEMM adds to it. The bias's gradient
 * is a kernel of its own. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
}
#include "trainer/backend/cuda_state.h"

using namespace dtrain_cuda;

namespace dtrain_cuda {

/* One forward shape's plan: y^T (m = out x n, col-major) = W^T x^T + b, b along y's rows. The
 * algorithm cuBLASLt chose depends on its operands' alignment: a plan a shape and alignment. */
struct lt_plan {
    int m, n, k;
    unsigned alignment;   /* of W, x, y and b: alignment_of's, 5 bits each */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    bool usable;          /* cuBLASLt offered an algorithm (and it ran) */
};

struct linear_plans {
    cublasLtHandle_t lt;
    lt_plan *plans;
    int count, cap;
};

}  // namespace dtrain_cuda

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

/* ---------- the forward through cuBLASLt, the bias in the GEMM's epilogue ---------- */

unsigned alignment_of(const void *p)
{
    uintptr_t at = reinterpret_cast<uintptr_t>(p);
    return at % 16 == 0 ? 16 : at % 8 == 0 ? 8 : at % 4 == 0 ? 4 : 2;
}

/* The descriptors and cuBLASLt's first algorithm for them (usable false where it has none). */
void plan_linear(cuda_state *st, lt_plan *p, const float *bias)
{
    cudaDataType_t type = st->bf16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulPreference_t pref = nullptr;
    uint64_t workspace = BLAS_WORKSPACE_BYTES;
    uint32_t align_w = p->alignment & 31, align_x = p->alignment >> 5 & 31, align_y = p->alignment >> 10 & 31;
    cublasLtMatmulHeuristicResult_t found = {};
    int results = 0;
    bool ok = cublasLtMatmulDescCreate(&p->desc, st->bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32,
                                       CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transposed, sizeof transposed) == 0 &&
              cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain) == 0 &&
              cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) == 0 &&
              cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) == 0 &&
              cublasLtMatrixLayoutCreate(&p->a, type, p->k, p->m, p->k) == 0 &&
              cublasLtMatrixLayoutCreate(&p->b, type, p->k, p->n, p->k) == 0 &&
              cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32F, p->m, p->n, p->m) == 0 &&
              cublasLtMatmulPreferenceCreate(&pref) == 0 &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                   sizeof workspace) == 0 &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_w,
                                                   sizeof align_w) == 0 &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_x,
                                                   sizeof align_x) == 0 &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_y,
                                                   sizeof align_y) == 0 &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_y,
                                                   sizeof align_y) == 0 &&
              cublasLtMatmulAlgoGetHeuristic(st->linear->lt, p->desc, p->a, p->b, p->c, p->c, pref, 1, &found,
                                             &results) == CUBLAS_STATUS_SUCCESS;
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    p->usable = ok && results > 0;
    if (p->usable)
        p->algo = found.algo;
}

/* The plan for this forward, made on first sight (nullptr: out of memory, or no cuBLASLt). */
lt_plan *linear_plan(cuda_state *st, const void *w, const void *x, float *y, const float *bias, int m, int n, int k)
{
    if (!st->linear) {
        st->linear = static_cast<linear_plans *>(calloc(1, sizeof *st->linear));
        if (!st->linear || cublasLtCreate(&st->linear->lt) != CUBLAS_STATUS_SUCCESS) {
            free(st->linear), st->linear = nullptr;
            return nullptr;
        }
    }
    linear_plans *lp = st->linear;
    unsigned alignment = alignment_of(w) | alignment_of(x) << 5 | alignment_of(y) << 10 | alignment_of(bias) << 15;
    for (int i = 0; i < lp->count; i++)
        if (lp->plans[i].m == m && lp->plans[i].n == n && lp->plans[i].k == k && lp->plans[i].alignment == alignment)
            return &lp->plans[i];
    if (!room_for_one_more(&lp->plans, lp->count, &lp->cap, 16))
        return nullptr;
    lt_plan *p = &lp->plans[lp->count++];
    *p = lt_plan{m, n, k, alignment, nullptr, nullptr, nullptr, nullptr, {}, false};
    plan_linear(st, p, bias);
    return p;
}

/* y = x W^T + b in one cuBLASLt call: false, with nothing queued, where it cannot. */
bool lt_linear_forward(cuda_state *st, const void *w, const void *x, const float *b, float *y, int n, int in, int out)
{
    lt_plan *p = w && x ? linear_plan(st, w, x, y, b, out, n, in) : nullptr;
    if (!p || !p->usable ||
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b) != 0)
        return false;
    float one = 1.0f, zero = 0.0f;
    p->usable = cublasLtMatmul(st->linear->lt, p->desc, &one, w, p->a, x, p->b, &zero, y, p->c, y, p->c, &p->algo,
                               st->blas_workspace, BLAS_WORKSPACE_BYTES, st->stream) == CUBLAS_STATUS_SUCCESS;
    return p->usable;
}

void cuda_linear_forward(void *s, const float *x, const float *w, const float *b, float *y, int n, int in, int out)
{
    cuda_state *st = state_of(s);
    const void *w_op = bf16_operand(st, HALF_W, w, (size_t)out * in), *x_op = bf16_operand(st, HALF_X, x, (size_t)n * in);
    if (failed(st) || lt_linear_forward(st, w_op, x_op, b, y, n, in, out))
        return;
    k_fill_rows<<<blocks_for((size_t)n * THREADS), THREADS, 0, st->stream>>>(y, b, n, out);
    launched(st, "linear bias");
    /* y^T (out x n) = w (in x out, col-major)^T . x^T (in x n) */
    gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, w_op, in, x_op, in, true, y, out, "cublasGemmEx (linear forward)");
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

void dtrain_cuda::release_blas(cuda_state *st)
{
    linear_plans *lp = st->linear;
    if (!lp)
        return;
    for (int i = 0; i < lp->count; i++) {
        lt_plan *p = &lp->plans[i];
        if (p->desc)
            cublasLtMatmulDescDestroy(p->desc);
        for (cublasLtMatrixLayout_t layout : {p->a, p->b, p->c})
            if (layout)
                cublasLtMatrixLayoutDestroy(layout);
    }
    cublasLtDestroy(lp->lt);
    free(lp->plans), free(lp);
    st->linear = nullptr;
}
