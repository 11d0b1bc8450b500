/* The optimisers' CPU reference: PyTorch's SGD and Adam/AdamW updates over a
 * batch of parameters (and their bf16 copies), each large tensor split
 * across the context's threads (core/parallel.h), and the step-state
 * advance (contract in optim_impl.h).
 * optim_cuda.cu mirrors this arithmetic operation by operation. */
#include <math.h>

#include "../core/bf16.h"
#include "../core/parallel.h"
#include "optim_impl.h"

/* Work of one element's update, in units of a plain element-wise op. */
#define UPDATE_COST 4

/* torch.optim.SGD: g = grad + wd p; buf = g on the parameter's first update,
 * else momentum buf + (1 - dampening) g; step along g + momentum buf
 * (Nesterov) or buf. */
static void sgd_update(int nt, const gcn_optim_hparams *h, float lr, int64_t n, float *param,
                       const float *grad, float *buf, bool first_step, uint16_t *half)
{
    GCN_PAR_FOR(nt)
    for (int64_t i = 0; i < n; i++) {
        float g = grad[i] + h->weight_decay * param[i];
        if (h->momentum != 0.0f) {
            buf[i] = first_step ? g : h->momentum * buf[i] + h->one_minus_dampening * g;
            g = h->nesterov ? g + h->momentum * buf[i] : buf[i];
        }
        param[i] -= lr * g;
        if (half)
            half[i] = gcn_bf16_from_float(param[i]);
    }
}

/* torch.optim.Adam / AdamW (amsgrad off): L2 folds wd p into the gradient,
 * decoupled decay scales p by 1 - lr wd first; then
 * p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). */
static void adam_update(int nt, const gcn_optim_hparams *h, float lr, int64_t n, float *param,
                        const float *grad, float *m, float *v, double pow1, double pow2,
                        uint16_t *half)
{
    double p1 = pow1 * (double)h->beta1, p2 = pow2 * (double)h->beta2;
    float step_size = (float)((double)lr / (1.0 - p1)), bc2_sqrt = (float)sqrt(1.0 - p2);
    float decay = 1.0f - lr * h->weight_decay;
    GCN_PAR_FOR(nt)
    for (int64_t i = 0; i < n; i++) {
        float g = grad[i];
        if (h->decoupled)
            param[i] *= decay;
        else
            g += h->weight_decay * param[i];
        m[i] = h->beta1 * m[i] + h->one_minus_beta1 * g;
        v[i] = h->beta2 * v[i] + h->one_minus_beta2 * g * g;
        param[i] -= step_size * m[i] / (sqrtf(v[i]) / bc2_sqrt + h->eps);
        if (half)
            half[i] = gcn_bf16_from_float(param[i]);
    }
}

gcn_status gcn_optim_cpu_update(gcn_ctx *ctx, gcn_optim_kind kind, const gcn_optim_hparams *h,
                                const gcn_optim_step_state *s, const gcn_optim_batch *b)
{
    for (int k = 0; k < b->n_tensors; k++) {
        int32_t slot = b->slot[k];
        int nt = gcn_par_threads(ctx, b->numel[k] * UPDATE_COST);
        if (kind == GCN_OPTIM_SGD)
            sgd_update(nt, h, *s->lr, b->numel[k], b->param[k], b->grad[k], b->state0[k],
                       s->count[slot] == 0, b->half[k]);
        else
            adam_update(nt, h, *s->lr, b->numel[k], b->param[k], b->grad[k], b->state0[k],
                        b->state1[k], s->pow1[slot], s->pow2[slot], b->half[k]);
        s->pending[slot] = 1;
    }
    return GCN_OK;
}

gcn_status gcn_optim_cpu_advance(gcn_ctx *ctx, const gcn_optim_hparams *h,
                                 const gcn_optim_step_state *s)
{
    (void)ctx;
    for (int i = 0; i < s->n_params; i++) {
        if (!s->pending[i])
            continue;
        s->pending[i] = 0;
        s->count[i]++;
        if (s->pow1) {
            s->pow1[i] *= (double)h->beta1;
            s->pow2[i] *= (double)h->beta2;
        }
    }
    return GCN_OK;
}
