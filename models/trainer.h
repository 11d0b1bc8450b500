/* Training: a model, its optimisers and a dataset on the context's device;
 * one call trains one epoch and evaluates it.  Node classification is
 * full-batch; a graph-level model (a readout in its configuration) trains
 * on batches of graphs of a collection, whose split lists (graph ids, e.g.
 * from gcn_graph_fold_split) say which graphs train, validate and test.
 * Checkpoints save and restore everything a resumed run needs. */
#ifndef GCN_TRAINER_H
#define GCN_TRAINER_H

#include "../datasets/dataset.h"
#include "../core/ranks.h"
#include "../datasets/partition.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gcn_epoch_stats {
    int epoch;                       /* 1-based */
    float loss;                      /* training loss (train mode, before the update) */
    double train_acc, valid_acc, test_acc; /* eval mode, after the update */
    double train_ms, eval_ms;        /* the training step's device time (gcn_ctx_stamp
                                      * around it), then the rest of the epoch's wall
                                      * time, to its one wait for the device */
    bool graph;                      /* the epoch ran as a replayed CUDA graph */
} gcn_epoch_stats;

typedef struct gcn_train_best {
    int epoch;                       /* 0 before the first epoch */
    double train_acc, valid_acc, test_acc;
} gcn_train_best;

typedef struct gcn_trainer gcn_trainer;

/* Uploads the dataset's features, labels and split, builds the adjacency
 * matrices the model needs, the model (from the context's GCN_RNG_INIT
 * stream) and one optimiser per weight-decay group.  The dataset must have
 * features, labels and a non-empty training list.  On a reordered dataset
 * the context's node ids (gcn_ctx_set_node_ids) become the original ids,
 * so dropout draws the masks of the original order and the model is the
 * one the dataset trains unreordered, up to float rounding.  Caller
 * frees. */
GCN_API gcn_status gcn_trainer_create(gcn_ctx *ctx, gcn_trainer **out,
                                      const gcn_model_config *cfg, const gcn_dataset *ds);

/* The trainer of one rank of several (a context in a communicator,
 * comm.h), for a node-level model: ds is the whole dataset with its nodes
 * numbered by a PARTS reordering (gcn_dataset_reorder with "parts:N",
 * N the ranks), gcn_rows and raw_rows the rank's blocks
 * (gcn_partition_rows) of the dataset's GCN-normalised and plain
 * adjacency (gcn_dataset_adjacency_graph), either NULL when the model does
 * not multiply it.  The trainer holds the rank's rows of the features,
 * labels and split and the blocks with their halos (gcn_csr_set_halo); its
 * loss is the rank's share of the mean over every rank's training rows,
 * gradients are summed over the ranks before each optimiser step, batch
 * norm takes its statistics over every rank's rows, dropout draws each
 * node's mask by its original id (gcn_ctx_set_node_ids), and the
 * accuracies and loss of gcn_trainer_epoch are those of all rows.  Every
 * rank creates its trainer with the same configuration and the same seed
 * and then calls the same functions in the same order, each on its own
 * thread: the ranks then train the model one context trains on the
 * dataset, in any order, up to float rounding.  Epochs are not captured
 * as CUDA graphs. */
GCN_API gcn_status gcn_trainer_create_rank(gcn_ctx *ctx, gcn_trainer **out,
                                           const gcn_model_config *cfg, const gcn_dataset *ds,
                                           const gcn_part_rows *gcn_rows,
                                           const gcn_part_rows *raw_rows);

/* Every rank's trainer of the group g (gcn_trainer_create_rank on each
 * rank's thread): ds reordered by parts:N for the group's N ranks; the
 * whole matrices are built once on the host and each rank cuts its block.
 * trainers[N] receives them; the caller frees each. */
GCN_API gcn_status gcn_trainer_create_ranks(gcn_ctx *ctx, gcn_ranks *g,
                                            const gcn_model_config *cfg, const gcn_dataset *ds,
                                            gcn_trainer **trainers);

/* One epoch on every rank at once (gcn_trainer_epoch on each rank's
 * thread): *stats is of all rows, as every rank has it, with the slowest
 * rank's train_ms and eval_ms. */
GCN_API gcn_status gcn_trainer_epoch_ranks(gcn_ctx *ctx, gcn_ranks *g, gcn_trainer **trainers,
                                           gcn_epoch_stats *stats);

/* One optimisation step on the training rows, then accuracies of every
 * split in evaluation mode.  A non-finite loss stops with GCN_ERR_NUMERIC
 * naming the epoch.
 *
 * On a CUDA context with cfg->cuda_graph, once every SpMM call site has
 * stayed locked for a whole epoch, the next epoch is captured as a CUDA
 * graph and every later one replays it: the same kernels with the same
 * arguments, reading what changes from step to step (the dropout offset,
 * the optimisers' step counts) from device memory, so a replayed epoch
 * computes exactly what the epoch would have computed launch by launch.
 * Epochs run launch by launch while the context is profiling.  When the
 * capture fails the trainer logs why, runs that epoch launch by launch and
 * never captures again. */
GCN_API gcn_status gcn_trainer_epoch(gcn_ctx *ctx, gcn_trainer *tr, gcn_epoch_stats *stats);

/* The epoch with the best validation accuracy so far (the first of ties),
 * or, when the split has no validation rows (the GIN paper's protocol),
 * the latest epoch.  The trainer keeps that epoch's model (parameters and batch-norm
 * statistics, on the host) for gcn_trainer_evaluate and
 * gcn_trainer_predict; before the first epoch that is the initial model. */
GCN_API void gcn_trainer_best(const gcn_trainer *tr, gcn_train_best *best);

/* Accuracies of the best-validation model on the training, validation and
 * test rows (0 for an empty split), in evaluation mode, without training:
 * out->epoch is the epoch it is from.  After gcn_trainer_load this
 * evaluates the checkpoint's best-validation model.  The model being
 * trained is left as it was. */
GCN_API gcn_status gcn_trainer_evaluate(gcn_ctx *ctx, gcn_trainer *tr, gcn_train_best *out);

/* The best-validation model's predictions for every node of the dataset
 * the trainer was created from, in the dataset's original node order (a
 * reordering undone): classes[n_nodes] the predicted class (the first
 * largest score) and probs[n_nodes * n_classes] (row-major) the softmax of
 * the evaluation-mode logits.  For a graph-level model, the same for every
 * graph of the collection: classes[n_graphs], probs[n_graphs *
 * n_graph_classes].  Host arrays the caller owns; either may be NULL.  The
 * model being trained is left as it was.  On one rank of several (a
 * collective, like gcn_trainer_evaluate: every rank calls it), each rank's
 * rows go to rank 0 through the communicator, and rank 0's arrays receive
 * every node's predictions, in the original order, as one context would
 * give them; the other ranks' arrays are left alone. */
GCN_API gcn_status gcn_trainer_predict(gcn_ctx *ctx, gcn_trainer *tr, int32_t *classes,
                                       float *probs);

/* The current model's predictions (not the best-validation one's) of a
 * graph-level trainer's held-out graphs: the validation graphs of the split
 * it was created with, then its test graphs, in the lists' order:
 * classes[n_valid + n_test] and probs[(n_valid + n_test) * n_graph_classes]
 * as gcn_trainer_predict gives them, from one more evaluation-mode forward
 * of the batch whose scores an epoch's accuracies count.  For predictions
 * at an epoch chosen after training (the GIN protocol's epoch of the best
 * mean test-fold accuracy).  GCN_ERR_INVALID_ARG for a node-level trainer;
 * nothing is written when there are no held-out graphs. */
GCN_API gcn_status gcn_trainer_predict_held_out(gcn_ctx *ctx, gcn_trainer *tr,
                                                int32_t *classes, float *probs);

/* Writes predictions to path: a NumPy .npy file when path ends in ".npy"
 * (a structured array of n_nodes records, field "class" an int32 and
 * field "prob" n_classes float32s), else CSV (a header
 * "node,class,p0,p1,...", then one line per node, probabilities printed so
 * that they read back as the same floats).  Written to a temporary file
 * beside path, fsynced and renamed into place: a failure leaves no file. */
GCN_API gcn_status gcn_predictions_write(gcn_ctx *ctx, const char *path, int64_t n_nodes,
                                         int64_t n_classes, const int32_t *classes,
                                         const float *probs);

/* The same for some graphs of a collection, keyed by graph id (the graph's
 * 0-based index in the collection; for tu:NAME, its line in
 * NAME_graph_labels.txt): one row per listed graph, ids[n] in the order
 * given, classes[n] and probs[n * n_classes] their rows in that order.
 * CSV with the header "graph,class,p0,p1,..."; .npy records with an int32
 * field "graph" before "class" and "prob".  Written as
 * gcn_predictions_write writes. */
GCN_API gcn_status gcn_graph_predictions_write(gcn_ctx *ctx, const char *path, int64_t n,
                                               const int32_t *ids, int64_t n_classes,
                                               const int32_t *classes, const float *probs);
/* Node order.  gcn_trainer_stage_order uploads another numbering of the
 * trainer's dataset (ds: the dataset renumbered, as gcn_reorder_job_take
 * gives it, or as loaded) and builds its matrices beside those in use;
 * gcn_trainer_switch_order then swaps the two between epochs, so later
 * epochs train on the staged numbering (the selector profiles the new
 * matrices' call sites; a captured CUDA graph is captured anew).  The
 * model, the optimiser state, the best-so-far and the random streams stay
 * as they are, and dropout draws each node's mask by its original id, so
 * the run follows the trajectory it would have followed without the
 * switch, up to float rounding.  A switch swaps again (back) while the
 * other numbering stays staged; gcn_trainer_drop_order frees it.  Only a
 * node-level trainer on one context changes order. */
GCN_API gcn_status gcn_trainer_stage_order(gcn_ctx *ctx, gcn_trainer *tr, const gcn_dataset *ds);
GCN_API gcn_status gcn_trainer_switch_order(gcn_ctx *ctx, gcn_trainer *tr);
GCN_API void gcn_trainer_drop_order(gcn_trainer *tr);

/* Whether the numbering in use is a reordering of the dataset as loaded. */
GCN_API bool gcn_trainer_reordered(const gcn_trainer *tr);

GCN_API int gcn_trainer_epochs_done(const gcn_trainer *tr);
GCN_API const gcn_model *gcn_trainer_model(const gcn_trainer *tr);

/* Whether every SpMM call site of the trainer's matrices has locked its
 * kernel (the selector's profiling is over); a site called once, which never
 * profiles, counts as locked. */
GCN_API bool gcn_trainer_spmm_locked(const gcn_trainer *tr);

/* Device memory the trainer holds from its creation on, in bytes: data,
 * params and optimizer are the growth of the context's in_use over each
 * part of gcn_trainer_create; grads is what a training step leaves held. */
typedef struct gcn_train_memory {
    size_t data;      /* features, labels, split lists, adjacency matrices (and
                       * the transpose of one that is not symmetric) */
    size_t params;    /* the model: parameters and batch-norm running statistics */
    size_t optimizer; /* optimiser state: SGD's momentum, Adam's m and v, step counts */
    size_t grads;     /* one gradient per trainable parameter, held from a step's
                       * backward to the next step's zero_grad */
} gcn_train_memory;

GCN_API void gcn_trainer_memory(const gcn_trainer *tr, gcn_train_memory *mem);

/* The adjacency matrix of that kind on the device, or NULL when no layer
 * multiplies it (for the selector's report and choices files). */
GCN_API const gcn_csr *gcn_trainer_adjacency(const gcn_trainer *tr, gcn_adjacency kind);

/* Checkpoints: parameters, batch-norm statistics, optimiser state, epoch,
 * best-so-far and its model, random-stream offsets and the model's
 * configuration hash, with a CRC-32; a graph-level trainer's also hold a
 * hash of its split (the training, validation and test graph ids, so a
 * fold of a cross-validation).  Written to a temporary file beside path
 * (path.tmp.PID), fsynced and renamed into place, so path always holds a
 * whole checkpoint.  A run resumed from one continues exactly as the run
 * that saved it would have.  Loading refuses a file for another
 * architecture, for another split of the graphs, or a damaged one.
 *
 * A checkpoint holds no per-node tensor: on one rank of several every rank
 * holds the whole of it (the same parameters, optimiser state, batch-norm
 * statistics, random-stream offsets and best-validation model), so it is
 * the file one context writes, and it resumes on any number of ranks or on
 * one context.  On a rank, gcn_trainer_save writes on rank 0 and returns
 * at once on the others; gcn_trainer_load is a collective: rank 0 reads and
 * checks the file and sends it to the other ranks through the
 * communicator, so only rank 0 needs to see the path.  A failure of rank
 * 0's (a missing or damaged file, another model's) returns on rank 0 before
 * anything is sent; as after any failed step, its caller stops the
 * communicator (gcn_comm_abort; gcn_ranks_run does), and the other ranks
 * return GCN_ERR_STATE, "rank 0 stopped: " and its message. */
GCN_API gcn_status gcn_trainer_save(gcn_ctx *ctx, const gcn_trainer *tr, const char *path);
GCN_API gcn_status gcn_trainer_load(gcn_ctx *ctx, gcn_trainer *tr, const char *path);

GCN_API void gcn_trainer_free(gcn_trainer **tr);

#ifdef __cplusplus
}
#endif
#endif
