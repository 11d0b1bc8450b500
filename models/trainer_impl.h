/* The trainer's fields, shared by trainer.c and checkpoint.c. */
#ifndef GCN_TRAINER_IMPL_H
#define GCN_TRAINER_IMPL_H

#include "trainer.h"

#define GCN_MAX_OPTIMISERS (GCN_MAX_LAYERS + 1)

struct gcn_trainer {
    gcn_model_config cfg;
    gcn_model *model;
    gcn_optim *opt[GCN_MAX_OPTIMISERS]; /* one per weight-decay group */
    int n_opt;
    gcn_csr *adj_gcn, *adj_raw;
    gcn_dataset_device dev;
    int epoch;
    gcn_train_best best;
    gcn_train_memory mem; /* measured in gcn_trainer_create */
};

#endif
