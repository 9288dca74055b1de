/* dnn_cuda.cu - the CUDA backend's cuDNN layers: convolutions (algorithms chosen once per shape,
 * by cuDNN's heuristics or timed, and cached as plans), NCHW or, in channels-last mode, NHWC
 * (layout_cuda.cu transposes the filters). Batch norm is bn_cuda.cu's own. */
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

/* ---------- convolution ---------- */

/* Grows cuDNN's scratch to `bytes`. An algorithm whose scratch does not fit is not an error, only
 * not a choice: the old scratch stays (plans made before need its size) and false comes back.
 * Nor is one that asks for more than a quarter of the device's free memory: an FFT or Winograd
 * algorithm may want gigabytes that the activations and bf16 copies allocated after the choice
 * would then lack (cuda-review.md 4); the next algorithm in cuDNN's ranking is taken instead. */
bool grow_workspace(cuda_state *st, size_t bytes)
{
    if (bytes <= st->workspace_size)
        return true;
    if (growing_in_capture(st, "cuDNN's workspace"))
        return false;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && bytes > free_bytes / 4)
        return false;
    void *bigger = nullptr;
    if (cudaMalloc(&bigger, bytes) != cudaSuccess) {
        cudaGetLastError();   /* clears it: the next candidate may fit */
        return false;
    }
    cudaStreamSynchronize(st->stream);   /* the old scratch may still be in use */
    drop_graphs(st);
    cudaFree(st->workspace);
    st->workspace = bigger, st->workspace_size = bytes;
    return true;
}

/* The fastest algorithm, as cuDNN's heuristics expect or its timing found, whose scratch we can
 * allocate (both lists come sorted fastest first); with CONV_ALGO_DETERMINISTIC, the fastest of
 * those that sum in a fixed order. */
template <typename Perf, typename Getter>
bool pick(cuda_state *st, Getter get, cudnnConvolutionDescriptor_t conv, decltype(Perf::algo) *algo, const char *what)
{
    Perf perf[16];
    int found = 0;
    if (!dnn_ok(st, get(perf, 16, &found), what))
        return false;
    for (int i = 0; i < found; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS &&
            (st->conv_algo != CONV_ALGO_DETERMINISTIC || perf[i].determinism == CUDNN_DETERMINISTIC) &&
            grow_workspace(st, perf[i].memory)) {
            *algo = perf[i].algo;
            /* the math type the algorithm was ranked with, or another kernel runs */
            return dnn_ok(st, cudnnSetConvolutionMathType(conv, perf[i].mathType), "cudnnSetConvolutionMathType");
        }
    fail(st, what, "no usable algorithm");
    return false;
}

/* The plan's three algorithms: ranked by cuDNN's heuristics, or (CONV_ALGO_FIND) timed on
 * scratch tensors cuDNN allocates itself, which blocks, once per shape. */
bool choose_algorithms(cuda_state *st, conv_plan *p)
{
    bool timed = st->conv_algo == CONV_ALGO_FIND;
    if (timed && !cuda_ok(st, cudaStreamSynchronize(st->stream), "cudaStreamSynchronize (before cudnnFind)"))
        return false;
    cudnnConvolutionDescriptor_t fwd = p->conv[CONV_FWD], data = p->conv[CONV_DATA], filter = p->conv[CONV_FILTER];
    return pick<cudnnConvolutionFwdAlgoPerf_t>(st, [&](cudnnConvolutionFwdAlgoPerf_t *perf, int max, int *found) {
               return timed ? cudnnFindConvolutionForwardAlgorithm(st->dnn, p->x, p->filter, fwd, p->y, max, found,
                                                                   perf)
                            : cudnnGetConvolutionForwardAlgorithm_v7(st->dnn, p->x, p->filter, fwd, p->y, max, found,
                                                                     perf);
           }, fwd, &p->fwd, "choosing the forward convolution algorithm") &&
           pick<cudnnConvolutionBwdDataAlgoPerf_t>(st, [&](cudnnConvolutionBwdDataAlgoPerf_t *perf, int max, int *found) {
               return timed ? cudnnFindConvolutionBackwardDataAlgorithm(st->dnn, p->filter, p->y, data, p->x, max,
                                                                        found, perf)
                            : cudnnGetConvolutionBackwardDataAlgorithm_v7(st->dnn, p->filter, p->y, data, p->x, max,
                                                                          found, perf);
           }, data, &p->bwd_data, "choosing the backward-data convolution algorithm") &&
           pick<cudnnConvolutionBwdFilterAlgoPerf_t>(st, [&](cudnnConvolutionBwdFilterAlgoPerf_t *perf, int max,
                                                           int *found) {
               return timed ? cudnnFindConvolutionBackwardFilterAlgorithm(st->dnn, p->x, p->y, filter, p->filter, max,
                                                                          found, perf)
                            : cudnnGetConvolutionBackwardFilterAlgorithm_v7(st->dnn, p->x, p->y, filter, p->filter,
                                                                            max, found, perf);
           }, filter, &p->bwd_filter, "choosing the backward-filter convolution algorithm");
}

void plan_release(conv_plan *p)
{
    cudnnTensorDescriptor_t tensors[] = {p->x, p->y, p->y32, p->bias};
    for (cudnnTensorDescriptor_t t : tensors)
        if (t)
            cudnnDestroyTensorDescriptor(t);
    if (p->filter)
        cudnnDestroyFilterDescriptor(p->filter);
    for (cudnnConvolutionDescriptor_t c : p->conv)
        if (c)
            cudnnDestroyConvolutionDescriptor(c);
}

conv_plan *plan_for(cuda_state *st, const struct conv_shape *s)
{
    for (int i = 0; i < st->num_plans; i++) {
        conv_plan *p = &st->plans[i];
        if (p->n == s->n && p->c == s->c && p->h == s->h && p->w == s->w && p->c_out == s->c_out && p->k == s->kh &&
            p->stride == s->stride && p->pad == s->pad)
            return p;
    }
    if (!room_for_one_more(&st->plans, st->num_plans, &st->cap_plans, 32)) {
        fail(st, "convolution plans", "out of memory");
        return nullptr;
    }
    conv_plan *p = &st->plans[st->num_plans];
    *p = conv_plan{};
    p->n = s->n, p->c = s->c, p->h = s->h, p->w = s->w, p->c_out = s->c_out, p->k = s->kh, p->stride = s->stride;
    p->pad = s->pad;
    cudnnDataType_t type = st->bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    bool ok = dnn_ok(st, cudnnCreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor") &&
              dnn_ok(st, cudnnCreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor") &&
              dnn_ok(st, cudnnCreateTensorDescriptor(&p->y32), "cudnnCreateTensorDescriptor") &&
              dnn_ok(st, cudnnCreateTensorDescriptor(&p->bias), "cudnnCreateTensorDescriptor") &&
              dnn_ok(st, cudnnCreateFilterDescriptor(&p->filter), "cudnnCreateFilterDescriptor");
    for (cudnnConvolutionDescriptor_t &c : p->conv)
        ok = ok && dnn_ok(st, cudnnCreateConvolutionDescriptor(&c), "cudnnCreateConvolutionDescriptor");
    /* channels-last: images NHWC and the filter [k][kh][kw][c] (filter_operand's transpose) */
    cudnnTensorFormat_t format = st->channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    ok = ok && dnn_ok(st, cudnnSetTensor4dDescriptor(p->x, format, type, s->n, s->c, s->h, s->w),
                      "cudnnSetTensor4dDescriptor (x)") &&
         dnn_ok(st, cudnnSetTensor4dDescriptor(p->y, format, type, s->n, s->c_out, s->h_out, s->w_out),
                "cudnnSetTensor4dDescriptor (y)") &&
         dnn_ok(st, cudnnSetTensor4dDescriptor(p->y32, format, CUDNN_DATA_FLOAT, s->n, s->c_out, s->h_out, s->w_out),
                "cudnnSetTensor4dDescriptor (y, fp32)") &&
         dnn_ok(st, cudnnSetTensor4dDescriptor(p->bias, format, CUDNN_DATA_FLOAT, 1, s->c_out, 1, 1),
                "cudnnSetTensor4dDescriptor (bias)") &&
         dnn_ok(st, cudnnSetFilter4dDescriptor(p->filter, type, format, s->c_out, s->c, s->kh, s->kw),
                "cudnnSetFilter4dDescriptor");
    for (cudnnConvolutionDescriptor_t c : p->conv)
        ok = ok && dnn_ok(st, cudnnSetConvolution2dDescriptor(c, s->pad, s->pad, s->stride, s->stride, 1, 1,
                                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                          "cudnnSetConvolution2dDescriptor") &&
             dnn_ok(st, cudnnSetConvolutionMathType(c, st->bf16 ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH),
                    "cudnnSetConvolutionMathType");
    ok = ok && choose_algorithms(st, p);
    if (!ok) {
        plan_release(p);
        return nullptr;
    }
    st->num_plans++;
    return p;
}

size_t input_count(const struct conv_shape *s) { return (size_t)s->n * s->c * s->h * s->w; }
size_t filter_count(const struct conv_shape *s) { return (size_t)s->c_out * s->c * s->kh * s->kw; }
size_t output_count(const struct conv_shape *s) { return (size_t)s->n * s->c_out * s->h_out * s->w_out; }

void cuda_conv_forward(void *s, const struct conv_shape *shape, const float *x, const float *w, const float *b, float *y)
{
    cuda_state *st = state_of(s);
    conv_plan *p = plan_for(st, shape);
    if (!p)
        return;
    float one = 1.0f;
    size_t nx = input_count(shape), ny = output_count(shape);
    int rs = shape->kh * shape->kw;
    const void *x_op = bf16_operand(st, HALF_X, x, nx), *w_op = filter_operand(st, w, shape->c_out, shape->c, rs, false);
    /* bf16 mode, y a batch norm's input: cuDNN writes y's bf16 copy, which the batch norm reads,
     * and the fp32 tensor is left unwritten (the same values, cuDNN's result being bf16) */
    __nv_bfloat16 *y_only = st->bf16 && shape->y_for_batchnorm && !b ? bf16_alone_to_write(st, y, ny) : nullptr;
    void *y_out = y_only ? static_cast<void *>(y_only) : bf16_result(st, y, ny);
    if (!x_op || !w_op || !y_out)
        return;
    dnn_ok(st, cudnnConvolutionForward(st->dnn, &one, p->x, x_op, p->filter, w_op, p->conv[CONV_FWD], p->fwd, st->workspace,
                                       st->workspace_size, bf16_prior(st, false), p->y, y_out), "cudnnConvolutionForward");
    if (y_only)
        return;
    bf16_land(st, y, ny, false);
    bf16_shadow_forget(st, y);
    if (b)
        dnn_ok(st, cudnnAddTensor(st->dnn, &one, p->bias, b, &one, p->y32, y), "cudnnAddTensor (conv bias)");
}

void cuda_conv_backward(void *s, const struct conv_shape *shape, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, bool accumulate)
{
    cuda_state *st = state_of(s);
    conv_plan *p = plan_for(st, shape);
    if (!p)
        return;
    float one = 1.0f;
    size_t nx = input_count(shape), nw = filter_count(shape), ny = output_count(shape);
    int rs = shape->kh * shape->kw;
    const void *x_op = bf16_operand(st, HALF_X, x, nx), *dy_op = bf16_operand(st, HALF_DY, dy, ny);
    void *dw_out = filter_result(st, dw, nw);
    if (!x_op || !dy_op || !dw_out)
        return;
    dnn_ok(st, cudnnConvolutionBackwardFilter(st->dnn, &one, p->x, x_op, p->y, dy_op, p->conv[CONV_FILTER], p->bwd_filter,
                                              st->workspace, st->workspace_size, filter_prior(st), p->filter, dw_out),
           "cudnnConvolutionBackwardFilter");
    filter_land(st, dw, shape->c_out, shape->c, rs);
    if (db)
        dnn_ok(st, cudnnConvolutionBackwardBias(st->dnn, &one, p->y32, dy, &one, p->bias, db),
               "cudnnConvolutionBackwardBias");
    if (!dx)
        return;
    const void *w_op = filter_operand(st, w, shape->c_out, shape->c, rs, true);
    /* bf16 mode, dx read by a batch norm's backward alone: cuDNN writes dx's bf16 copy, which the
     * batch norm reads, and the fp32 tensor is left unwritten (as the forward's y_for_batchnorm) */
    __nv_bfloat16 *dx_only = st->bf16 && shape->dx_for_batchnorm && !accumulate ? bf16_alone_to_write(st, dx, nx)
                                                                                : nullptr;
    /* else the same scratch as dw's: in stream order, after its landing */
    void *dx_out = dx_only ? static_cast<void *>(dx_only) : bf16_result(st, dx, nx);
    if (!w_op || !dx_out)
        return;
    dnn_ok(st, cudnnConvolutionBackwardData(st->dnn, &one, p->filter, w_op, p->y, dy_op, p->conv[CONV_DATA], p->bwd_data,
                                            st->workspace, st->workspace_size, bf16_prior(st, accumulate), p->x, dx_out),
           "cudnnConvolutionBackwardData");
    if (dx_only)
        return;
    bf16_land(st, dx, nx, accumulate);
    bf16_shadow_forget(st, dx);
}

}  // namespace

void dtrain_cuda::install_dnn(struct backend *table)
{
    table->conv_forward = cuda_conv_forward;
    table->conv_backward = cuda_conv_backward;
}

void dtrain_cuda::release_dnn(cuda_state *st)
{
    for (int i = 0; i < st->num_plans; i++)
        plan_release(&st->plans[i]);
    free(st->plans);
    cudaFree(st->workspace);
}
