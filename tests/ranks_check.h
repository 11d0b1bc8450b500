/* Checks of training over several ranks against one context, on either
 * device: test_ranks.c runs them on the CPU, test_gpu_ranks.c on a GPU. */
#ifndef GCN_TESTS_RANKS_CHECK_H
#define GCN_TESTS_RANKS_CHECK_H

#include <stdbool.h>

#include "gcn.h"

/* The products of a partitioned matrix, each rank multiplying its block
 * with its halo: forward rows and the gradient of x equal the whole
 * matrix's on one context (an R-MAT graph, directed, so A^T differs from
 * A), for gcn_spmm or (self_term) gcn_spmm_self. */
void ranks_check_spmm(gcn_device device, int n_ranks, int feat, bool self_term);

/* The same with every rank's block from gcn_csr_create_block, its
 * exchanges in `chunks` chunks. */
void ranks_check_spmm_chunked(gcn_device device, int n_ranks, int feat, bool self_term,
                              int chunks);

/* Batch norm, ReLU and dropout in one epilogue on each rank's rows equal
 * the epilogue on all rows on one context: output, the input's gradient,
 * and gamma, beta and bias gradients summed over the ranks. */
void ranks_check_epilogue(gcn_device device, int n_ranks);

/* A model configuration (JSON) trained for `epochs` on a generated SBM
 * dataset: reordered by parts:n_ranks on n_ranks ranks joined by `kind`
 * (NCCL: skips the test when NCCL cannot be loaded), and in its original
 * order on one context, the loss of every epoch agrees within rel_tol and
 * the accuracies within 0.1. */
void ranks_check_training(gcn_device device, gcn_comm_kind kind, const char *json, int n_ranks,
                          int epochs, double rel_tol);

/* The same on an SBM of the given homophily (0.8 above; 0: random edges
 * between classes, which METIS cannot keep together, so the halos outgrow
 * the blocks and the exchanges run in chunks). */
void ranks_check_training_on(gcn_device device, gcn_comm_kind kind, const char *json,
                             int n_ranks, int epochs, double rel_tol, double homophily);

/* Precision bf16 on 2 ranks of the local transport against one bf16
 * context: GCN over 20 epochs, and GIN over 10 with exchanges in chunks,
 * halo rows and their gradients on the bf16 wire.  Each rank rounds what
 * it sends and sums its rows in another order, so a stored value may
 * differ by a bf16 step (2^-8) from one context's; the loss is allowed 1 %
 * (measured on the CPU: 0.13 %; fp32 runs agree to 1e-5). */
void ranks_check_bf16(gcn_device device);

#endif
