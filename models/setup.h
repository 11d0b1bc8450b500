/* A configuration put to use, as the tools do it: command-line values over
 * its keys, the context options it asks for, and the dataset it describes. */
#ifndef GCN_MODEL_SETUP_H
#define GCN_MODEL_SETUP_H

#include <stddef.h>

#include "../core/ctx.h"
#include "../datasets/dataset.h"
#include "config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets one key from a command-line value: "device" (auto, cpu, cuda or
 * cuda:N), "precision" (fp32 or tf32), "threads" (0 to GCN_MAX_THREADS),
 * "cuda_graph" or "sparse_input" (on or off), "spmm",
 * "reorder", "root" or "features" (the strings the loaders check when they use them),
 * "labels" ("file" or "random:K").  On a bad
 * key or value returns GCN_ERR_INVALID_ARG and writes one line naming both
 * into err. */
GCN_API gcn_status gcn_model_config_set(gcn_model_config *cfg, const char *key,
                                        const char *value, char *err, size_t err_size);

/* The context options of the configuration: its device, seed, precision
 * and threads over *opts (the other fields stay as they are).  GCN_ERR_INVALID_ARG for a
 * device string gcn_device_parse refuses. */
GCN_API gcn_status gcn_model_config_ctx_opts(const gcn_model_config *cfg, gcn_ctx_opts *opts);

/* Loads the dataset spec (gcn_dataset_load) as the configuration says: its
 * root, substitute features and labels, feature normalisation, its reordering
 * ("auto" loads the order as it is: gcntrain computes METIS's on a host
 * thread meanwhile and keeps it only when an epoch on it is faster),
 * with the context's random streams seeded from its data seed.  Caller
 * frees. */
GCN_API gcn_status gcn_model_config_load_dataset(gcn_ctx *ctx, const gcn_model_config *cfg,
                                                 const char *spec, gcn_dataset **ds);

#ifdef __cplusplus
}
#endif
#endif
