/* gcn: graph convolutional network training in C and CUDA.
 * The one public header: include it and link with -lgcn (pkg-config gcn). */
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
#include "kernels/spmm.h"
#include "kernels/adaptgear.h"
#include "optim/optim.h"
#include "layers/layers.h"
#include "models/config.h"
#include "models/model.h"
#include "models/trainer.h"
#include "models/setup.h"
#include "datasets/graph.h"
#include "datasets/reorder.h"
#include "datasets/dataset.h"
#include "datasets/export.h"

#endif
