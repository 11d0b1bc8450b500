/* Fused optimiser updates on the GPU: one kernel launch per parameter for
 * SGD (momentum, dampening, Nesterov, weight decay) and Adam/AdamW. */
#include <math.h>

#include "cuda_impl.h"

/* Scalars that depend only on the step are computed on the host exactly as
 * core/ops_cpu_nn.c computes them, and the per-element arithmetic uses _rn
 * intrinsics in the CPU's order, so both backends produce the same bits. */

/* One thread per element i (grid-stride). */
__global__ void sgd_kernel(int64_t n, float *param, const float *grad, float *buf, float lr,
                           float momentum, float one_minus_dampening, float weight_decay,
                           bool nesterov, bool first_step)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float p = param[i];
        float g = __fadd_rn(grad[i], __fmul_rn(weight_decay, p));
        if (momentum != 0.0f) {
            float b = first_step ? g
                                 : __fadd_rn(__fmul_rn(momentum, buf[i]),
                                             __fmul_rn(one_minus_dampening, g));
            buf[i] = b;
            g = nesterov ? __fadd_rn(g, __fmul_rn(momentum, b)) : b;
        }
        param[i] = __fsub_rn(p, __fmul_rn(lr, g));
    }
}

gcn_status gcn_cuda_sgd_step(gcn_ctx *ctx, int64_t n, float *param, const float *grad,
                             float *buf, float lr, float momentum, float dampening,
                             float weight_decay, bool nesterov, bool first_step)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    sgd_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        n, param, grad, buf, lr, momentum, 1.0f - dampening, weight_decay, nesterov, first_step);
    GCN_LAUNCHED("sgd_kernel");
    return GCN_OK;
}

/* Adam's per-step constants, computed on the host. */
typedef struct adam_consts {
    float beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay;
    float decay;     /* 1 - lr wd (decoupled) */
    float step_size; /* lr / (1 - beta1^t) */
    float bc2_sqrt;  /* sqrt(1 - beta2^t) */
    bool decoupled;
} adam_consts;

/* One thread per element i (grid-stride). */
__global__ void adam_kernel(int64_t n, float *param, const float *grad, float *m, float *v,
                            adam_consts k)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float p = param[i], g = grad[i];
        if (k.decoupled)
            p = __fmul_rn(p, k.decay);
        else
            g = __fadd_rn(g, __fmul_rn(k.weight_decay, p));
        float mi = __fadd_rn(__fmul_rn(k.beta1, m[i]), __fmul_rn(k.one_minus_beta1, g));
        float vi = __fadd_rn(__fmul_rn(k.beta2, v[i]),
                             __fmul_rn(__fmul_rn(k.one_minus_beta2, g), g));
        m[i] = mi;
        v[i] = vi;
        float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), k.bc2_sqrt), k.eps);
        param[i] = __fsub_rn(p, __fdiv_rn(__fmul_rn(k.step_size, mi), denom));
    }
}

gcn_status gcn_cuda_adam_step(gcn_ctx *ctx, int64_t n, float *param, const float *grad, float *m,
                              float *v, float lr, float beta1, float beta2, float eps,
                              float weight_decay, bool decoupled, int64_t step)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    double bc1 = 1.0 - pow(beta1, (double)step), bc2 = 1.0 - pow(beta2, (double)step);
    adam_consts k;
    k.beta1 = beta1;
    k.beta2 = beta2;
    k.one_minus_beta1 = 1.0f - beta1;
    k.one_minus_beta2 = 1.0f - beta2;
    k.eps = eps;
    k.weight_decay = weight_decay;
    k.decay = 1.0f - lr * weight_decay;
    k.step_size = (float)(lr / bc1);
    k.bc2_sqrt = (float)sqrt(bc2);
    k.decoupled = decoupled;
    adam_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, param, grad, m, v,
                                                                             k);
    GCN_LAUNCHED("adam_kernel");
    return GCN_OK;
}
