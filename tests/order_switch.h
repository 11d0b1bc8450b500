/* The node-order switch checked on a context of either device
 * (test_train_order.c, test_gpu_train_order.c): a run that moves to a METIS
 * order and back trains the losses and accuracies of a run that never
 * moved, up to float rounding. */
#ifndef GCN_TEST_ORDER_SWITCH_H
#define GCN_TEST_ORDER_SWITCH_H

#include "gcn.h"

/* Trains `epochs` epochs twice on an SBM dataset, once on the order as
 * loaded throughout and once switching to its METIS order after epoch
 * switch_at and back after back_at (0: never back); ctx_of makes each
 * run's context from the seed.  The test fails when a loss differs by more
 * than tol relative or an accuracy by more than one node. */
void order_switch_check(gcn_ctx *(*ctx_of)(uint64_t seed), int epochs, int switch_at,
                        int back_at, double tol);

#endif
