/* CPU backend functions defined in ops_cpu_nn.c, ops_cpu_epilogue.c and gathered into the
 * gcn_backend_cpu table in ops_cpu.c.  Semantics: see gcn_backend. */
#ifndef GCN_OPS_CPU_H
#define GCN_OPS_CPU_H

#include "internal.h"

gcn_status gcn_cpu_batchnorm_train(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                   const float *gamma, const float *beta, float *y,
                                   float *save_mean, float *save_invstd, float *running_mean,
                                   float *running_var, float momentum, float eps);
gcn_status gcn_cpu_batchnorm_eval(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                  const float *gamma, const float *beta, const float *mean,
                                  const float *var, float eps, float *y);
gcn_status gcn_cpu_batchnorm_backward(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                      const float *gamma, const float *save_mean,
                                      const float *save_invstd, const float *dy, float *dx,
                                      float *dgamma, float *dbeta, bool acc_x, bool acc_gamma,
                                      bool acc_beta);
gcn_status gcn_cpu_batchnorm_eval_backward(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                           const float *x, const float *gamma, const float *mean,
                                           const float *var, float eps, const float *dy,
                                           float *dx, float *dgamma, float *dbeta, bool acc_x,
                                           bool acc_gamma, bool acc_beta);
gcn_status gcn_cpu_log_softmax(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x, float *y);
gcn_status gcn_cpu_log_softmax_backward(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *y,
                                        const float *dy, float *dx, bool acc);
gcn_status gcn_cpu_nll(gcn_ctx *ctx, int64_t cols, const float *logp, const int32_t *labels,
                       const int32_t *rows, int64_t n_rows, float *out);
gcn_status gcn_cpu_nll_backward(gcn_ctx *ctx, int64_t n, int64_t cols, const int32_t *labels,
                                const int32_t *rows, int64_t n_rows, const float *dy,
                                float *dlogp, bool acc);
gcn_status gcn_cpu_count_correct(gcn_ctx *ctx, int64_t cols, const float *scores,
                                 const int32_t *labels, const int32_t *rows, int64_t n_rows,
                                 double *count);
gcn_status gcn_cpu_cross_entropy(gcn_ctx *ctx, int64_t cols, const float *x, const int32_t *labels,
                                 const int32_t *rows, int64_t n_rows, float *lse, float *out);
gcn_status gcn_cpu_cross_entropy_backward(gcn_ctx *ctx, int64_t n, int64_t cols, const float *x,
                                          const int32_t *labels, const int32_t *rows,
                                          int64_t n_rows, const float *lse, const float *dy,
                                          float *dx, bool acc);
gcn_status gcn_cpu_epilogue_stats(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                  const float *bias, bool training, float momentum, float eps,
                                  float *running_mean, float *running_var, float *mean,
                                  float *invstd);
gcn_status gcn_cpu_epilogue_forward(gcn_ctx *ctx, const gcn_epilogue_args *a, float *out);
gcn_status gcn_cpu_epilogue_backward(gcn_ctx *ctx, const gcn_epilogue_args *a, const float *dout,
                                     const gcn_epilogue_grads *g);

#endif
