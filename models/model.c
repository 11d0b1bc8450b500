/* The block stack behind gcn_model. */
#include <stdlib.h>

#include "../core/internal.h"
#include "model.h"

typedef struct block {
    gcn_layer_config cfg;
    gcn_gcn_conv gcn;
    gcn_gin_conv gin;
    gcn_linear lin;
    gcn_batchnorm1d bn;
} block;

struct gcn_model {
    gcn_model_config cfg;
    int64_t in_feat, n_classes;
    int n_blocks;
    block *blocks;
};

static gcn_status init_block(gcn_ctx *ctx, block *b, int i, int64_t in, int64_t out)
{
    const gcn_layer_config *c = &b->cfg;
    switch (c->type) {
    case GCN_LAYER_GCN:
        GCN_TRY(gcn_gcn_conv_init(ctx, &b->gcn, in, out, c->bias));
        b->gcn.cache_input = i == 0 && c->dropout == 0.0f;
        break;
    case GCN_LAYER_GIN:
        GCN_TRY(gcn_gin_conv_init(ctx, &b->gin, in, c->hidden ? c->hidden : out, out, c->eps,
                                  c->train_eps));
        break;
    case GCN_LAYER_LINEAR:
        GCN_TRY(gcn_linear_init(ctx, &b->lin, in, out, c->bias));
        break;
    }
    return c->batchnorm ? gcn_batchnorm1d_init(ctx, &b->bn, out) : GCN_OK;
}

gcn_status gcn_model_create(gcn_ctx *ctx, gcn_model **out, const gcn_model_config *cfg,
                            int64_t in_feat, int64_t n_classes)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out && cfg && cfg->n_layers >= 1 && cfg->n_layers <= GCN_MAX_LAYERS);
    *out = NULL;
    if (in_feat < 1 || n_classes < 2)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "model: needs at least 1 input feature and 2 classes (got %lld, %lld)",
                         (long long)in_feat, (long long)n_classes);
    gcn_status st = GCN_OK;
    gcn_model *m = calloc(1, sizeof *m);
    block *blocks = calloc((size_t)cfg->n_layers, sizeof *blocks);
    if (!m || !blocks) {
        free(m);
        free(blocks);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "model: out of host memory");
    }
    m->cfg = *cfg;
    m->in_feat = in_feat;
    m->n_classes = n_classes;
    m->blocks = blocks;
    int64_t in = in_feat;
    for (int i = 0; i < cfg->n_layers; i++) {
        block *b = &m->blocks[i];
        b->cfg = cfg->layers[i];
        int64_t width = b->cfg.out ? b->cfg.out : n_classes;
        m->n_blocks = i + 1;
        GCN_CHECK(init_block(ctx, b, i, in, width));
        in = width;
    }
    *out = m;
    return GCN_OK;
cleanup:
    gcn_model_free(&m);
    return st;
}

static bool uses(const gcn_model *m, gcn_layer_type t)
{
    for (int i = 0; m && i < m->n_blocks; i++)
        if (m->blocks[i].cfg.type == t)
            return true;
    return false;
}

bool gcn_model_uses_gcn_adj(const gcn_model *m) { return uses(m, GCN_LAYER_GCN); }
bool gcn_model_uses_raw_adj(const gcn_model *m) { return uses(m, GCN_LAYER_GIN); }

/* The layer of a block without its bias, and the bias left for the
 * epilogue; `in`, when not NULL, is the previous block's epilogue, still
 * to be applied to x (takes_epilogue). */
static gcn_status layer_forward(gcn_ctx *ctx, block *b, const gcn_csr *adj_gcn,
                                const gcn_csr *adj_raw, gcn_tensor *x, const gcn_epilogue *in,
                                bool training, gcn_tensor **z, gcn_tensor **bias)
{
    if ((b->cfg.type == GCN_LAYER_GCN && !adj_gcn) || (b->cfg.type == GCN_LAYER_GIN && !adj_raw))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "model: a %s layer needs its adjacency matrix",
                         b->cfg.type == GCN_LAYER_GCN ? "gcn" : "gin");
    switch (b->cfg.type) {
    case GCN_LAYER_GCN:
        *bias = b->gcn.lin.bias;
        return in ? gcn_gcn_conv_forward_after(ctx, &b->gcn, adj_gcn, x, in, training, z)
                  : gcn_gcn_conv_forward_nobias(ctx, &b->gcn, adj_gcn, x, z);
    case GCN_LAYER_GIN:
        *bias = b->gin.lin2.bias;
        return gcn_gin_conv_forward_nobias(ctx, &b->gin, adj_raw, x, training, z);
    case GCN_LAYER_LINEAR:
        *bias = b->lin.bias;
        return in ? gcn_epilogue_matmul(ctx, x, in, training, b->lin.weight, z)
                  : gcn_matmul(ctx, x, b->lin.weight, false, false, z);
    }
    return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "model: unknown layer type %d", (int)b->cfg.type);
}

/* The block's tail as one epilogue: its bias, norm and activation, and the
 * dropout on the next block's input (next_dropout, 0 for none). */
static gcn_epilogue block_epilogue(const block *b, gcn_tensor *bias, bool training,
                                   float next_dropout)
{
    gcn_epilogue e = {.bias = bias, .act = b->cfg.activation, .alpha = 1.0f,
                      .dropout = training ? next_dropout : 0.0f};
    if (b->cfg.batchnorm) {
        e.gamma = b->bn.gamma;
        e.beta = b->bn.beta;
        e.running_mean = b->bn.running_mean;
        e.running_var = b->bn.running_var;
        e.momentum = b->bn.momentum;
        e.eps = b->bn.eps;
    }
    return e;
}

static bool is_identity(const gcn_epilogue *e)
{
    return !e->bias && !e->gamma && e->act == GCN_ACT_NONE && e->dropout == 0.0f;
}

/* Whether the block's layer starts with the product of its input and a
 * weight, which can apply the previous block's epilogue itself
 * (gcn_epilogue_matmul) so that the epilogue's output is never kept. */
static bool takes_epilogue(block *b)
{
    return b->cfg.type == GCN_LAYER_LINEAR ||
           (b->cfg.type == GCN_LAYER_GCN && !gcn_gcn_conv_aggregates_first(&b->gcn));
}

/* Whether the block's backward reads its input's values: not when the
 * input only goes through an SpMM (GIN with a fixed eps, GCN aggregating
 * first), whose backward needs the matrix alone. */
static bool reads_input(block *b)
{
    switch (b->cfg.type) {
    case GCN_LAYER_GIN:
        return b->gin.train_eps;
    case GCN_LAYER_GCN:
        return !gcn_gcn_conv_aggregates_first(&b->gcn);
    case GCN_LAYER_LINEAR:
        return true;
    }
    return true;
}

/* Between blocks the model holds either the previous block's output h, or,
 * when the next block takes it (takes_epilogue), the previous layer's
 * output z with its epilogue e not yet applied. */
typedef struct carry {
    gcn_tensor *h, *z;
    gcn_epilogue e;
} carry;

/* Block i on what block i - 1 left; returns what it leaves for block i + 1
 * (next: that block, NULL after the last). */
static gcn_status block_forward(gcn_ctx *ctx, block *b, const gcn_csr *adj_gcn,
                                const gcn_csr *adj_raw, carry *c, block *next, bool training,
                                bool first)
{
    gcn_status st;
    gcn_tensor *z = NULL, *bias = NULL;
    bool pending = c->z != NULL;
    GCN_CHECK(layer_forward(ctx, b, adj_gcn, adj_raw, pending ? c->z : c->h,
                            pending ? &c->e : NULL, training, &z, &bias));
    if (!pending && !first && !reads_input(b))
        gcn_tensor_drop_values(c->h); /* the previous block's output, now read */
    gcn_tensor_free(&c->h);
    gcn_tensor_free(&c->z);
    c->e = block_epilogue(b, bias, training, next ? next->cfg.dropout : 0.0f);
    if (is_identity(&c->e))
        c->h = gcn_tensor_retain(z);
    else if (next && takes_epilogue(next))
        c->z = gcn_tensor_retain(z);
    else
        GCN_CHECK(gcn_apply_epilogue(ctx, z, &c->e, training, &c->h));
cleanup:
    gcn_tensor_free(&z);
    return st;
}

gcn_status gcn_model_forward(gcn_ctx *ctx, gcn_model *m, const gcn_csr *adj_gcn,
                             const gcn_csr *adj_raw, gcn_tensor *x, bool training,
                             gcn_tensor **logits)
{
    GCN_TRY(gcn_op_begin(ctx, logits));
    GCN_ARG(ctx, m);
    GCN_TRY(gcn_check_tensor(ctx, x, "model input"));
    if (x->cols != m->in_feat)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "model: built for %lld input features, got %lld",
                         (long long)m->in_feat, (long long)x->cols);
    carry c = {0};
    float first = m->blocks[0].cfg.dropout;
    if (training && first > 0.0f)
        GCN_TRY(gcn_dropout(ctx, x, first, true, &c.h));
    else /* the input itself, so GCNConv's cache recognises it */
        c.h = gcn_tensor_retain(x);
    for (int i = 0; i < m->n_blocks; i++) {
        block *next = i + 1 < m->n_blocks ? &m->blocks[i + 1] : NULL;
        gcn_status st = block_forward(ctx, &m->blocks[i], adj_gcn, adj_raw, &c, next, training,
                                      i == 0);
        if (st != GCN_OK) {
            gcn_tensor_free(&c.h);
            gcn_tensor_free(&c.z);
            return st;
        }
    }
    *logits = c.h;
    return GCN_OK;
}

int gcn_model_params(const gcn_model *m, gcn_tensor **out, float *weight_decay)
{
    int n = 0;
    for (int i = 0; i < m->n_blocks; i++) {
        const block *b = &m->blocks[i];
        gcn_tensor *p[GCN_LAYER_MAX_PARAMS];
        int k = b->cfg.type == GCN_LAYER_GCN   ? gcn_linear_params(&b->gcn.lin, p)
                : b->cfg.type == GCN_LAYER_GIN ? gcn_gin_conv_params(&b->gin, p)
                                               : gcn_linear_params(&b->lin, p);
        if (b->cfg.batchnorm)
            k += gcn_batchnorm1d_params(&b->bn, p + k);
        float wd = b->cfg.weight_decay >= 0 ? b->cfg.weight_decay : m->cfg.optim.weight_decay;
        for (int j = 0; j < k; j++, n++) {
            if (out)
                out[n] = p[j];
            if (weight_decay)
                weight_decay[n] = wd;
        }
    }
    return n;
}

int gcn_model_buffers(const gcn_model *m, gcn_tensor **out)
{
    int n = 0;
    for (int i = 0; i < m->n_blocks; i++) {
        const block *b = &m->blocks[i];
        const gcn_batchnorm1d *bns[2] = {b->cfg.batchnorm ? &b->bn : NULL,
                                         b->cfg.type == GCN_LAYER_GIN ? &b->gin.bn : NULL};
        for (int j = 0; j < 2; j++)
            if (bns[j]) {
                if (out) {
                    out[n] = bns[j]->running_mean;
                    out[n + 1] = bns[j]->running_var;
                }
                n += 2;
            }
    }
    return n;
}

int64_t gcn_model_param_count(const gcn_model *m)
{
    int n = gcn_model_params(m, NULL, NULL);
    gcn_tensor **p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    int64_t total = 0;
    if (!p)
        return -1;
    gcn_model_params(m, p, NULL);
    for (int i = 0; i < n; i++)
        total += gcn_tensor_numel(p[i]);
    free(p);
    return total;
}

void gcn_model_free(gcn_model **pm)
{
    if (!pm || !*pm)
        return;
    gcn_model *m = *pm;
    *pm = NULL;
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = &m->blocks[i];
        gcn_gcn_conv_release(&b->gcn);
        gcn_gin_conv_release(&b->gin);
        gcn_linear_release(&b->lin);
        gcn_batchnorm1d_release(&b->bn);
    }
    free(m->blocks);
    free(m);
}
