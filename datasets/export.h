/* Writes a dataset, or one graph's CSR matrix, as NumPy .npy files, so
 * another framework (PyTorch and PyTorch Geometric in tools/compare/) works
 * on exactly the same inputs. */
#ifndef GCN_DATASET_EXPORT_H
#define GCN_DATASET_EXPORT_H

#include "dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes into a new folder beside dir ("dir.tmp.XXXXXX") renamed to dir
 * once every file is written (into an existing dir, file by file, the
 * files of an earlier export this one lacks removed), so that a failure
 * leaves nothing behind; a reordered dataset in its original node ids:
 *   x.npy          float32 [n_nodes, n_features]   (when the dataset has features)
 *   edge_index.npy int64   [2, nnz]  source row, target column of every stored entry
 *   y.npy          int64   [n_nodes]  (-1 = unlabelled)
 *   train_idx.npy, valid_idx.npy, test_idx.npy  int64 node ids */
GCN_API gcn_status gcn_dataset_export_npy(gcn_ctx *ctx, const gcn_dataset *ds, const char *dir);

/* Writes the graph's CSR matrix into dir as gcn_dataset_export_npy does:
 *   shape.npy   int64   [2]            n_nodes, n_nodes
 *   row_ptr.npy int64   [n_nodes + 1]
 *   col_idx.npy int64   [nnz]
 *   values.npy  float32 [nnz]  (ones when the graph stores no values) */
GCN_API gcn_status gcn_graph_export_npy(gcn_ctx *ctx, const gcn_graph *g, const char *dir);

#ifdef __cplusplus
}
#endif
#endif
