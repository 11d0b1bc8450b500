/* gcn: graph convolutional network training in C and CUDA.
 * The one public header: include it and link with -lgcn (pkg-config gcn).
 *
 * The rules every module follows:
 *  - Fallible functions return a gcn_status; gcn_last_error(ctx) says why.
 *    The library never prints (logs go to gcn_ctx_opts.log_fn) or exits.
 *  - Only functions declared GCN_API are exported.  Handles (gcn_ctx,
 *    gcn_tensor, gcn_index, gcn_csr, gcn_optim, gcn_model, gcn_trainer) are
 *    opaque: use their accessors.
 *  - A function that creates an object gives the caller one reference;
 *    gcn_*_free(&p) releases it, accepts NULL and sets p to NULL.  Free
 *    everything made on a context before the context.  Accessors return
 *    borrowed pointers, valid while their owner lives.
 *  - Structs the caller fills (options, gcn_spmm_impl, gcn_custom_op) start
 *    with `size_t size`: take them from their *_default_opts function or
 *    set size = sizeof the struct, so later versions can add fields.
 *    Descriptions handed to the library are copied; their callbacks and
 *    user pointers are borrowed (a registered kernel's for the context's
 *    life, a custom op's until the tape that records it is released).
 *  - On a CUDA context all work is queued, in order, on gcn_ctx_stream(ctx);
 *    tensor data pointers are device pointers.
 * examples/ shows a training loop of one's own and a registered kernel. */
#ifndef GCN_H
#define GCN_H

#define GCN_VERSION_MAJOR 0
#define GCN_VERSION_MINOR 1
#define GCN_VERSION_PATCH 0
#define GCN_VERSION_STRING "0.1.0"

#include "core/status.h"
#include "core/ctx.h"
#include "core/tensor.h"
#include "core/csr.h"
#include "core/rng.h"
#include "core/ops.h"
#include "core/autograd.h"
#include "core/comm.h"
#include "core/ranks.h"
#include "core/job.h"
#include "kernels/spmm/spmm.h"
#include "kernels/adaptgear/adaptgear.h"
#include "optim/optim.h"
#include "layers/layers.h"
#include "models/config.h"
#include "models/model.h"
#include "models/trainer.h"
#include "models/setup.h"
#include "models/order_trial.h"
#include "datasets/graph.h"
#include "datasets/reorder.h"
#include "datasets/partition.h"
#include "datasets/dataset.h"
#include "datasets/export.h"
#include "datasets/fetch.h"

#endif
