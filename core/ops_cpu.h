/* CPU backend functions defined in ops_cpu_nn.c, ops_cpu_epilogue.c and gathered into the
 * gcn_backend_cpu table in ops_cpu.c.  Types and semantics: gcn_be_*_fn in internal.h. */
#ifndef GCN_OPS_CPU_H
#define GCN_OPS_CPU_H

#include "internal.h"

gcn_be_batchnorm_train_fn gcn_cpu_batchnorm_train;
gcn_be_batchnorm_eval_fn gcn_cpu_batchnorm_eval;
gcn_be_batchnorm_backward_fn gcn_cpu_batchnorm_backward;
gcn_be_batchnorm_eval_backward_fn gcn_cpu_batchnorm_eval_backward;
gcn_be_log_softmax_fn gcn_cpu_log_softmax;
gcn_be_log_softmax_backward_fn gcn_cpu_log_softmax_backward;
gcn_be_nll_fn gcn_cpu_nll;
gcn_be_nll_backward_fn gcn_cpu_nll_backward;
gcn_be_count_correct_fn gcn_cpu_count_correct;
gcn_be_cross_entropy_fn gcn_cpu_cross_entropy;
gcn_be_cross_entropy_backward_fn gcn_cpu_cross_entropy_backward;
gcn_be_epilogue_stats_fn gcn_cpu_epilogue_stats;
gcn_be_epilogue_forward_fn gcn_cpu_epilogue_forward;
gcn_be_epilogue_backward_fn gcn_cpu_epilogue_backward;

#endif
