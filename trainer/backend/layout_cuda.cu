/* layout_cuda.cu - the CUDA backend's channels-last mode (--channels-last; backend.h's
 * channels_last): images are [n][h][w][c] from the first convolution to the global average pool.
 *
 * Why: cuDNN's tensor-core convolutions read and write NHWC; given NCHW they transpose around the
 * kernel or take slower ones, in bf16 most of all. PyTorch users get the same with
 * `model.to(memory_format=torch.channels_last)`. Here: the model input's transpose (the loader's
 * batches are NCHW), the filters' transposes (the master weights and their gradients keep
 * PyTorch's [c_out][c_in][kh][kw], which checkpoints and the exchange see; cuDNN's NHWC filters
 * are [c_out][kh][kw][c_in]), and both poolings over NHWC. Batch norm's NHWC kernels are
 * bn_cuda.cu's, beside its NCHW ones. In every kernel consecutive threads take consecutive
 * channels, which lie next to each other in memory. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

extern "C" {
#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
}
#include "trainer/backend/cuda_state.h"

using namespace dtrain_cuda;

namespace {

__device__ __forceinline__ void store(float *p, float v) { *p = v; }
__device__ __forceinline__ void store(__nv_bfloat16 *p, float v) { *p = __float2bfloat16(v); }

/* y[s][j][ch] = x[s][ch][j]: one thread an output element. */
__global__ void k_to_channels_last(const float *x, float *y, int n, int c, int hw)
{
    GRID_STRIDE(o, (size_t)n * c * hw) {
        size_t ch = o % c, j = o / c % hw, s = o / ((size_t)c * hw);
        y[o] = x[(s * c + ch) * hw + j];
    }
}

/* The filter w [k][c][rs] as cuDNN's NHWC filter out [k][rs][c], in the compute type T. */
template <typename T>
__global__ void k_filter_to_krsc(const float *w, T *out, int k, int c, int rs)
{
    GRID_STRIDE(o, (size_t)k * c * rs) {
        size_t ch = o % c, r = o / c % rs, kk = o / ((size_t)c * rs);
        store(&out[o], w[(kk * c + ch) * rs + r]);
    }
}

/* dw [k][c][rs] += the NHWC filter gradient g [k][rs][c]. */
template <typename T>
__global__ void k_filter_add_from_krsc(const T *g, float *dw, int k, int c, int rs)
{
    GRID_STRIDE(i, (size_t)k * c * rs) {
        size_t r = i % rs, ch = i / rs % c, kk = i / ((size_t)rs * c);
        dw[i] += as_float(g[(kk * rs + r) * c + ch]);
    }
}

/* One thread an output element (s, oy, ox, ch): window_max over the channel's positions, c
 * floats apart; argmax keeps the winner's place in its plane, iy * w + ix, as the NCHW kernel does. */
template <typename X>
__global__ void k_maxpool_forward_cl(const X *x, float *y, int *argmax, int n, int c, int h, int w, int h_out,
                                     int w_out, int k, int stride, int pad)
{
    GRID_STRIDE(o, (size_t)n * h_out * w_out * c) {
        size_t ch = o % c, place = o / c;
        int ox = (int)(place % w_out), oy = (int)(place / w_out % h_out);
        const X *image = x + place / ((size_t)w_out * h_out) * h * w * c + ch;
        y[o] = window_max(image, (size_t)c, h, w, oy, ox, k, stride, pad, &argmax[o]);
    }
}

__global__ void k_maxpool_backward_cl(const int *argmax, const float *dy, float *dx, int n, int c, size_t per_in,
                                      size_t per_out)
{
    GRID_STRIDE(o, (size_t)n * per_out * c) {
        size_t ch = o % c, s = o / c / per_out;
        atomicAdd(&dx[(s * per_in + argmax[o]) * c + ch], dy[o]);
    }
}

/* One thread a (sample, channel), in double as the NCHW kernel. */
template <typename X>
__global__ void k_avgpool_forward_cl(const X *x, float *y, int n, int c, int hw)
{
    GRID_STRIDE(p, (size_t)n * c) {
        size_t ch = p % c, s = p / c;
        double sum = 0;
        for (int j = 0; j < hw; j++)
            sum += as_float(x[(s * hw + j) * c + ch]);
        y[p] = (float)(sum / hw);
    }
}

__global__ void k_avgpool_backward_cl(const float *dy, float *dx, int n, int c, int hw, bool accumulate)
{
    GRID_STRIDE(i, (size_t)n * hw * c) {
        size_t ch = i % c, s = i / ((size_t)hw * c);
        float g = dy[s * c + ch] / hw;
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

void cuda_to_channels_last(void *s, const float *x, float *y, int n, int c, int hw)
{
    cuda_state *st = state_of(s);
    k_to_channels_last<<<blocks_for((size_t)n * c * hw), THREADS, 0, st->stream>>>(x, y, n, c, hw);
    launched(st, "to channels-last");
}

void cuda_maxpool_forward_cl(void *s, const float *x, float *y, int *argmax, int n, int c, int h, int w, int k,
                             int stride, int pad)
{
    cuda_state *st = state_of(s);
    int h_out = conv_out_size(h, k, stride, pad), w_out = conv_out_size(w, k, stride, pad);
    unsigned blocks = blocks_for((size_t)n * h_out * w_out * c);
    if (const __nv_bfloat16 *x16 = bf16_alone(st, x, (size_t)n * c * h * w))   /* a batch norm's, kept in bf16 */
        k_maxpool_forward_cl<<<blocks, THREADS, 0, st->stream>>>(x16, y, argmax, n, c, h, w, h_out, w_out, k, stride, pad);
    else
        k_maxpool_forward_cl<<<blocks, THREADS, 0, st->stream>>>(x, y, argmax, n, c, h, w, h_out, w_out, k, stride, pad);
    launched(st, "maxpool forward (channels-last)");
}

void cuda_maxpool_backward_cl(void *s, const int *argmax, const float *dy, float *dx, int n, int c, int h, int w,
                              int h_out, int w_out, int k, int stride, int pad, bool accumulate)
{
    (void)k, (void)stride, (void)pad;
    cuda_state *st = state_of(s);
    size_t per_in = (size_t)h * w, per_out = (size_t)h_out * w_out;
    if (!accumulate)
        cuda_ok(st, cudaMemsetAsync(dx, 0, (size_t)n * c * per_in * sizeof(float), st->stream),
                "cudaMemsetAsync (maxpool)");
    k_maxpool_backward_cl<<<blocks_for((size_t)n * c * per_out), THREADS, 0, st->stream>>>(argmax, dy, dx, n, c, per_in,
                                                                                          per_out);
    launched(st, "maxpool backward (channels-last)");
}

void cuda_avgpool_forward_cl(void *s, const float *x, float *y, int n, int c, int hw)
{
    cuda_state *st = state_of(s);
    if (const __nv_bfloat16 *x16 = bf16_alone(st, x, (size_t)n * c * hw))
        k_avgpool_forward_cl<<<blocks_for((size_t)n * c), THREADS, 0, st->stream>>>(x16, y, n, c, hw);
    else
        k_avgpool_forward_cl<<<blocks_for((size_t)n * c), THREADS, 0, st->stream>>>(x, y, n, c, hw);
    launched(st, "avgpool forward (channels-last)");
}

void cuda_avgpool_backward_cl(void *s, const float *dy, float *dx, int n, int c, int hw, bool accumulate)
{
    cuda_state *st = state_of(s);
    k_avgpool_backward_cl<<<blocks_for((size_t)n * c * hw), THREADS, 0, st->stream>>>(dy, dx, n, c, hw, accumulate);
    launched(st, "avgpool backward (channels-last)");
}

}  // namespace

/* ---------- the convolutions' filters (cuda_state.h) ---------- */

/* w's copy, found or added (NULL: out of memory, or added inside a capture: failed, named). */
static filter_copy *filter_copy_of(cuda_state *st, const float *w)
{
    for (int i = 0; i < st->num_filter_copies; i++)
        if (st->filter_copies[i].w == w)
            return &st->filter_copies[i];
    if (growing_in_capture(st, "a channels-last filter"))
        return nullptr;
    if (!room_for_one_more(&st->filter_copies, st->num_filter_copies, &st->cap_filter_copies, 64)) {
        fail(st, "the channels-last filters", "out of memory");
        return nullptr;
    }
    filter_copy *fc = &st->filter_copies[st->num_filter_copies++];
    *fc = filter_copy{w, 0, 0, 0, nullptr, 0, false};
    return fc;
}

/* Channels-last: the forward transposes w into its own copy, which that step's backward reads
 * again (once: a backward with no forward before it transposes anew): a filter made once a step,
 * not twice. */
const void *dtrain_cuda::filter_operand(cuda_state *st, const float *w, int k, int c, int rs, bool in_backward)
{
    size_t count = (size_t)k * c * rs;
    if (!st->channels_last)
        return bf16_operand(st, HALF_W, w, count);
    filter_copy *fc = filter_copy_of(st, w);
    if (!fc)
        return nullptr;
    if (in_backward && fc->for_backward && fc->k == k && fc->c == c && fc->rs == rs) {
        fc->for_backward = false;
        return fc->copy;
    }
    fc->for_backward = false;
    if (!grow_device(st, &fc->copy, &fc->cap, st->bf16 ? (count + 1) / 2 : count, "a channels-last filter"))
        return nullptr;
    if (st->bf16)
        k_filter_to_krsc<<<blocks_for(count), THREADS, 0, st->stream>>>(
            w, reinterpret_cast<__nv_bfloat16 *>(fc->copy), k, c, rs);
    else
        k_filter_to_krsc<<<blocks_for(count), THREADS, 0, st->stream>>>(w, fc->copy, k, c, rs);
    launched(st, "filter to channels-last");
    fc->k = k, fc->c = c, fc->rs = rs, fc->for_backward = !in_backward;
    return fc->copy;
}

void *dtrain_cuda::filter_result(cuda_state *st, float *dw, size_t count)
{
    if (!st->channels_last)
        return bf16_result(st, dw, count);
    if (!grow_device(st, &st->cl_dfilter, &st->cl_dfilter_cap, count, "the channels-last filter gradient"))
        return nullptr;
    return st->cl_dfilter;
}

const float *dtrain_cuda::filter_prior(cuda_state *st)
{
    static const float zero = 0.0f;
    return st->channels_last ? &zero : bf16_prior(st, true);
}

void dtrain_cuda::filter_land(cuda_state *st, float *dw, int k, int c, int rs)
{
    size_t count = (size_t)k * c * rs;
    if (!st->channels_last) {
        bf16_land(st, dw, count, true);
        return;
    }
    if (st->bf16)
        k_filter_add_from_krsc<<<blocks_for(count), THREADS, 0, st->stream>>>(
            reinterpret_cast<const __nv_bfloat16 *>(st->cl_dfilter), dw, k, c, rs);
    else
        k_filter_add_from_krsc<<<blocks_for(count), THREADS, 0, st->stream>>>(st->cl_dfilter, dw, k, c, rs);
    launched(st, "filter gradient from channels-last");
}

void dtrain_cuda::install_layout(struct backend *table, bool channels_last)
{
    table->channels_last = channels_last;
    if (!channels_last)
        return;
    table->to_channels_last = cuda_to_channels_last;
    table->maxpool_forward = cuda_maxpool_forward_cl;
    table->maxpool_backward = cuda_maxpool_backward_cl;
    table->avgpool_forward = cuda_avgpool_forward_cl;
    table->avgpool_backward = cuda_avgpool_backward_cl;
}

void dtrain_cuda::release_layout(cuda_state *st)
{
    for (int i = 0; i < st->num_filter_copies; i++)
        cudaFree(st->filter_copies[i].copy);
    free(st->filter_copies);
    cudaFree(st->cl_dfilter);
}
