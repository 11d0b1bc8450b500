/* The trainer's fields, shared by trainer.c and checkpoint.c. */
#ifndef GCN_TRAINER_IMPL_H
#define GCN_TRAINER_IMPL_H

#include "../core/cuda.h"
#include "trainer.h"

#define GCN_MAX_OPTIMISERS (GCN_MAX_LAYERS + 1)

struct gcn_trainer {
    gcn_ctx *ctx;
    gcn_model_config cfg;
    gcn_model *model;
    gcn_optim *opt[GCN_MAX_OPTIMISERS]; /* one per weight-decay group */
    int n_opt;
    gcn_csr *adj_gcn, *adj_raw;
    gcn_dataset_device dev;
    int epoch;
    gcn_train_best best;
    gcn_train_memory mem; /* measured in gcn_trainer_create */
    struct epoch_readout *readout; /* device: what an epoch reads back, at a fixed
                                    * address so a captured epoch writes it */
    int locked_epochs;    /* consecutive epochs begun with every SpMM site locked */
    bool graph_failed;    /* a capture failed: epochs run launch by launch */
    gcn_graph *graph;     /* the captured epoch, once there is one */
    uint64_t graph_draws; /* dropout counters one replay moves the stream by */
};

#endif
