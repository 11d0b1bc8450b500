/* The optimisers on the GPU: one multi-tensor launch per batch of up to
 * GCN_OPTIM_LAUNCH_TENSORS parameters (SGD with momentum, dampening,
 * Nesterov and weight decay; Adam/AdamW), and the one-thread-per-parameter
 * advance of the step state (contract in optim_impl.h). */
#include "../core/bf16.h"
#include "../core/cuda_impl.h"
#include "optim_impl.h"

/* The per-element arithmetic uses _rn intrinsics in optim_cpu.c's order, so
 * no multiply-add is fused, and the step-dependent scalars use double
 * intrinsics (IEEE, correctly rounded, as on the host), so both backends
 * produce the same bits. */

/* The most blocks one tensor gets in an update launch: 1024 blocks of
 * GCN_THREADS (256) threads fill an H100 (132 SMs x 2048 threads) twice
 * over; a larger tensor is covered by striding, so any size is supported
 * and a launch of GCN_OPTIM_LAUNCH_TENSORS tensors stays far below the grid
 * limit. */
#define OPTIM_TENSOR_BLOCKS 1024

/* The update kernels' arguments must fit the 4 KiB every CUDA device takes. */
static_assert(sizeof(gcn_optim_batch) + sizeof(gcn_optim_hparams) + sizeof(gcn_optim_step_state) <=
                  4096,
              "GCN_OPTIM_LAUNCH_TENSORS is too large for a kernel argument");

/* The tensor a block updates and the block's place among that tensor's
 * blocks.  Blocks first_block[k] .. first_block[k + 1] - 1 belong to tensor
 * k; a launch holds few tensors, so a scan finds it. */
typedef struct block_part {
    int k;
    unsigned blk, n_blocks;
} block_part;

__device__ static block_part block_tensor(const gcn_optim_batch &b)
{
    block_part r;
    r.k = 0;
    while (blockIdx.x >= b.first_block[r.k + 1])
        r.k++;
    r.blk = blockIdx.x - b.first_block[r.k];
    r.n_blocks = b.first_block[r.k + 1] - b.first_block[r.k];
    return r;
}

/* Work mapping (both update kernels): the blocks of tensor k stride over its
 * elements, one element per thread per pass; the tensor's first block also
 * marks its step slot pending for the advance. */
__global__ void sgd_kernel(gcn_optim_batch b, gcn_optim_hparams h, gcn_optim_step_state s)
{
    block_part r = block_tensor(b);
    int32_t slot = b.slot[r.k];
    bool first_step = s.count[slot] == 0;
    float lr = *s.lr;
    int64_t n = b.numel[r.k];
    float *param = b.param[r.k], *buf = b.state0[r.k];
    const float *grad = b.grad[r.k];
    for (int64_t i = (int64_t)r.blk * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)r.n_blocks * blockDim.x) {
        float p = param[i];
        float g = __fadd_rn(grad[i], __fmul_rn(h.weight_decay, p));
        if (h.momentum != 0.0f) {
            float bi = first_step ? g
                                  : __fadd_rn(__fmul_rn(h.momentum, buf[i]),
                                              __fmul_rn(h.one_minus_dampening, g));
            buf[i] = bi;
            g = h.nesterov ? __fadd_rn(g, __fmul_rn(h.momentum, bi)) : bi;
        }
        param[i] = __fsub_rn(p, __fmul_rn(lr, g));
        if (b.half[r.k])
            b.half[r.k][i] = gcn_bf16_from_float(param[i]);
    }
    if (r.blk == 0 && threadIdx.x == 0)
        s.pending[slot] = 1;
}

__global__ void adam_kernel(gcn_optim_batch b, gcn_optim_hparams h, gcn_optim_step_state s)
{
    block_part r = block_tensor(b);
    int32_t slot = b.slot[r.k];
    double p1 = __dmul_rn(s.pow1[slot], (double)h.beta1);
    double p2 = __dmul_rn(s.pow2[slot], (double)h.beta2);
    float lr = *s.lr, decay = __fsub_rn(1.0f, __fmul_rn(lr, h.weight_decay));
    float step_size = __double2float_rn(__ddiv_rn((double)lr, __dsub_rn(1.0, p1)));
    float bc2_sqrt = __double2float_rn(__dsqrt_rn(__dsub_rn(1.0, p2)));
    int64_t n = b.numel[r.k];
    float *param = b.param[r.k], *m = b.state0[r.k], *v = b.state1[r.k];
    const float *grad = b.grad[r.k];
    for (int64_t i = (int64_t)r.blk * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)r.n_blocks * blockDim.x) {
        float p = param[i], g = grad[i];
        if (h.decoupled)
            p = __fmul_rn(p, decay);
        else
            g = __fadd_rn(g, __fmul_rn(h.weight_decay, p));
        float mi = __fadd_rn(__fmul_rn(h.beta1, m[i]), __fmul_rn(h.one_minus_beta1, g));
        float vi = __fadd_rn(__fmul_rn(h.beta2, v[i]),
                             __fmul_rn(__fmul_rn(h.one_minus_beta2, g), g));
        m[i] = mi;
        v[i] = vi;
        float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2_sqrt), h.eps);
        param[i] = __fsub_rn(p, __fdiv_rn(__fmul_rn(step_size, mi), denom));
        if (b.half[r.k])
            b.half[r.k][i] = gcn_bf16_from_float(param[i]);
    }
    if (r.blk == 0 && threadIdx.x == 0)
        s.pending[slot] = 1;
}

/* One thread per parameter slot: advances the slots the updates marked.
 * Queued after every update launch of the step, so the updates all read
 * the state the previous step left, whichever launch holds a tensor, and
 * its arguments do not depend on which parameters had a grad. */
__global__ void step_advance_kernel(gcn_optim_step_state s, float beta1, float beta2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.n_params || !s.pending[i])
        return;
    s.pending[i] = 0;
    s.count[i] += 1;
    if (s.pow1) {
        s.pow1[i] = __dmul_rn(s.pow1[i], (double)beta1);
        s.pow2[i] = __dmul_rn(s.pow2[i], (double)beta2);
    }
}

/* Blocks for one tensor of n elements: at least one, so an empty tensor
 * still marks its slot (its step counts, as in PyTorch). */
static uint32_t tensor_blocks(int64_t n)
{
    int64_t blocks = (n + GCN_THREADS - 1) / GCN_THREADS;
    return (uint32_t)(blocks < 1 ? 1 : blocks < OPTIM_TENSOR_BLOCKS ? blocks : OPTIM_TENSOR_BLOCKS);
}

gcn_status gcn_optim_cuda_update(gcn_ctx *ctx, gcn_optim_kind kind, const gcn_optim_hparams *h,
                                 const gcn_optim_step_state *s, const gcn_optim_batch *b)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (b->n_tensors <= 0)
        return GCN_OK;
    gcn_optim_batch lb = *b;
    uint32_t blocks = 0;
    for (int k = 0; k < lb.n_tensors; k++) {
        lb.first_block[k] = blocks;
        blocks += tensor_blocks(lb.numel[k]);
    }
    lb.first_block[lb.n_tensors] = blocks;
    if (kind == GCN_OPTIM_SGD) {
        sgd_kernel<<<blocks, GCN_THREADS, 0, cs->stream>>>(lb, *h, *s);
        GCN_LAUNCHED("sgd_kernel");
    } else {
        adam_kernel<<<blocks, GCN_THREADS, 0, cs->stream>>>(lb, *h, *s);
        GCN_LAUNCHED("adam_kernel");
    }
    return GCN_OK;
}

gcn_status gcn_optim_cuda_advance(gcn_ctx *ctx, const gcn_optim_hparams *h,
                                  const gcn_optim_step_state *s)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (s->n_params <= 0)
        return GCN_OK;
    unsigned blocks = (unsigned)((s->n_params + GCN_THREADS - 1) / GCN_THREADS);
    step_advance_kernel<<<blocks, GCN_THREADS, 0, cs->stream>>>(*s, h->beta1, h->beta2);
    GCN_LAUNCHED("step_advance_kernel");
    return GCN_OK;
}
