/* GCNConv: y = A x W + b, in the cheaper of the two orders, with the
 * aggregation of a constant input cached across epochs. */
#include <stdlib.h>

#include "../core/internal.h"
#include "../kernels/spmm/spmm.h"
#include "internal.h"

/* A x kept for a constant input x and the matrix A it was computed with. */
struct gcn_gcn_conv_cache {
    gcn_tensor *ax;
    gcn_tensor *x; /* retained, identifies the cache */
    const gcn_csr *adj;
};

gcn_status gcn_gcn_conv_init(gcn_ctx *ctx, gcn_gcn_conv *conv, int64_t in, int64_t out,
                             bool bias)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, conv);
    *conv = (gcn_gcn_conv){.order = GCN_ORDER_AUTO};
    return gcn_linear_init(ctx, &conv->lin, in, out, bias);
}

bool gcn_gcn_conv_aggregates_first(const gcn_gcn_conv *conv)
{
    /* A cached A x costs no SpMM after the first epoch, whatever the widths. */
    if (conv->order == GCN_ORDER_AUTO)
        return conv->cache_input || conv->lin.in < conv->lin.out;
    return conv->order == GCN_ORDER_AGGREGATE_FIRST;
}

/* A x, from the cache when x is the constant input it was computed for. */
static gcn_status aggregate_input(gcn_ctx *ctx, gcn_gcn_conv *conv, const gcn_csr *adj,
                                  gcn_tensor *x, gcn_tensor **ax)
{
    bool cacheable = conv->cache_input && !gcn_tensor_requires_grad(x);
    struct gcn_gcn_conv_cache *c = conv->cache;
    if (cacheable && c && c->ax && c->x == x && c->adj == adj) {
        *ax = gcn_tensor_retain(c->ax);
        return GCN_OK;
    }
    if (cacheable && !c) {
        c = conv->cache = calloc(1, sizeof *c);
        if (!c)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "gcn_conv: out of host memory for its cache");
    }
    GCN_TRY(gcn_spmm(ctx, adj, x, ax));
    if (cacheable) {
        gcn_tensor_free(&c->ax);
        gcn_tensor_free(&c->x);
        c->ax = gcn_tensor_retain(*ax);
        c->x = gcn_tensor_retain(x);
        c->adj = adj;
    }
    return GCN_OK;
}

/* Computes y = A t, where t is the product the caller just made and st
 * the status it returned.  Backward needs neither t's values nor the
 * SpMM's input, so t's values are dropped as soon as y exists. */
static gcn_status aggregate_product(gcn_ctx *ctx, const gcn_csr *adj, gcn_status st,
                                    gcn_tensor *t, gcn_tensor **y)
{
    GCN_CHECK(st);
    GCN_CHECK(gcn_spmm(ctx, adj, t, y));
    gcn_tensor_drop_values(t);
cleanup:
    gcn_tensor_free(&t);
    return st;
}

/* Computes A (in(x) W), where `in` is the previous block's epilogue (NULL
 * for none); the epilogue runs inside the product with W. */
static gcn_status transform_first(gcn_ctx *ctx, gcn_gcn_conv *conv, const gcn_csr *adj,
                                  gcn_tensor *x, const gcn_epilogue *in, bool training,
                                  gcn_tensor **y)
{
    gcn_tensor *t = NULL;
    gcn_status st = in ? gcn_epilogue_matmul(ctx, x, in, training, conv->lin.weight, &t)
                       : gcn_matmul(ctx, x, conv->lin.weight, false, false, &t);
    return aggregate_product(ctx, adj, st, t, y);
}

gcn_status gcn_gcn_conv_forward_nobias(gcn_ctx *ctx, gcn_gcn_conv *conv, const gcn_csr *adj,
                                       gcn_tensor *x, gcn_tensor **y)
{
    GCN_TRY(gcn_op_begin(ctx, y));
    GCN_ARG(ctx, conv && adj);
    if (!gcn_gcn_conv_aggregates_first(conv))
        return transform_first(ctx, conv, adj, x, NULL, false, y);
    gcn_tensor *t = NULL;
    GCN_TRY(aggregate_input(ctx, conv, adj, x, &t));
    gcn_status st = gcn_matmul(ctx, t, conv->lin.weight, false, false, y);
    gcn_tensor_free(&t);
    return st;
}

gcn_status gcn_gcn_conv_forward_after(gcn_ctx *ctx, gcn_gcn_conv *conv, const gcn_csr *adj,
                                      gcn_tensor *x, const gcn_epilogue *in, bool training,
                                      gcn_tensor **y)
{
    GCN_TRY(gcn_op_begin(ctx, y));
    GCN_ARG(ctx, conv && adj && in);
    if (gcn_gcn_conv_aggregates_first(conv))
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "gcn_conv: a layer that aggregates first needs its input itself");
    return transform_first(ctx, conv, adj, x, in, training, y);
}

gcn_status gcn_gcn_conv_forward_sparse(gcn_ctx *ctx, gcn_gcn_conv *conv, const gcn_csr *adj,
                                       const gcn_csr *x, float p, bool training, gcn_tensor **y)
{
    GCN_TRY(gcn_op_begin(ctx, y));
    GCN_ARG(ctx, conv && adj);
    if (gcn_gcn_conv_aggregates_first(conv))
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "gcn_conv: a layer that aggregates first needs its input dense");
    gcn_tensor *t = NULL;
    gcn_status st = gcn_sparse_dropout_matmul(ctx, x, p, training, conv->lin.weight, &t);
    return aggregate_product(ctx, adj, st, t, y);
}

gcn_status gcn_gcn_conv_forward(gcn_ctx *ctx, gcn_gcn_conv *conv, const gcn_csr *adj,
                                gcn_tensor *x, gcn_tensor **y)
{
    GCN_TRY(gcn_op_begin(ctx, y));
    GCN_ARG(ctx, conv);
    gcn_tensor *t = NULL;
    GCN_TRY(gcn_gcn_conv_forward_nobias(ctx, conv, adj, x, conv->lin.bias ? &t : y));
    if (!conv->lin.bias)
        return GCN_OK;
    gcn_status st = gcn_add_bias(ctx, t, conv->lin.bias, y);
    gcn_tensor_free(&t);
    return st;
}

void gcn_gcn_conv_release(gcn_gcn_conv *conv)
{
    if (!conv)
        return;
    gcn_linear_release(&conv->lin);
    if (conv->cache) {
        gcn_tensor_free(&conv->cache->ax);
        gcn_tensor_free(&conv->cache->x);
        free(conv->cache);
        conv->cache = NULL;
    }
}

const gcn_tensor *gcn_gcn_conv_cached(const gcn_gcn_conv *conv)
{
    return conv->cache ? conv->cache->ax : NULL;
}
