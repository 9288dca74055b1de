/* conv_dnnl.c - convolutions through oneDNN (Debian's libdnnl, the CPU counterpart of cuDNN).
 *
 * oneDNN's JIT kernels run at about twice OpenBLAS's speed here, but only on the blocked layouts
 * they choose (nChw16c and friends); on plain NCHW it falls back to a GEMM no faster than ours.
 * The rest of the engine keeps NCHW, so each call reorders its inputs into the layouts the
 * primitive wants and its outputs back. Primitives are made once per shape and kept; the blocked
 * buffers are shared by all shapes (set per call), so memory does not grow with the network's
 * depth. Backward results are written to scratch and then ADDED, as backend.h requires. */
#include "trainer/backend/conv_dnnl.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

/* Shared buffers: blocked activations (two), blocked weights, and plain scratch for the gradients
 * that are added afterwards. */
enum slot { SLOT_SRC, SLOT_DST, SLOT_WEI, SLOT_TMP_X, SLOT_TMP_W, SLOT_TMP_B, SLOTS };

/* One tensor at a primitive's edge: the caller's plain memory and, where the primitive wants
 * another layout, its own memory in a shared slot and the reorder between them. */
struct edge {
    dnnl_memory_t user, prim;   /* prim == user when no reorder is needed */
    dnnl_primitive_t reorder;
    int slot;
};

struct entry {
    struct conv_shape key;
    bool bias;
    dnnl_primitive_t fwd, bwd_weights, bwd_data;
    struct edge f_src, f_wei, f_dst, w_src, w_ddst, w_dwei, d_ddst, d_wei, d_dsrc;
    dnnl_memory_t f_bias, w_dbias;
};

struct conv_dnnl {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    struct entry *entries;
    int count, cap;
    void *slot[SLOTS];
    size_t slot_size[SLOTS];
};

struct conv_dnnl *conv_dnnl_create(void)
{
    struct conv_dnnl *cd = calloc(1, sizeof *cd);
    if (!cd)
        return NULL;
    if (dnnl_engine_create(&cd->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&cd->stream, cd->engine, dnnl_stream_default_flags) != dnnl_success) {
        if (cd->engine)
            dnnl_engine_destroy(cd->engine);
        free(cd);
        return NULL;
    }
    return cd;
}

static void edge_free(struct edge *e)
{
    if (e->reorder)
        dnnl_primitive_destroy(e->reorder);
    if (e->prim && e->prim != e->user)
        dnnl_memory_destroy(e->prim);
    if (e->user)
        dnnl_memory_destroy(e->user);
    memset(e, 0, sizeof *e);
}

static void entry_free(struct entry *en)
{
    struct edge *edges[] = {&en->f_src, &en->f_wei, &en->f_dst, &en->w_src, &en->w_ddst, &en->w_dwei,
                            &en->d_ddst, &en->d_wei, &en->d_dsrc};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        edge_free(edges[i]);
    dnnl_primitive_t prims[] = {en->fwd, en->bwd_weights, en->bwd_data};
    for (int i = 0; i < 3; i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
    if (en->f_bias)
        dnnl_memory_destroy(en->f_bias);
    if (en->w_dbias)
        dnnl_memory_destroy(en->w_dbias);
}

void conv_dnnl_destroy(struct conv_dnnl *cd)
{
    if (!cd)
        return;
    for (int i = 0; i < cd->count; i++)
        entry_free(&cd->entries[i]);
    free(cd->entries);
    for (int s = 0; s < SLOTS; s++)
        free(cd->slot[s]);
    dnnl_stream_destroy(cd->stream);
    dnnl_engine_destroy(cd->engine);
    free(cd);
}

static int grow_slot(struct conv_dnnl *cd, int slot, size_t size)
{
    if (size <= cd->slot_size[slot])
        return 0;
    free(cd->slot[slot]);
    cd->slot[slot] = aligned_alloc(64, (size + 63) / 64 * 64);
    cd->slot_size[slot] = cd->slot[slot] ? size : 0;
    return cd->slot[slot] ? 0 : -1;
}

/* Sets up an edge between the plain layout user_md and the primitive's prim_md. */
static int edge_init(struct conv_dnnl *cd, struct edge *e, const dnnl_memory_desc_t *user_md,
                     const dnnl_memory_desc_t *prim_md, bool input, int slot)
{
    if (dnnl_memory_create(&e->user, user_md, cd->engine, DNNL_MEMORY_NONE) != dnnl_success)
        return -1;
    if (dnnl_memory_desc_equal(user_md, prim_md)) {
        e->prim = e->user;
        return 0;
    }
    e->slot = slot;
    if (grow_slot(cd, slot, dnnl_memory_desc_get_size(prim_md)) < 0 ||
        dnnl_memory_create(&e->prim, prim_md, cd->engine, DNNL_MEMORY_NONE) != dnnl_success)
        return -1;
    dnnl_primitive_desc_t pd;
    const dnnl_memory_desc_t *from = input ? user_md : prim_md, *to = input ? prim_md : user_md;
    if (dnnl_reorder_primitive_desc_create(&pd, from, cd->engine, to, cd->engine, NULL) != dnnl_success)
        return -1;
    dnnl_status_t st = dnnl_primitive_create(&e->reorder, pd);
    dnnl_primitive_desc_destroy(pd);
    return st == dnnl_success ? 0 : -1;
}

/* Points an edge at the caller's buffer; for an input, reorders it into the primitive's layout. */
static int edge_in(struct conv_dnnl *cd, struct edge *e, const void *user)
{
    dnnl_memory_set_data_handle(e->user, (void *)user);
    if (!e->reorder)
        return 0;
    dnnl_memory_set_data_handle(e->prim, cd->slot[e->slot]);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, e->user}, {DNNL_ARG_TO, e->prim}};
    return dnnl_primitive_execute(e->reorder, cd->stream, 2, args) == dnnl_success ? 0 : -1;
}

/* For an output: after the primitive ran, reorders its result into the caller's buffer. */
static int edge_out(struct conv_dnnl *cd, struct edge *e)
{
    if (!e->reorder)
        return 0;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, e->prim}, {DNNL_ARG_TO, e->user}};
    return dnnl_primitive_execute(e->reorder, cd->stream, 2, args) == dnnl_success ? 0 : -1;
}

/* An output edge's target: the caller's buffer, and the slot when a reorder follows. */
static void edge_target(struct conv_dnnl *cd, struct edge *e, void *user)
{
    dnnl_memory_set_data_handle(e->user, user);
    if (e->reorder)
        dnnl_memory_set_data_handle(e->prim, cd->slot[e->slot]);
}

static dnnl_status_t make_primitive(struct conv_dnnl *cd, const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint,
                                    dnnl_primitive_desc_t *pd, dnnl_primitive_t *prim)
{
    dnnl_status_t st = dnnl_primitive_desc_create(pd, desc, NULL, cd->engine, hint);
    if (st == dnnl_success)
        st = dnnl_primitive_create(prim, *pd);
    return st;
}

static const dnnl_memory_desc_t *md_of(const_dnnl_primitive_desc_t pd, dnnl_query_t what)
{
    return dnnl_primitive_desc_query_md(pd, what, 0);
}

static int entry_init(struct conv_dnnl *cd, struct entry *en, const struct conv_shape *s, bool bias)
{
    memset(en, 0, sizeof *en);
    en->key = *s;
    en->key.cols = NULL;
    en->bias = bias;
    dnnl_dims_t src_dims = {s->n, s->c, s->h, s->w}, wei_dims = {s->c_out, s->c, s->kh, s->kw};
    dnnl_dims_t dst_dims = {s->n, s->c_out, s->h_out, s->w_out}, bias_dims = {s->c_out};
    dnnl_dims_t strides = {s->stride, s->stride}, pad = {s->pad, s->pad};
    dnnl_memory_desc_t src, wei, dst, bia, src_any, wei_any, dst_any;
    dnnl_memory_desc_init_by_tag(&src, 4, src_dims, dnnl_f32, dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&wei, 4, wei_dims, dnnl_f32, dnnl_oihw);
    dnnl_memory_desc_init_by_tag(&dst, 4, dst_dims, dnnl_f32, dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&bia, 1, bias_dims, dnnl_f32, dnnl_x);
    dnnl_memory_desc_init_by_tag(&src_any, 4, src_dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei_any, 4, wei_dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_dims, dnnl_f32, dnnl_format_tag_any);

    dnnl_convolution_desc_t fd, wd, dd;
    dnnl_primitive_desc_t fpd = NULL, wpd = NULL, dpd = NULL;
    int rc = -1;
    if (dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &src_any, &wei_any,
                                           bias ? &bia : NULL, &dst_any, strides, pad, pad) != dnnl_success ||
        make_primitive(cd, &fd, NULL, &fpd, &en->fwd) != dnnl_success ||
        dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct, &src_any, &wei_any,
                                                    bias ? &bia : NULL, &dst_any, strides, pad, pad) != dnnl_success ||
        make_primitive(cd, &wd, fpd, &wpd, &en->bwd_weights) != dnnl_success ||
        dnnl_convolution_backward_data_desc_init(&dd, dnnl_convolution_direct, &src_any, &wei_any, &dst_any, strides, pad,
                                                 pad) != dnnl_success ||
        make_primitive(cd, &dd, fpd, &dpd, &en->bwd_data) != dnnl_success)
        goto out;
    if (edge_init(cd, &en->f_src, &src, md_of(fpd, dnnl_query_src_md), true, SLOT_SRC) < 0 ||
        edge_init(cd, &en->f_wei, &wei, md_of(fpd, dnnl_query_weights_md), true, SLOT_WEI) < 0 ||
        edge_init(cd, &en->f_dst, &dst, md_of(fpd, dnnl_query_dst_md), false, SLOT_DST) < 0 ||
        edge_init(cd, &en->w_src, &src, md_of(wpd, dnnl_query_src_md), true, SLOT_SRC) < 0 ||
        edge_init(cd, &en->w_ddst, &dst, md_of(wpd, dnnl_query_diff_dst_md), true, SLOT_DST) < 0 ||
        edge_init(cd, &en->w_dwei, &wei, md_of(wpd, dnnl_query_diff_weights_md), false, SLOT_WEI) < 0 ||
        edge_init(cd, &en->d_ddst, &dst, md_of(dpd, dnnl_query_diff_dst_md), true, SLOT_DST) < 0 ||
        edge_init(cd, &en->d_wei, &wei, md_of(dpd, dnnl_query_weights_md), true, SLOT_WEI) < 0 ||
        edge_init(cd, &en->d_dsrc, &src, md_of(dpd, dnnl_query_diff_src_md), false, SLOT_SRC) < 0)
        goto out;
    if (bias && (dnnl_memory_create(&en->f_bias, &bia, cd->engine, DNNL_MEMORY_NONE) != dnnl_success ||
                 dnnl_memory_create(&en->w_dbias, &bia, cd->engine, DNNL_MEMORY_NONE) != dnnl_success))
        goto out;
    /* plain scratch for gradients that are added after the primitive wrote them */
    if (grow_slot(cd, SLOT_TMP_X, dnnl_memory_desc_get_size(&src)) < 0 ||
        grow_slot(cd, SLOT_TMP_W, dnnl_memory_desc_get_size(&wei)) < 0 ||
        grow_slot(cd, SLOT_TMP_B, dnnl_memory_desc_get_size(&bia)) < 0)
        goto out;
    rc = 0;
out:
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (wpd)
        dnnl_primitive_desc_destroy(wpd);
    if (dpd)
        dnnl_primitive_desc_destroy(dpd);
    if (rc < 0)
        entry_free(en);
    return rc;
}

static bool same_shape(const struct conv_shape *a, const struct conv_shape *b)
{
    return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w && a->c_out == b->c_out && a->kh == b->kh &&
           a->kw == b->kw && a->stride == b->stride && a->pad == b->pad;
}

static struct entry *find_primitive(struct conv_dnnl *cd, const struct conv_shape *s, bool bias)
{
    for (int i = 0; i < cd->count; i++)
        if (same_shape(&cd->entries[i].key, s) && cd->entries[i].bias == bias)
            return &cd->entries[i];
    if (cd->count == cd->cap) {
        int cap = cd->cap ? cd->cap * 2 : 16;
        struct entry *bigger = realloc(cd->entries, (size_t)cap * sizeof *bigger);
        if (!bigger)
            return NULL;
        cd->entries = bigger;
        cd->cap = cap;
    }
    if (entry_init(cd, &cd->entries[cd->count], s, bias) < 0)
        return NULL;
    return &cd->entries[cd->count++];
}

int conv_dnnl_forward(struct conv_dnnl *cd, const struct conv_shape *s, const float *x, const float *w,
                      const float *b, float *y)
{
    struct entry *en = find_primitive(cd, s, b != NULL);
    if (!en || edge_in(cd, &en->f_src, x) < 0 || edge_in(cd, &en->f_wei, w) < 0)
        return -1;
    edge_target(cd, &en->f_dst, y);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, en->f_src.prim}, {DNNL_ARG_WEIGHTS, en->f_wei.prim},
                               {DNNL_ARG_DST, en->f_dst.prim}, {DNNL_ARG_BIAS, en->f_bias}};
    if (b)
        dnnl_memory_set_data_handle(en->f_bias, (void *)b);
    if (dnnl_primitive_execute(en->fwd, cd->stream, b ? 4 : 3, args) != dnnl_success || edge_out(cd, &en->f_dst) < 0)
        return -1;
    return dnnl_stream_wait(cd->stream) == dnnl_success ? 0 : -1;
}

static void add_into(float *restrict to, const float *restrict from, size_t count)
{
    for (size_t i = 0; i < count; i++)
        to[i] += from[i];
}

int conv_dnnl_backward(struct conv_dnnl *cd, const struct conv_shape *s, const float *x, const float *w,
                       const float *dy, float *dx, float *dw, float *db, bool accumulate)
{
    struct entry *en = find_primitive(cd, s, db != NULL);
    if (!en)
        return -1;
    /* weights (and bias): into plain scratch, then added */
    float *tmp_w = cd->slot[SLOT_TMP_W], *tmp_b = cd->slot[SLOT_TMP_B], *tmp_x = cd->slot[SLOT_TMP_X];
    if (edge_in(cd, &en->w_src, x) < 0 || edge_in(cd, &en->w_ddst, dy) < 0)
        return -1;
    edge_target(cd, &en->w_dwei, tmp_w);
    dnnl_exec_arg_t wargs[4] = {{DNNL_ARG_SRC, en->w_src.prim}, {DNNL_ARG_DIFF_DST, en->w_ddst.prim},
                                {DNNL_ARG_DIFF_WEIGHTS, en->w_dwei.prim}, {DNNL_ARG_DIFF_BIAS, en->w_dbias}};
    if (db)
        dnnl_memory_set_data_handle(en->w_dbias, tmp_b);
    if (dnnl_primitive_execute(en->bwd_weights, cd->stream, db ? 4 : 3, wargs) != dnnl_success ||
        edge_out(cd, &en->w_dwei) < 0 || dnnl_stream_wait(cd->stream) != dnnl_success)
        return -1;
    add_into(dw, tmp_w, (size_t)s->c_out * s->c * s->kh * s->kw);
    if (db)
        add_into(db, tmp_b, (size_t)s->c_out);
    if (!dx)
        return 0;
    /* data: written straight into dx unless it must be added to */
    if (edge_in(cd, &en->d_ddst, dy) < 0 || edge_in(cd, &en->d_wei, w) < 0)
        return -1;
    edge_target(cd, &en->d_dsrc, accumulate ? tmp_x : dx);
    dnnl_exec_arg_t dargs[3] = {{DNNL_ARG_DIFF_DST, en->d_ddst.prim}, {DNNL_ARG_WEIGHTS, en->d_wei.prim},
                                {DNNL_ARG_DIFF_SRC, en->d_dsrc.prim}};
    if (dnnl_primitive_execute(en->bwd_data, cd->stream, 3, dargs) != dnnl_success || edge_out(cd, &en->d_dsrc) < 0 ||
        dnnl_stream_wait(cd->stream) != dnnl_success)
        return -1;
    if (accumulate)
        add_into(dx, tmp_x, (size_t)s->n * s->c * s->h * s->w);
    return 0;
}
