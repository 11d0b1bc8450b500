/* Writes a dataset as NumPy .npy files, so another framework (PyTorch
 * Geometric in tools/compare/) trains on exactly the same inputs. */
#ifndef GCN_DATASET_EXPORT_H
#define GCN_DATASET_EXPORT_H

#include "dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates dir if needed and writes, each through a temporary file renamed
 * into place:
 *   x.npy          float32 [n_nodes, n_features]   (when the dataset has features)
 *   edge_index.npy int64   [2, nnz]  source row, target column of every stored entry
 *   y.npy          int64   [n_nodes]  (-1 = unlabelled)
 *   train_idx.npy, valid_idx.npy, test_idx.npy  int64 node ids */
gcn_status gcn_dataset_export_npy(gcn_ctx *ctx, const gcn_dataset *ds, const char *dir);

#ifdef __cplusplus
}
#endif
#endif
