/* gcn_model: the stack of blocks a configuration describes, each block
 * input dropout -> layer (GCNConv, GINConv or Linear) -> batch norm ->
 * activation, producing class scores (logits) of every node, or, with a
 * readout, of every graph of a batch. */
#ifndef GCN_MODEL_H
#define GCN_MODEL_H

#include "../core/csr.h"
#include "../core/tensor.h"
#include "config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gcn_model gcn_model;

/* Builds the layers for in_feat input features and n_classes outputs,
 * initialising weights from the context's GCN_RNG_INIT stream.  The
 * configuration is copied.  Caller frees with gcn_model_free. */
GCN_API gcn_status gcn_model_create(gcn_ctx *ctx, gcn_model **out, const gcn_model_config *cfg,
                                    int64_t in_feat, int64_t n_classes);

/* Whether the configuration has a readout: the model scores graphs
 * (gcn_model_forward_graphs), not nodes (gcn_model_forward). */
GCN_API bool gcn_model_is_graph_level(const gcn_model *m);

/* Whether some layer aggregates over the normalised (GCN) or the raw (GIN)
 * adjacency; forward needs those matrices. */
GCN_API bool gcn_model_uses_gcn_adj(const gcn_model *m);
GCN_API bool gcn_model_uses_raw_adj(const gcn_model *m);

/* A node-level model's logits [n, n_classes] from x [n, in_feat].  adj_gcn is D^-1/2 (A+I) D^-1/2
 * and adj_raw the unnormalised adjacency; either may be NULL when no layer
 * uses it.  training enables dropout and batch statistics. */
GCN_API gcn_status gcn_model_forward(gcn_ctx *ctx, gcn_model *m, const gcn_csr *adj_gcn,
                                     const gcn_csr *adj_raw, gcn_tensor *x, bool training,
                                     gcn_tensor **logits);

/* A graph-level model's scores [g, n_classes] of the g graphs of a batch:
 * x [n, in_feat] holds their nodes one graph after another, graph_ptr
 * [g + 1] (ascending from 0 to n) where each starts, and the adjacency
 * matrices are the batch's (block diagonal: no edge between graphs).  The
 * readout pools each graph's rows of the input (jk) and of the blocks'
 * outputs, each through its own linear head, and sums the heads. */
GCN_API gcn_status gcn_model_forward_graphs(gcn_ctx *ctx, gcn_model *m, const gcn_csr *adj_gcn,
                                            const gcn_csr *adj_raw, gcn_tensor *x,
                                            const gcn_index *graph_ptr, bool training,
                                            gcn_tensor **scores);

/* Offers x, the constant input later forwards of a node-level model get
 * (the dataset's features): when at most 1 in 16 of its elements is
 * non-zero, it does not require grad, and the first block starts with the
 * product of its input and a weight (a linear layer, or a GCN layer that
 * transforms first), the model keeps x as a CSR matrix, and every forward
 * on x runs the first block's dropout and product on the non-zeros only
 * (gcn_sparse_dropout_matmul): the same masks and the same model up to
 * float rounding, without the dense dropout's pass over x or its output.
 * The configuration's sparse_input = false turns it off.  *used (may be
 * NULL) says whether the model uses it.  Replaces an earlier offer; NULL
 * withdraws it.  On a device the check reads x back in chunks, once. */
GCN_API gcn_status gcn_model_set_sparse_input(gcn_ctx *ctx, gcn_model *m, gcn_tensor *x,
                                              bool *used);

/* The input's sparse form the model uses (borrowed), NULL when none. */
GCN_API const gcn_csr *gcn_model_sparse_input(const gcn_model *m);

/* The trainable tensors (borrowed) and each one's weight decay (the layer's
 * own, or the optimiser's when the layer sets none); returns the count.
 * out and weight_decay may be NULL to count only. */
GCN_API int gcn_model_params(const gcn_model *m, gcn_tensor **out, float *weight_decay);

/* Non-trainable state saved in checkpoints (batch-norm running statistics). */
GCN_API int gcn_model_buffers(const gcn_model *m, gcn_tensor **out);

/* Number of trainable scalars. */
GCN_API int64_t gcn_model_param_count(const gcn_model *m);

GCN_API void gcn_model_free(gcn_model **m);

#ifdef __cplusplus
}
#endif
#endif
