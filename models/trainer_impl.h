/* The trainer's fields and the internals trainer.c, predict.c and
 * checkpoint.c share. */
#ifndef GCN_TRAINER_IMPL_H
#define GCN_TRAINER_IMPL_H

#include "../core/cuda.h"
#include "../datasets/partition.h"
#include "trainer.h"

#define GCN_MAX_OPTIMISERS (GCN_MAX_LAYERS + 1)

/* A graph-level model's collection, batches and evaluation batch
 * (trainer_graphs.c). */
typedef struct gcn_graph_data gcn_graph_data;

/* What the trainer of one rank of several adds (trainer_rank.c). */
typedef struct gcn_trainer_rank gcn_trainer_rank;

struct gcn_trainer {
    gcn_ctx *ctx;
    gcn_model_config cfg;
    gcn_model *model;
    gcn_optim *opt[GCN_MAX_OPTIMISERS]; /* one per weight-decay group */
    int n_opt;
    int lr_steps;                        /* StepLR decays applied to the optimisers */
    gcn_csr *adj_gcn, *adj_raw;
    gcn_dataset_device dev;
    int epoch;
    bool validates;       /* the dataset has validation rows (else the latest epoch is kept) */
    gcn_train_best best;
    gcn_train_memory mem; /* measured in gcn_trainer_create */
    struct epoch_readout *readout; /* device: what an epoch reads back, at a fixed
                                    * address so a captured epoch writes it */
    int locked_epochs;    /* consecutive epochs begun with every SpMM site locked */
    bool graph_failed;    /* a capture failed: epochs run launch by launch */
    gcn_graph *graph;     /* the captured epoch, once there is one */
    uint64_t graph_draws; /* dropout counters one replay moves the stream by */
    float *best_state;    /* host: the model state (gcn_trainer_model_state's tensors, in
                           * order) of the best-validation epoch; the initial state before
                           * the first epoch */
    size_t state_floats;  /* floats in the model state */
    gcn_tensor **state;   /* the model state's tensors (borrowed), n_state of them */
    int n_state;
    int32_t *position;    /* position[original id] = the node's row here; NULL when the
                           * dataset was not reordered */
    int32_t *order;       /* order[row] = the node's original id; NULL likewise */
    struct gcn_order_slot *staged; /* the other numbering (gcn_trainer_stage_order): what
                                    * gcn_trainer_switch_order swaps in; NULL: none */
    gcn_graph_data *graphs; /* a graph-level model's data (then dev is empty and adj_raw,
                             * adj_gcn are the evaluation batch's); NULL otherwise */
    uint32_t split_hash;    /* a graph-level model's gcn_trainer_split_hash, which its
                             * checkpoints hold; 0 otherwise */
    int64_t split_rows[3];  /* training, validation and test rows (of every rank) */
    gcn_trainer_rank *rank; /* one rank of several: its share; NULL otherwise */
};

/* A numbering of the dataset's nodes as the trainer uses it: the data on
 * the device, the adjacency matrices and the permutation (trainer_order.c). */
typedef struct gcn_order_slot {
    gcn_dataset_device dev;
    gcn_csr *adj_gcn, *adj_raw;
    int32_t *position, *order; /* as the trainer's fields; NULL: the original order */
} gcn_order_slot;

void gcn_order_slot_free(gcn_order_slot **slot);

/* The dataset's permutation into *position and *order (both NULL when it is
 * not reordered). */
gcn_status gcn_trainer_keep_order(gcn_ctx *ctx, const gcn_dataset *ds, int32_t **position,
                                  int32_t **order);

/* The model's state: its parameters, then its buffers (borrowed); returns
 * the count, out may be NULL to count. */
int gcn_trainer_model_state(const gcn_trainer *tr, gcn_tensor **out);

/* st, with "allocating what: " before the message when it is
 * GCN_ERR_NOMEM: an out-of-memory error names what was being allocated. */
gcn_status gcn_trainer_allocating(gcn_ctx *ctx, gcn_status st, const char *what);

/* Allocates tr->state and tr->best_state and fills the latter with the
 * model's state. */
gcn_status gcn_trainer_best_init(gcn_ctx *ctx, gcn_trainer *tr);

/* Copies the model's state into tr->best_state (a new best epoch). */
gcn_status gcn_trainer_keep_best(gcn_ctx *ctx, gcn_trainer *tr);

/* The evaluation forward (no tape, evaluation mode): logits of every node
 * (of every graph, for a graph-level model), a new tensor. */
gcn_status gcn_trainer_eval_logits(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor **logits);

/* Accuracies of the current model on the training, validation and test
 * rows (0 for an empty split), in one wait for the device. */
gcn_status gcn_trainer_accuracies(gcn_ctx *ctx, gcn_trainer *tr, double acc[3]);

/* Graph-level training (trainer_graphs.c): uploads the collection's
 * features and labels, sizes the epoch's batch buffers and builds the
 * evaluation batch of ds's validation and test graphs (ds's split lists
 * hold graph ids); tr->model must exist. */
gcn_status gcn_graph_data_create(gcn_ctx *ctx, gcn_trainer *tr, const gcn_dataset *ds);
void gcn_graph_data_free(gcn_ctx *ctx, gcn_graph_data **g);

/* One epoch of batches, then the evaluation: acc the training batches'
 * accuracy (of their training-mode scores, as each batch was trained), the
 * validation and the test graphs'; *loss the mean training loss over the
 * training graphs.  One wait for the device, at the end. */
gcn_status gcn_graph_epoch(gcn_ctx *ctx, gcn_trainer *tr, double acc[3], float *loss);

/* The current model's validation and test accuracies (acc[0] is 0: the
 * training graphs are not evaluated outside an epoch). */
gcn_status gcn_graph_accuracies(gcn_ctx *ctx, gcn_trainer *tr, double acc[3]);

/* The current model's evaluation-mode scores of every graph of the
 * collection, in graph order: a new [n_graphs, n_classes] tensor. */
gcn_status gcn_graph_scores(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor **scores);

/* The current model's evaluation-mode scores of the evaluation batch (the
 * validation graphs, then the test graphs): a new [n_valid + n_test,
 * n_classes] tensor, or NULL when there are none. */
gcn_status gcn_graph_eval_scores(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor **scores);

/* One rank's trainer (trainer_rank.c).  gcn_rank_upload puts the rank's
 * rows of ds (features, labels, its split rows renumbered from 0) into
 * tr->dev and creates tr->rank;
 * gcn_rank_matrix makes a block of a matrix with its halo, its rows
 * travelling as bf16 when wire_bf16 (gcn_halo_set_wire). */
gcn_status gcn_rank_upload(gcn_ctx *ctx, gcn_trainer *tr, const gcn_dataset *ds,
                           const gcn_part_rows *rows);
gcn_status gcn_rank_matrix(gcn_ctx *ctx, const gcn_part_rows *rows, bool wire_bf16,
                           gcn_csr **out);

/* The rank's share of the training loss: the sum of its rows' losses over
 * every rank's training rows (0, still connected to logits, without any). */
gcn_status gcn_rank_loss(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor *logits, gcn_tensor **loss);

/* Sums the gradients over the ranks. */
gcn_status gcn_rank_reduce_grads(gcn_ctx *ctx, gcn_trainer *tr);
void gcn_rank_free(gcn_trainer_rank **rk);

/* A graph-level split's hash (CRC-32 of the collection's size and the
 * training, validation and test graph ids, in order; never 0). */
uint32_t gcn_trainer_split_hash(const gcn_dataset *ds);

/* Writes len bytes to a temporary file beside path (path.tmp.PID), fsyncs
 * it and renames it over path; a failure removes the temporary file. */
gcn_status gcn_write_file_atomic(gcn_ctx *ctx, const char *path, const void *buf, size_t len);

#endif
