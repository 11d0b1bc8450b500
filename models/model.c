/* The block stack behind gcn_model. */
#include <stdint.h>
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
    /* A graph-level model's readout heads: head[0] on the pooled input and
     * head[i + 1] on block i's (jk), or head[n_blocks] alone; NULL weight
     * where there is none. */
    gcn_linear head[GCN_MAX_LAYERS + 1];
    /* The input offered in sparse form (gcn_model_set_sparse_input):
     * sparse_of, retained, and its CSR matrix; NULL when none is used. */
    gcn_tensor *sparse_of;
    gcn_csr *sparse_x;
};

/* Whether the readout pools the output of block i (-1: the input). */
static bool pools(const gcn_model *m, int i)
{
    return m->cfg.readout.enabled && (m->cfg.readout.jk || i == m->n_blocks - 1);
}

static gcn_status init_heads(gcn_ctx *ctx, gcn_model *m)
{
    int64_t in = m->in_feat;
    for (int i = -1; i < m->n_blocks; i++) {
        if (i >= 0)
            in = m->blocks[i].cfg.out ? m->blocks[i].cfg.out : m->n_classes;
        if (pools(m, i))
            GCN_TRY(gcn_linear_init(ctx, &m->head[i + 1], in, m->n_classes, true));
    }
    return GCN_OK;
}

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
    GCN_CHECK(init_heads(ctx, m));
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
/* When sparse is not NULL it is x as a sparse matrix, to which the layer
 * applies dropout p itself (gcn_sparse_dropout_matmul). */
static gcn_status layer_forward(gcn_ctx *ctx, block *b, const gcn_csr *adj_gcn,
                                const gcn_csr *adj_raw, gcn_tensor *x, const gcn_epilogue *in,
                                const gcn_csr *sparse, float p, bool training, gcn_tensor **z,
                                gcn_tensor **bias)
{
    if ((b->cfg.type == GCN_LAYER_GCN && !adj_gcn) || (b->cfg.type == GCN_LAYER_GIN && !adj_raw))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "model: a %s layer needs its adjacency matrix",
                         b->cfg.type == GCN_LAYER_GCN ? "gcn" : "gin");
    switch (b->cfg.type) {
    case GCN_LAYER_GCN:
        *bias = b->gcn.lin.bias;
        if (sparse)
            return gcn_gcn_conv_forward_sparse(ctx, &b->gcn, adj_gcn, sparse, p, training, z);
        return in ? gcn_gcn_conv_forward_after(ctx, &b->gcn, adj_gcn, x, in, training, z)
                  : gcn_gcn_conv_forward_nobias(ctx, &b->gcn, adj_gcn, x, z);
    case GCN_LAYER_GIN:
        *bias = b->gin.lin2.bias;
        return gcn_gin_conv_forward_nobias(ctx, &b->gin, adj_raw, x, training, z);
    case GCN_LAYER_LINEAR:
        *bias = b->lin.bias;
        if (sparse)
            return gcn_sparse_dropout_matmul(ctx, sparse, p, training, b->lin.weight, z);
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
 * output z with its epilogue e not yet applied.  Before the first block,
 * sparse may hold the input h as a sparse matrix, with the dropout p that
 * the first block then applies to it. */
typedef struct carry {
    gcn_tensor *h, *z;
    gcn_epilogue e;
    const gcn_csr *sparse;
    float sparse_p;
} carry;

/* Block i on what block i - 1 left; returns what it leaves for block i + 1
 * (next: that block, NULL after the last), its output itself when `whole`
 * (the readout pools it).  *pool_pending says the readout still has to pool
 * block i - 1's output; when this block is done with it, it is cleared and
 * dropping those values is left to the readout. */
static gcn_status block_forward(gcn_ctx *ctx, block *b, const gcn_csr *adj_gcn,
                                const gcn_csr *adj_raw, carry *c, block *next, bool training,
                                bool first, bool whole, bool *pool_pending)
{
    gcn_status st;
    gcn_tensor *z = NULL, *bias = NULL;
    bool pending = c->z != NULL;
    GCN_CHECK(layer_forward(ctx, b, adj_gcn, adj_raw, pending ? c->z : c->h,
                            pending ? &c->e : NULL, c->sparse, c->sparse_p, training, &z, &bias));
    c->sparse = NULL;
    if (!pending && !first && !reads_input(b)) { /* the previous block's output, now read */
        if (*pool_pending)
            *pool_pending = false; /* ... but not yet pooled: the readout drops it */
        else
            gcn_tensor_drop_values(c->h);
    }
    gcn_tensor_free(&c->h);
    gcn_tensor_free(&c->z);
    c->e = block_epilogue(b, bias, training, next ? next->cfg.dropout : 0.0f);
    if (is_identity(&c->e))
        c->h = gcn_tensor_retain(z);
    else if (next && takes_epilogue(next) && !whole)
        c->z = gcn_tensor_retain(z);
    else
        GCN_CHECK(gcn_apply_epilogue(ctx, z, &c->e, training, &c->h));
cleanup:
    gcn_tensor_free(&z);
    return st;
}

/* A graph-level forward's readout: the heads' inputs as the blocks produce
 * them, then one gcn_readout.  drop[k]: h[k]'s values are needed by nothing
 * after the readout. */
typedef struct readout {
    const gcn_index *graph_ptr;
    int n;
    gcn_tensor *h[GCN_MAX_LAYERS + 1]; /* retained */
    gcn_tensor *w[GCN_MAX_LAYERS + 1], *b[GCN_MAX_LAYERS + 1];
    bool drop[GCN_MAX_LAYERS + 1];
} readout;

/* Head i + 1 reads out h. */
static void read_later(const gcn_model *m, int i, gcn_tensor *h, readout *r)
{
    r->h[r->n] = gcn_tensor_retain(h);
    r->w[r->n] = m->head[i + 1].weight;
    r->b[r->n] = m->head[i + 1].bias;
    r->drop[r->n++] = false;
}

/* Gives the readout h[k] in fp32: the pooling and the heads sum in fp32 over
 * a batch's few graphs.  A bf16 h[k] is widened, and the widened copy is
 * what the readout then holds (its values needed by nothing after it). */
static gcn_status widen_heads(gcn_ctx *ctx, readout *r)
{
    for (int k = 0; k < r->n; k++) {
        if (r->h[k]->dtype != GCN_DTYPE_BF16)
            continue;
        gcn_tensor *w = NULL;
        GCN_TRY(gcn_cast(ctx, r->h[k], GCN_DTYPE_FP32, &w));
        if (r->drop[k])
            gcn_tensor_drop_values(r->h[k]);
        gcn_tensor_free(&r->h[k]);
        r->h[k] = w;
        r->drop[k] = true;
    }
    return GCN_OK;
}

static gcn_status read_out(gcn_ctx *ctx, const gcn_model *m, bool training, readout *r,
                           gcn_tensor **scores)
{
    const gcn_readout_config *rc = &m->cfg.readout;
    GCN_TRY(widen_heads(ctx, r));
    GCN_TRY(gcn_readout(ctx, r->h, r->w, r->b, r->n, r->graph_ptr, rc->pooling, rc->dropout,
                        training, scores));
    for (int k = 0; k < r->n; k++)
        if (r->drop[k])
            gcn_tensor_drop_values(r->h[k]);
    return GCN_OK;
}

/* The blocks on x; *out is the last block's output, or with a readout r
 * the graphs' scores. */
static gcn_status forward(gcn_ctx *ctx, gcn_model *m, const gcn_csr *adj_gcn,
                          const gcn_csr *adj_raw, gcn_tensor *x, bool training, readout *r,
                          gcn_tensor **out)
{
    GCN_TRY(gcn_check_tensor_any(ctx, x, "model input"));
    if (x->cols != m->in_feat)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "model: built for %lld input features, got %lld",
                         (long long)m->in_feat, (long long)x->cols);
    carry c = {0};
    gcn_status st = GCN_OK;
    int layer = gcn_ctx_set_layer(ctx, 0);
    float first = m->blocks[0].cfg.dropout;
    gcn_tensor *x_bf16 = NULL;
    if (m->cfg.bf16 && x->dtype == GCN_DTYPE_FP32) { /* features the caller kept in fp32 */
        GCN_CHECK(gcn_cast(ctx, x, GCN_DTYPE_BF16, &x_bf16));
        x = x_bf16;
    }
    if (r && pools(m, -1))
        read_later(m, -1, x, r);
    if (!r && x == m->sparse_of) {
        c.sparse = m->sparse_x;
        c.sparse_p = training ? first : 0.0f;
    }
    if (training && first > 0.0f && !c.sparse)
        GCN_CHECK(gcn_dropout(ctx, x, first, true, &c.h));
    else /* the input itself, so GCNConv's cache recognises it */
        c.h = gcn_tensor_retain(x);
    bool pooled_prev = false;
    for (int i = 0; i < m->n_blocks; i++) {
        block *next = i + 1 < m->n_blocks ? &m->blocks[i + 1] : NULL;
        bool whole = r && pools(m, i), later = pooled_prev;
        gcn_ctx_set_layer(ctx, i + 1);
        GCN_CHECK(block_forward(ctx, &m->blocks[i], adj_gcn, adj_raw, &c, next, training,
                                i == 0, whole, &later));
        gcn_ctx_set_layer(ctx, 0);
        if (pooled_prev && !later)
            r->drop[r->n - 1] = true;
        if (whole)
            read_later(m, i, c.h, r);
        pooled_prev = whole;
    }
    if (r) {
        GCN_CHECK(read_out(ctx, m, training, r, out));
    } else if (c.h->dtype == GCN_DTYPE_BF16) { /* the loss side is fp32 */
        GCN_CHECK(gcn_cast(ctx, c.h, GCN_DTYPE_FP32, out));
    } else {
        *out = c.h;
        c.h = NULL;
    }
cleanup:
    gcn_tensor_free(&x_bf16);
    gcn_ctx_set_layer(ctx, layer);
    gcn_tensor_free(&c.h);
    gcn_tensor_free(&c.z);
    if (r)
        for (int k = 0; k < r->n; k++)
            gcn_tensor_free(&r->h[k]);
    return st;
}

gcn_status gcn_model_forward(gcn_ctx *ctx, gcn_model *m, const gcn_csr *adj_gcn,
                             const gcn_csr *adj_raw, gcn_tensor *x, bool training,
                             gcn_tensor **logits)
{
    GCN_TRY(gcn_op_begin(ctx, logits));
    GCN_ARG(ctx, m);
    if (m->cfg.readout.enabled)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "model: a graph-level model (with a readout) "
                         "scores graphs: use gcn_model_forward_graphs");
    return forward(ctx, m, adj_gcn, adj_raw, x, training, NULL, logits);
}

gcn_status gcn_model_forward_graphs(gcn_ctx *ctx, gcn_model *m, const gcn_csr *adj_gcn,
                                    const gcn_csr *adj_raw, gcn_tensor *x,
                                    const gcn_index *graph_ptr, bool training,
                                    gcn_tensor **scores)
{
    GCN_TRY(gcn_op_begin(ctx, scores));
    GCN_ARG(ctx, m && graph_ptr);
    if (!m->cfg.readout.enabled)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "model: a node-level model (no readout) scores "
                         "nodes: use gcn_model_forward");
    readout r = {.graph_ptr = graph_ptr};
    return forward(ctx, m, adj_gcn, adj_raw, x, training, &r, scores);
}

bool gcn_model_is_graph_level(const gcn_model *m)
{
    return m && m->cfg.readout.enabled;
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
    for (int i = 0; i <= m->n_blocks; i++) {
        gcn_tensor *p[GCN_LAYER_MAX_PARAMS];
        int k = m->head[i].weight ? gcn_linear_params(&m->head[i], p) : 0;
        for (int j = 0; j < k; j++, n++) {
            if (out)
                out[n] = p[j];
            if (weight_decay)
                weight_decay[n] = m->cfg.optim.weight_decay;
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

/* At most 1 in SPARSE_SHARE elements non-zero makes an input sparse; it is
 * read SPARSE_CHUNK elements at a time (a download each on a device). */
#define SPARSE_SHARE 16
#define SPARSE_CHUNK (1 << 20)

/* Rows [r0, r0 + n) of x on the host: x's own memory on the CPU, else a
 * copy in buf. */
static gcn_status host_rows(gcn_ctx *ctx, const gcn_tensor *x, int64_t r0, int64_t n, float *buf,
                            const float **rows)
{
    const float *src = x->data + r0 * x->cols;
    if (ctx->device == GCN_DEVICE_CPU) {
        *rows = src;
        return GCN_OK;
    }
    *rows = buf;
    return ctx->be->download(ctx, buf, src, (size_t)(n * x->cols) * sizeof *buf);
}

/* x as a CSR matrix in *out, or NULL when more than 1 in SPARSE_SHARE of its
 * elements is non-zero (found out from its first rows when it is dense). */
static gcn_status sparse_form(gcn_ctx *ctx, const gcn_tensor *x, gcn_csr **out)
{
    *out = NULL;
    int64_t rows = x->rows, cols = x->cols, limit = rows * cols / SPARSE_SHARE;
    if (rows > INT32_MAX || cols > INT32_MAX || limit > INT32_MAX)
        return GCN_OK;
    int64_t chunk = SPARSE_CHUNK / cols > 0 ? SPARSE_CHUNK / cols : 1, nnz = 0;
    gcn_status st = GCN_OK;
    float *buf = NULL, *val = NULL;
    int32_t *row_ptr = NULL, *col = NULL;
    if (ctx->device != GCN_DEVICE_CPU && !(buf = malloc((size_t)(chunk * cols) * sizeof *buf)))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "model: out of host memory for the sparse input");
    const float *xr;
    for (int64_t r0 = 0; r0 < rows && nnz <= limit; r0 += chunk) {
        int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
        GCN_CHECK(host_rows(ctx, x, r0, n, buf, &xr));
        for (int64_t i = 0; i < n * cols; i++)
            nnz += xr[i] != 0.0f;
    }
    if (nnz > limit)
        goto cleanup;
    row_ptr = malloc((size_t)(rows + 1) * sizeof *row_ptr);
    col = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *col);
    val = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *val);
    if (!row_ptr || !col || !val)
        GCN_CHECK(GCN_ERROR(ctx, GCN_ERR_NOMEM, "model: out of host memory for the sparse input"));
    int32_t e = 0;
    row_ptr[0] = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
        GCN_CHECK(host_rows(ctx, x, r0, n, buf, &xr));
        for (int64_t i = 0; i < n; i++) {
            for (int64_t j = 0; j < cols; j++)
                if (xr[i * cols + j] != 0.0f) {
                    col[e] = (int32_t)j;
                    val[e++] = xr[i * cols + j];
                }
            row_ptr[r0 + i + 1] = e;
        }
    }
    st = gcn_csr_create(ctx, out, (int32_t)rows, (int32_t)cols, e, row_ptr, col, val);
cleanup:
    free(buf);
    free(row_ptr);
    free(col);
    free(val);
    return st;
}

/* Whether the first block starts with the product of its input and a
 * weight, which gcn_sparse_dropout_matmul can take from a sparse input. */
static bool takes_sparse_input(const gcn_model *m)
{
    block *b = &m->blocks[0];
    return !m->cfg.readout.enabled && m->cfg.sparse_input && !m->cfg.bf16 &&
           (b->cfg.type == GCN_LAYER_LINEAR ||
            (b->cfg.type == GCN_LAYER_GCN && !gcn_gcn_conv_aggregates_first(&b->gcn)));
}

gcn_status gcn_model_set_sparse_input(gcn_ctx *ctx, gcn_model *m, gcn_tensor *x, bool *used)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, m);
    if (used)
        *used = false;
    gcn_tensor_free(&m->sparse_of);
    gcn_csr_free(&m->sparse_x);
    if (!x || !takes_sparse_input(m) || x->requires_grad)
        return GCN_OK;
    GCN_TRY(gcn_check_tensor(ctx, x, "model input"));
    if (x->cols != m->in_feat)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "model: built for %lld input features, got %lld",
                         (long long)m->in_feat, (long long)x->cols);
    GCN_TRY(sparse_form(ctx, x, &m->sparse_x));
    if (m->sparse_x)
        m->sparse_of = gcn_tensor_retain(x);
    if (used)
        *used = m->sparse_x != NULL;
    return GCN_OK;
}

const gcn_csr *gcn_model_sparse_input(const gcn_model *m)
{
    return m ? m->sparse_x : NULL;
}

void gcn_model_free(gcn_model **pm)
{
    if (!pm || !*pm)
        return;
    gcn_model *m = *pm;
    *pm = NULL;
    gcn_tensor_free(&m->sparse_of);
    gcn_csr_free(&m->sparse_x);
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = &m->blocks[i];
        gcn_gcn_conv_release(&b->gcn);
        gcn_gin_conv_release(&b->gin);
        gcn_linear_release(&b->lin);
        gcn_batchnorm1d_release(&b->bn);
    }
    for (int i = 0; i <= GCN_MAX_LAYERS; i++)
        gcn_linear_release(&m->head[i]);
    free(m->blocks);
    free(m);
}
