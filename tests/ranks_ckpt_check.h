/* Checks of checkpoints and predictions over ranks against one context,
 * on either device: test_ranks_checkpoint.c runs them on the CPU,
 * test_gpu_ranks_checkpoint.c on a GPU.  A ranked run uses `kind`'s
 * communicator (NCCL: skips the test when NCCL cannot be loaded); a count
 * of 1 is one context on the dataset in its original order. */
#ifndef GCN_TESTS_RANKS_CKPT_CHECK_H
#define GCN_TESTS_RANKS_CKPT_CHECK_H

#include "gcn.h"

/* A model with batch norm and dropout trained 8 epochs straight on
 * `straight` ranks; then 4 epochs on `from` ranks, saved, resumed on `to`
 * ranks and trained to 8: every loss after the resume is the straight
 * run's within rel_tol. */
void ranks_ckpt_round_trip(gcn_device device, gcn_comm_kind kind, int straight, int from,
                           int to, double rel_tol);

/* The file n ranks write after an epoch has one context's size and the
 * same magic, version, architecture hash and epoch. */
void ranks_ckpt_same_file(gcn_device device, gcn_comm_kind kind, int n);

/* A file rank 0 cannot open stops every rank, with rank 0's message. */
void ranks_ckpt_bad_file(gcn_device device, gcn_comm_kind kind, int n);

/* Predictions of n_ranks ranks against one context's after 6 epochs of a
 * model without batch norm, node by node in the original order:
 * probabilities within tol, the same class unless the two largest
 * probabilities are within tol. */
void ranks_ckpt_predictions(gcn_device device, gcn_comm_kind kind, int n_ranks, float tol);

#endif
