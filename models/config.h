/* Model configurations: the JSON files in models/ (documented in
 * models/README.md) read into a validated struct. */
#ifndef GCN_MODEL_CONFIG_H
#define GCN_MODEL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"
#include "../layers/layers.h"
#include "../optim/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GCN_MAX_LAYERS 32

typedef enum gcn_layer_type {
    GCN_LAYER_GCN = 0,
    GCN_LAYER_GIN,
    GCN_LAYER_LINEAR
} gcn_layer_type;

/* One block: dropout on the input, the layer, then batch norm and the
 * activation on its output. */
typedef struct gcn_layer_config {
    gcn_layer_type type;
    int64_t out;           /* output width; 0 means the number of classes */
    int64_t hidden;        /* GIN: width of the MLP's hidden layer; 0 means out */
    bool bias;
    bool batchnorm;
    gcn_activation activation;
    float dropout;         /* on the layer's input, in [0, 1) */
    float weight_decay;    /* for this layer's parameters; < 0: the optimiser's */
    float eps;             /* GIN */
    bool train_eps;        /* GIN */
} gcn_layer_config;

/* A graph-level model's readout: each graph's node rows pooled, through a
 * linear head to class scores.  With jk (the GIN paper's jumping
 * knowledge), the input and every block's output are pooled, each through
 * its own head, and the heads' outputs summed; otherwise only the last
 * block's. */
typedef struct gcn_readout_config {
    bool enabled;          /* scores per graph, trained on batches of graphs */
    gcn_pooling pooling;   /* sum (default), mean or max over a graph's nodes */
    bool jk;
    float dropout;         /* on each head's output, in training, in [0, 1) */
} gcn_readout_config;

typedef struct gcn_model_config {
    char name[64];
    int n_layers;
    gcn_layer_config layers[GCN_MAX_LAYERS];
    gcn_optim_opts optim;
    int lr_every;          /* StepLR: every lr_every epochs (0: never) the */
    float lr_gamma;        /* learning rate is multiplied by lr_gamma */
    int epochs;
    int runs;
    uint64_t seed;
    char device[16];       /* "auto", "cpu", "cuda" or "cuda:N" */
    bool tf32;             /* precision "tf32" (else "fp32") */
    bool bf16;             /* precision "bf16": features, activations and their
                            * gradients stored in bf16, computed in fp32; the
                            * parameters, optimiser state and loss in fp32 */
    char spmm[64];         /* "auto", "auto-deterministic", a kernel or a strategy */
    bool cuda_graph;       /* replay steady-state epochs as one CUDA graph (default on) */
    bool sparse_input;     /* features that are mostly zeros go to the first layer as a
                            * sparse matrix (gcn_model_set_sparse_input; default on) */
    int threads;           /* CPU threads (gcn_ctx_opts.threads); 0: the CPUs the process
                            * may use */
    int ranks;             /* ranks the graph is partitioned over (default 1): key
                            * "devices" (one GPU each, NCCL) or "ranks" (all on the
                            * device, the local transport) */
    bool nccl;             /* the ranks are GPUs joined by NCCL */
    char reorder[64];      /* "auto" (the order as loaded, METIS's tried by epoch
                            * time on a GPU: gcntrain) or a
                            * datasets/reorder.h spec: "none", "degree", "metis",
                            * "metis:S,...", "parts:N" */
    gcn_readout_config readout;
    int batch_size;        /* graphs a training batch (graph-level models; default 32) */
    /* dataset defaults, overridable on the command line */
    char root[256];
    char cache_dir[256];   /* "" : dataset caches in each dataset's processed/ folder;
                            * else this folder, which also keeps the reorderings
                            * (METIS, parts) of generated graphs */
    char features[32];     /* "file", "random:D" or "degree" */
    bool normalize_features;
    uint64_t data_seed;    /* seeds generated datasets, substitute features and
                            * drawn splits, independently of the training seed */
    bool download;         /* gcntrain downloads a named dataset missing under root
                            * (default on; gcn_dataset_fetch) */
    char labels[32];       /* "file" or "random:K" (substitute labels) */
} gcn_model_config;

/* Every field at its default: no layers, Adam lr 0.01, 200 epochs, 1 run,
 * seed 0, device auto, fp32, spmm auto, CUDA graphs on, reorder auto, no
 * readout (a node-level model), batches of 32 graphs, root "data",
 * features and labels "file". */
GCN_API gcn_model_config gcn_model_config_default(void);

/* Reads and validates a configuration.  On failure returns GCN_ERR_IO or
 * GCN_ERR_FORMAT and writes one line naming the file and the key path (or
 * line) into err:  "models/x.json: layers[2].dropout: expected a number in
 * [0, 1)". */
GCN_API gcn_status gcn_model_config_load(gcn_model_config *cfg, const char *path, char *err,
                                         size_t err_size);

/* The same from a string; `source` names it in messages. */
GCN_API gcn_status gcn_model_config_parse(gcn_model_config *cfg, const char *json,
                                          const char *source, char *err, size_t err_size);

/* CRC-32 of the architecture (layers and their widths), stored in
 * checkpoints so a resume refuses a different model. */
GCN_API uint32_t gcn_model_config_hash(const gcn_model_config *cfg);

/* One line per layer, e.g. "gcn 256 batchnorm relu dropout 0.5". */
GCN_API int gcn_model_config_describe(const gcn_model_config *cfg, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
