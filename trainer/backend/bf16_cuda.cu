/* bf16_cuda.cu - the bf16 mode of the CUDA backend (PyTorch autocast's): what a GEMM or a
 * convolution reads is a bf16 copy of its fp32 operand, cast into scratch just before, or written
 * beside the operand by the kernel that wrote it (a shadow: batch norm's output and input
 * gradient, which the convolutions read); what it writes lands back in fp32. fp32 mode passes the
 * operands through. */
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

namespace {

/* y = x as bf16: four elements a thread a step where both arrays allow (16-byte loads, 8-byte
 * stores: a memory-bound kernel 260 times a BERT-Base step), the rest one at a time. */
__global__ void k_to_bf16(const float *x, __nv_bfloat16 *y, size_t count)
{
    bool vectors = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0;
    size_t quads = vectors ? count / 4 : 0;
    GRID_STRIDE(q, quads) {
        float4 v = reinterpret_cast<const float4 *>(x)[q];
        __nv_bfloat162 *to = reinterpret_cast<__nv_bfloat162 *>(y + 4 * q);
        to[0] = __floats2bfloat162_rn(v.x, v.y), to[1] = __floats2bfloat162_rn(v.z, v.w);
    }
    GRID_STRIDE(i, count - 4 * quads)
        y[4 * quads + i] = __float2bfloat16(x[4 * quads + i]);
}

/* y = x as fp32 (added to y when accumulating), four elements a thread a step where both arrays
 * allow, as k_to_bf16: a convolution's bf16 result landing, an activation's size each time. */
__global__ void k_from_bf16(const __nv_bfloat16 *x, float *y, size_t count, bool accumulate)
{
    bool vectors = reinterpret_cast<uintptr_t>(x) % 8 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    size_t quads = vectors ? count / 4 : 0;
    GRID_STRIDE(q, quads) {
        const __nv_bfloat162 *from = reinterpret_cast<const __nv_bfloat162 *>(x + 4 * q);
        float2 a = __bfloat1622float2(from[0]), b = __bfloat1622float2(from[1]);
        float4 v = make_float4(a.x, a.y, b.x, b.y), *to = reinterpret_cast<float4 *>(y) + q;
        if (accumulate) {
            float4 was = *to;
            v.x += was.x, v.y += was.y, v.z += was.z, v.w += was.w;
        }
        *to = v;
    }
    GRID_STRIDE(i, count - 4 * quads) {
        size_t at = 4 * quads + i;
        y[at] = accumulate ? y[at] + __bfloat162float(x[at]) : __bfloat162float(x[at]);
    }
}

}  // namespace

/* A buffer is about to move: captured steps point into it, so they go (and are captured again). */
void dtrain_cuda::drop_graphs(cuda_state *st)
{
    for (cudaGraphExec_t &g : st->graphs)
        if (g) {
            cudaGraphExecDestroy(g);
            g = nullptr;
        }
}

static __nv_bfloat16 *half_buffer(cuda_state *st, int slot, size_t count)
{
    return grow_device(st, &st->half[slot], &st->half_cap[slot], count, "the bf16 scratch") ? st->half[slot] : nullptr;
}

static bf16_shadow *shadow_of(cuda_state *st, const void *of)
{
    for (int i = 0; i < st->num_shadows; i++)
        if (st->shadows[i].of == of)
            return &st->shadows[i];
    return nullptr;
}

__nv_bfloat16 *dtrain_cuda::bf16_shadow_to_write(cuda_state *st, const float *of, size_t count)
{
    if (!st->bf16)
        return nullptr;
    bf16_shadow *sh = shadow_of(st, of);
    if (!sh) {
        if (growing_in_capture(st, "a bf16 copy"))
            return nullptr;
        if (!room_for_one_more(&st->shadows, st->num_shadows, &st->cap_shadows, 64))
            return nullptr;
        sh = &st->shadows[st->num_shadows++];
        *sh = bf16_shadow{of, nullptr, 0, 0, false, false};
    }
    sh->valid = false, sh->alone = false;
    if (!grow_device(st, &sh->copy, &sh->cap, count, "a bf16 copy"))
        return nullptr;
    sh->count = count, sh->valid = true;
    return sh->copy;
}

const __nv_bfloat16 *dtrain_cuda::bf16_shadow_valid(cuda_state *st, const float *of, size_t count)
{
    const bf16_shadow *sh = st->bf16 ? shadow_of(st, of) : nullptr;
    return sh && sh->valid && sh->count == count ? sh->copy : nullptr;
}

__nv_bfloat16 *dtrain_cuda::bf16_alone_to_write(cuda_state *st, const float *of, size_t count)
{
    __nv_bfloat16 *copy = bf16_shadow_to_write(st, of, count);
    if (copy)
        shadow_of(st, of)->alone = true;
    return copy;
}

const __nv_bfloat16 *dtrain_cuda::bf16_alone(cuda_state *st, const float *of, size_t count)
{
    const bf16_shadow *sh = st->bf16 ? shadow_of(st, of) : nullptr;
    return sh && sh->valid && sh->alone && sh->count == count ? sh->copy : nullptr;
}

void dtrain_cuda::bf16_shadow_forget(cuda_state *st, const float *of)
{
    bf16_shadow *sh = st->bf16 ? shadow_of(st, of) : nullptr;
    if (sh)
        sh->valid = false;
}

void dtrain_cuda::bf16_shadow_release(cuda_state *st, const void *p)
{
    bf16_shadow *sh = shadow_of(st, p);
    if (!sh)
        return;
    cudaFree(sh->copy);   /* synchronises: the copy is read no more */
    *sh = st->shadows[--st->num_shadows];
}

void dtrain_cuda::bf16_shadows_free(cuda_state *st)
{
    for (int i = 0; i < st->num_shadows; i++)
        cudaFree(st->shadows[i].copy);
    free(st->shadows);
}

/* What a GEMM or convolution reads for x: x itself in fp32 mode; in bf16 mode its copy where the
 * kernel that wrote x wrote one (the same bits as casting it here), else a cast into scratch. */
const void *dtrain_cuda::bf16_operand(cuda_state *st, int slot, const float *x, size_t count)
{
    if (!st->bf16)
        return x;
    if (const __nv_bfloat16 *copy = bf16_shadow_valid(st, x, count))
        return copy;
    __nv_bfloat16 *h = half_buffer(st, slot, count);
    if (!h)
        return nullptr;
    k_to_bf16<<<blocks_for((count + 3) / 4), THREADS, 0, st->stream>>>(x, h, count);
    launched(st, "cast to bf16");
    return h;
}

/* Where a convolution writes its result: out itself in fp32 mode, bf16 scratch (then land) in
 * bf16 mode, where cuDNN writes the compute type. */
void *dtrain_cuda::bf16_result(cuda_state *st, float *out, size_t count)
{
    return st->bf16 ? static_cast<void *>(half_buffer(st, HALF_OUT, count)) : out;
}

/* The scale of what is already in out: 1 to accumulate in fp32 mode; in bf16 mode the scratch
 * starts from zero and land adds. */
const float *dtrain_cuda::bf16_prior(cuda_state *st, bool accumulate)
{
    static const float one = 1.0f, zero = 0.0f;
    return accumulate && !st->bf16 ? &one : &zero;
}

/* bf16 mode: the result from scratch into out (added when accumulating). */
void dtrain_cuda::bf16_land(cuda_state *st, float *out, size_t count, bool accumulate)
{
    if (!st->bf16)
        return;
    k_from_bf16<<<blocks_for((count + 3) / 4), THREADS, 0, st->stream>>>(st->half[HALF_OUT], out, count, accumulate);
    launched(st, "cast from bf16");
}

