#!/usr/bin/env python3
"""Trains the model of a gcn configuration with PyTorch Geometric on the data
`gcntrain --export-data DIR` wrote, so both frameworks see identical inputs.

    gcntrain models/gcn.json --dataset ogbn-arxiv --features random:128 --export-data /tmp/arxiv
    python3 tools/compare/pyg_train.py models/gcn.json /tmp/arxiv --runs 1
    python3 tools/compare/pyg_train.py models/gcn.json /tmp/arxiv --bench --epochs 200 \
        --adjacency edge_index --precision tf32

The model mirrors gcn's (models/model.c): each block is dropout on its input
-> layer -> batch norm -> activation; GCNConv normalises D^-1/2 (A+I) D^-1/2
(self-loops added, as gcn's GCN adjacency); GINConv sums the neighbours of the
exported graph, which has no self-loops (gcn's raw adjacency); Linear weights
are Glorot-uniform and biases zero, as gcn initialises them.  Training is
full-batch with the configuration's optimiser, parameter groups per block for
per-layer weight decay, and the test accuracy at the first epoch with the best
validation accuracy.  An epoch's time is the training step plus the
evaluation of all splits, each between two CUDA synchronisations, as gcntrain
times them.  Prints one line per run and then one JSON object: test accuracy
mean and std, the best epochs, median epoch time and
torch.cuda.max_memory_allocated() (the data included, as gcntrain's peak
includes it: the peak is never reset).

--adjacency sparse (the default) hands the layers the graph as PyG's fast
path takes it, a torch.sparse_csr_tensor adjacency built once per process:
GCNConv (cached=True) normalises it once and then multiplies by the cached
sparse matrix, GINConv sums through the sparse product.  --adjacency
edge_index hands them the edge list instead (gather, then scatter-add).  Both
compute the same y = A x as gcn, up to float rounding.  --precision fp32|tf32
overrides the configuration's "precision" for matmuls and cuDNN;
--precision bf16 runs the forward passes under
torch.autocast(dtype=torch.bfloat16) (PyTorch's 16-bit training: parameters,
optimiser and loss in fp32, autocast's op list in bf16).  Where an op refuses
bf16 (torch.sparse.mm on the sparse CSR path: cuSPARSE rejects a bf16 dense
operand with an fp32 sparse one), the run stops with that error.

--bench makes one run as `gcnbench train` does, --warmup W epochs (default 5)
and then --epochs N timed ones, and prints, instead of the lines above, one
JSON line in its schema: medians over the timed epochs of the training step,
the evaluation and their sum (and the sum's minimum), peak memory over the
run, steady memory (torch.cuda.memory_allocated() at the end of the last
epoch) and its breakdown (bench_record says how).  --dataset-name names the
dataset in it (default: the data folder's name).

--resume CKPT starts the first run from a checkpoint `gcntrain --save` wrote
(parameters, batch-norm statistics and Adam state, in gcn's order:
models/checkpoint.c), so both frameworks continue from one state;
--trace prints every epoch's loss and accuracies
(tools/compare/trajectory_arxiv.sh compares them with gcntrain's).
"""
import argparse
import gc
import json
import os
import statistics
import struct
import sys
import time
import warnings
import zlib
from collections import namedtuple

import numpy as np
import torch
import torch.nn.functional as F
import torch_geometric
from torch import nn
from torch_geometric.nn import GCNConv, GINConv
from torch_geometric.utils import to_torch_csr_tensor

# PyTorch's notes on every sparse CSR tensor built (beta state, invariants
# unchecked) say nothing about this script's runs.
warnings.filterwarnings("ignore", message="Sparse (CSR tensor support is in beta|invariant checks)")


def glorot_linear(fin, fout, bias=True):
    """nn.Linear initialised as gcn's Linear: Glorot-uniform weight, zero bias."""
    lin = nn.Linear(fin, fout, bias=bias)
    nn.init.xavier_uniform_(lin.weight)
    if bias:
        nn.init.zeros_(lin.bias)
    return lin


class Block(nn.Module):
    """dropout(input) -> layer -> batch norm -> activation, as gcn's blocks."""

    def __init__(self, spec, fin, fout):
        super().__init__()
        self.kind = spec["type"]
        bias = spec.get("bias", True)
        if self.kind == "gcn":
            self.layer = GCNConv(fin, fout, cached=True, bias=bias)
        elif self.kind == "gin":
            hidden = spec.get("hidden", fout)
            mlp = nn.Sequential(glorot_linear(fin, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                glorot_linear(hidden, fout))
            self.layer = GINConv(mlp, eps=spec.get("eps", 0.0),
                                 train_eps=spec.get("train_eps", False))
        else:
            self.layer = glorot_linear(fin, fout, bias=bias)
        self.norm = nn.BatchNorm1d(fout) if spec.get("norm", "none") == "batch" else None
        self.act = spec.get("activation", "none")
        self.dropout = spec.get("dropout", 0.0)
        self.weight_decay = spec.get("weight_decay")

    def forward(self, x, adj):
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.layer(x) if self.kind == "linear" else self.layer(x, adj)
        if self.norm is not None:
            x = self.norm(x)
        if self.act == "relu":
            x = F.relu(x)
        elif self.act == "elu":
            x = F.elu(x)
        return x


class Model(nn.Module):
    def __init__(self, cfg, fin, classes):
        super().__init__()
        blocks, width = [], fin
        for spec in cfg["layers"]:
            out = classes if spec["out"] == "classes" else spec["out"]
            blocks.append(Block(spec, width, out))
            width = out
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x, adj):
        for b in self.blocks:
            x = b(x, adj)
        return x


def optimiser(cfg, model):
    """The configuration's optimiser with gcn's defaults (models/README.md)."""
    o = cfg.get("optimizer", {"type": "adam", "lr": 0.01})
    kind, wd = o["type"], o.get("weight_decay", 0.01 if o["type"] == "adamw" else 0.0)
    groups = [{"params": b.parameters(),
               "weight_decay": wd if b.weight_decay is None else b.weight_decay}
              for b in model.blocks]
    lr = o.get("lr", 0.01 if kind == "sgd" else 0.001)
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=o.get("momentum", 0.0),
                               dampening=o.get("dampening", 0.0),
                               nesterov=o.get("nesterov", False))
    betas = (o.get("beta1", 0.9), o.get("beta2", 0.999))
    cls = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
    return cls(groups, lr=lr, betas=betas, eps=o.get("eps", 1e-8))


# The exported data on the device: x [n_nodes, f_in], adj (the graph as the
# layers take it: a sparse CSR adjacency or an edge_index [2, nnz]), y
# [n_nodes], split (train, valid, test node ids); nnz counts the exported
# entries, loops those among them on the diagonal.
Data = namedtuple("Data", "x adj y split n_nodes nnz loops")


def load(folder, device, adjacency):
    """The exported arrays on the device, prepared on the host so that no
    temporary of the preparation counts in the GPU's peak.

    gcn computes y_i = sum_j A_ij x_j over its stored entries (row i, column
    j), which edge_index.npy lists as edge_index[0] = i, edge_index[1] = j.
    sparse: PyG's adj_t convention is that same matrix (row i holds i's
    in-neighbours, so adj_t @ x is the sum), so the CSR keeps the rows as
    they are.  It is built with torch_geometric.utils.to_torch_csr_tensor,
    the public helper behind PyG's ToSparseTensor(layout=torch.sparse_csr):
    entries sorted by (row, column), duplicates summed, int64 indices, float32
    ones as values.  CSR because PyG 2.8 without torch_sparse has no
    SparseTensor, gcn_norm refuses CSC and PyG's spmm converts COO to CSR on
    every call.  edge_index: PyG sends messages from edge_index[0] to
    edge_index[1], so the rows are swapped."""
    def get(name):
        return np.load(os.path.join(folder, name))
    x, edges = torch.from_numpy(get("x.npy")), get("edge_index.npy")
    n, nnz = x.size(0), edges.shape[1]
    loops = int(np.count_nonzero(edges[0] == edges[1]))
    if loops:
        print(f"pyg: the graph stores {loops} self-loops; GCNConv keeps them with "
              "--adjacency edge_index but adds I to them with sparse", file=sys.stderr)
    if adjacency == "sparse":
        adj = to_torch_csr_tensor(torch.from_numpy(edges), torch.ones(nnz), size=(n, n))
    else:
        adj = torch.from_numpy(np.ascontiguousarray(edges[::-1]))
    split = [torch.from_numpy(get(f"{s}_idx.npy")).to(device) for s in ("train", "valid", "test")]
    return Data(x.to(device), adj.to(device), torch.from_numpy(get("y.npy")).to(device),
                split, n, nnz, loops)


# models/checkpoint.c's header: magic, version, configuration hash, epoch,
# best epoch, best train / valid / test accuracy, seed, one offset per RNG
# stream (GCN_RNG_N_STREAMS = 6, core/rng.h), optimiser steps, tensor count,
# reserved; then per tensor rows and cols (int64) and its floats: the
# parameters and buffers, the optimisers' moments, then the best-validation
# model's parameters and buffers (version 2); then a CRC-32 of everything
# before it.  Host byte order, little-endian here.
CKPT_HEADER = struct.Struct("<8sIIii3dQ6QqII")


def read_checkpoint(path):
    """(epoch, optimiser steps, [float32 arrays]) of a gcn checkpoint."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < CKPT_HEADER.size + 4 or \
            zlib.crc32(raw[:-4]) != struct.unpack("<I", raw[-4:])[0]:
        raise SystemExit(f"pyg: {path}: not a gcn checkpoint or damaged (CRC-32)")
    h = CKPT_HEADER.unpack_from(raw)
    if h[0].rstrip(b"\0") != b"GCNCKPT" or h[1] != 2:
        raise SystemExit(f"pyg: {path}: not a version 2 gcn checkpoint")
    epoch, steps, count = h[3], h[-3], h[-2]
    off, tensors = CKPT_HEADER.size, []
    for _ in range(count):
        rows, cols = struct.unpack_from("<qq", raw, off)
        off += 16
        tensors.append(np.frombuffer(raw, "<f4", rows * cols, off).reshape(rows, cols))
        off += 4 * rows * cols
    return epoch, steps, tensors


def gcn_order(model):
    """Parameters and buffers in gcn's checkpoint order (models/model.c):
    per block the layer's parameters, then its batch norm's; buffers per
    block the batch norm's statistics, then those of a GIN MLP's.  Each
    parameter comes with whether gcn stores it transposed (weights are
    in x out there, out x in here)."""
    params, buffers = [], []
    for b in model.blocks:
        if b.kind == "gin":
            lin1, bn, _, lin2 = b.layer.nn
            params += [(lin1.weight, True), (lin1.bias, False), (bn.weight, False),
                       (bn.bias, False), (lin2.weight, True), (lin2.bias, False)]
            if isinstance(b.layer.eps, nn.Parameter):
                params.append((b.layer.eps, False))
        elif b.kind == "gcn":
            params.append((b.layer.lin.weight, True))
            if b.layer.bias is not None:
                params.append((b.layer.bias, False))
        else:
            params.append((b.layer.weight, True))
            if b.layer.bias is not None:
                params.append((b.layer.bias, False))
        if b.norm is not None:
            params += [(b.norm.weight, False), (b.norm.bias, False)]
            buffers += [b.norm.running_mean, b.norm.running_var]
        if b.kind == "gin":
            buffers += [bn.running_mean, bn.running_var]
    return params, buffers


def resume(model, opt, path):
    """Loads a gcn checkpoint into the model and its Adam optimiser; returns
    the epoch it was saved after.  gcn keeps one optimiser per distinct
    weight decay, in the order of first appearance, each holding its
    parameters' first and second moments in model order."""
    epoch, steps, tensors = read_checkpoint(path)
    params, buffers = gcn_order(model)
    decay = {id(p): g["weight_decay"] for g in opt.param_groups for p in g["params"]}
    groups = []
    for p, _ in params:
        if decay[id(p)] not in groups:
            groups.append(decay[id(p)])
    ordered = [(p, t) for wd in groups for p, t in params if decay[id(p)] == wd]
    if not isinstance(opt, torch.optim.Adam) or \
            len(tensors) != 2 * (len(params) + len(buffers)) + 2 * len(ordered):
        raise SystemExit(f"pyg: {path}: {len(tensors)} tensors do not fit this model with Adam")

    def tensor(a, like, transposed):
        a = a.T if transposed else a
        return torch.from_numpy(np.ascontiguousarray(a)).reshape(like.shape).to(like.device)

    it = iter(tensors)
    with torch.no_grad():
        for p, t in params:
            p.copy_(tensor(next(it), p, t))
        for b in buffers:
            b.copy_(tensor(next(it), b, False))
    for p, t in ordered:
        opt.state[p] = {"step": torch.tensor(float(steps)),
                        "exp_avg": tensor(next(it), p, t).clone(),
                        "exp_avg_sq": tensor(next(it), p, t).clone()}
    return epoch


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def set_precision(tf32):
    """TF32 or IEEE FP32 for matmuls and cuDNN.  PyTorch 2.9 added the
    per-backend fp32_precision settings, which supersede allow_tf32 and
    set_float32_matmul_precision (those warn from then on); the old switches
    are used where the new ones are missing."""
    if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        mode = "tf32" if tf32 else "ieee"
        torch.backends.cuda.matmul.fp32_precision = mode
        torch.backends.cudnn.conv.fp32_precision = mode
    else:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")


def components(t):
    """The strided tensors holding t: itself, or a sparse tensor's indices
    and values."""
    if t.layout == torch.sparse_csr:
        return [t.crow_indices(), t.col_indices(), t.values()]
    if t.layout == torch.sparse_coo:
        return [t._indices(), t._values()]
    return [t]


def cached_tensors(module):
    """What a GCNConv with cached=True keeps after its first forward: the
    normalised adjacency (a sparse tensor, or an edge_index and its
    weights) in _cached_edge_index; _cached_adj_t is torch_sparse's."""
    for name in ("_cached_edge_index", "_cached_adj_t"):
        c = getattr(module, name, None)
        for t in c if isinstance(c, tuple) else (c,):
            if isinstance(t, torch.Tensor):
                yield t


def memory_parts(model, opt, data, loaded):
    """Bytes of the data (loaded: allocated when the run started, plus the
    normalised adjacencies GCNConv cached in the first forward, each tensor
    counted once), of the parameters and batch-norm statistics, and of the
    optimiser's state on the GPU after its first step."""
    seen = {c.data_ptr() for t in (data.x, data.adj, data.y, *data.split)
            for c in components(t)}
    cache = 0
    for m in model.modules():
        for c in (c for t in cached_tensors(m) for c in components(t)):
            if c.data_ptr() not in seen:
                seen.add(c.data_ptr())
                cache += c.numel() * c.element_size()
    params = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    optim = sum(t.numel() * t.element_size() for state in opt.state.values()
                for t in state.values() if torch.is_tensor(t) and t.is_cuda)
    return {"data": loaded + cache, "params": params, "optimizer": optim}


def autocast(device, bf16):
    """torch.autocast in bf16 when asked, else a context that does nothing."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16)


def train_step(model, opt, x, adj, y, train, bf16=False):
    model.train()
    opt.zero_grad()
    with autocast(x.device, bf16):
        out = model(x, adj)
        loss = F.cross_entropy(out[train], y[train])
    loss.backward()
    opt.step()
    return loss.detach()


def evaluate(model, x, adj, y, split, bf16=False):
    """The accuracy on each list of split."""
    model.eval()
    with torch.no_grad(), autocast(x.device, bf16):
        pred = model(x, adj).argmax(dim=-1)
        return [float((pred[i] == y[i]).float().mean()) for i in split]


def run(cfg, data, epochs, seed, device, checkpoint=None, trace=False, warmup=0, bf16=False):
    """One run, from a gcn checkpoint when given.  Returns a dict: best
    (best valid accuracy, its test accuracy, its epoch), train_ms and
    eval_ms (one per epoch, each between two CUDA synchronisations) and, on
    a GPU, in bytes: memory (memory_parts after the first epoch), and at the
    end of the last epoch grads (the gradients held until the next step) and
    steady (all that is allocated); peak over the run and peak_timed over
    the epochs after the first warmup ones."""
    gc.collect()  # the previous run's model and optimiser
    cuda = device.type == "cuda"
    loaded = torch.cuda.memory_allocated() if cuda else 0
    torch.manual_seed(seed)
    model = Model(cfg, data.x.size(1), int(data.y.max()) + 1).to(device)
    opt = optimiser(cfg, model)
    first = resume(model, opt, checkpoint) + 1 if checkpoint else 1
    res = {"best": (-1.0, 0.0, 0), "train_ms": [], "eval_ms": [], "memory": None, "peak": 0}
    for epoch in range(first, epochs + 1):
        if cuda and warmup and len(res["train_ms"]) == warmup:
            res["peak"] = torch.cuda.max_memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        synchronize(device)
        t0 = time.perf_counter()
        loss = train_step(model, opt, data.x, data.adj, data.y, data.split[0], bf16)
        synchronize(device)
        t1 = time.perf_counter()
        acc = evaluate(model, data.x, data.adj, data.y, data.split, bf16)
        synchronize(device)
        res["train_ms"].append((t1 - t0) * 1e3)
        res["eval_ms"].append((time.perf_counter() - t1) * 1e3)
        if cuda and res["memory"] is None:
            res["memory"] = memory_parts(model, opt, data, loaded)
        if trace:
            print(f"pyg epoch {epoch} loss {float(loss):.6g} train {acc[0]:.6f} "
                  f"valid {acc[1]:.6f} test {acc[2]:.6f}", flush=True)
        if not torch.isfinite(loss):
            raise SystemExit(f"pyg: non-finite training loss at epoch {epoch}")
        if acc[1] > res["best"][0]:
            res["best"] = (acc[1], acc[2], epoch)
    if cuda:
        res["steady"] = torch.cuda.memory_allocated()
        res["grads"] = sum(p.grad.numel() * p.grad.element_size()
                           for p in model.parameters() if p.grad is not None)
        res["peak_timed"] = torch.cuda.max_memory_allocated()
        res["peak"] = max(res["peak"], res["peak_timed"])
    return res


def bench_record(a, cfg, data, res, precision, device):
    """One run as `gcnbench train` reports it (tools/gcnbench/train.c), after
    a.warmup warm-up epochs: milliseconds over the timed epochs, MiB.
    peak_mib is the high-water mark of the whole run, the data included;
    steady_mib what is allocated at the end of the last epoch.  memory_mib:
    data = the features, labels, split and adjacency, plus GCNConv's cached
    normalised adjacencies; params = the parameters and batch-norm
    statistics; grads = the gradients, held from one step to the next;
    optimizer = its state; activations = the timed epochs' peak minus
    steady_mib (what a step allocates and frees); workspace = the rest of
    steady_mib (cuBLAS's workspace, which PyTorch's allocator holds, and the
    last epoch's small leftovers).  No per-kind GPU time here: gpu_ms,
    gpu_span_ms and spmm are null.  config is the configuration's name (else
    its file name) and nnz counts the entries of the adjacency the model
    multiplies, self-loops included for GCN, as gcnbench's do."""
    train, evals = res["train_ms"][a.warmup:], res["eval_ms"][a.warmup:]
    epoch = [t + e for t, e in zip(train, evals)]
    cuda = device.type == "cuda"
    keys = ("data", "params", "grads", "optimizer", "activations", "workspace")
    memory, peak, steady = dict.fromkeys(keys), None, None
    if cuda:
        parts = dict(res["memory"], grads=res["grads"])
        memory = {k: parts[k] / 2**20 for k in keys[:4]}
        memory["activations"] = (res["peak_timed"] - res["steady"]) / 2**20
        memory["workspace"] = max(res["steady"] - sum(parts.values()), 0) / 2**20
        peak, steady = res["peak"] / 2**20, res["steady"] / 2**20
    gcn = any(layer["type"] == "gcn" for layer in cfg["layers"])
    return {"bench": "train", "framework": "pyg",
            "config": cfg.get("name") or os.path.splitext(os.path.basename(a.config))[0],
            "dataset": a.dataset_name or os.path.basename(os.path.normpath(a.data)),
            "device": torch.cuda.get_device_name() if cuda else "cpu",
            "precision": precision,
            "adjacency": "sparse_csr" if a.adjacency == "sparse" else "edge_index",
            "spmm": None, "cuda_graph": False, "epochs": len(train), "warmup": a.warmup,
            "n_nodes": data.n_nodes,
            "nnz": data.nnz + (data.n_nodes - data.loops if gcn else 0),
            "epoch_ms": statistics.median(epoch), "train_ms": statistics.median(train),
            "eval_ms": statistics.median(evals), "epoch_ms_min": min(epoch),
            "peak_mib": peak, "steady_mib": steady, "memory_mib": memory,
            "gpu_ms": None, "gpu_span_ms": None, "test_acc": res["best"][1],
            "torch": torch.__version__, "torch_geometric": torch_geometric.__version__}


def arguments():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("config")
    p.add_argument("data", help="folder written by gcntrain --export-data")
    p.add_argument("--epochs", type=int,
                   help="default: the configuration's; with --bench the timed epochs, "
                        "which follow the warm-up ones")
    p.add_argument("--runs", type=int, help="default: the configuration's")
    p.add_argument("--seed", type=int, help="run r uses seed + r (default: the configuration's)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--adjacency", default="sparse", choices=("sparse", "edge_index"),
                   help="the graph as a sparse CSR adjacency (PyG's fast path, the default) "
                        "or as an edge_index")
    p.add_argument("--precision", choices=("fp32", "tf32", "bf16"),
                   help="default: the configuration's; bf16: torch.autocast")
    p.add_argument("--resume", metavar="CKPT", help="start the first run from a gcn checkpoint")
    p.add_argument("--trace", action="store_true", help="print every epoch")
    p.add_argument("--bench", action="store_true",
                   help="one run; print one JSON line in the schema of gcnbench train")
    p.add_argument("--warmup", type=int, default=5, metavar="N",
                   help="--bench: untimed epochs before the timed ones (default 5)")
    p.add_argument("--dataset-name", metavar="NAME",
                   help="--bench: the dataset's name (default: the data folder's)")
    a = p.parse_args()
    if a.warmup < 0:
        p.error("--warmup: expected N >= 0")
    return a


def main():
    a = arguments()
    with open(a.config) as f:
        cfg = json.load(f)
    epochs = a.epochs or cfg.get("epochs", 200)
    runs = 1 if a.bench else a.runs or cfg.get("runs", 1)
    seed = cfg.get("seed", 0) if a.seed is None else a.seed
    device = torch.device(a.device)
    precision = a.precision or cfg.get("precision", "fp32")
    set_precision(precision == "tf32")
    bf16 = precision == "bf16"
    data = load(a.data, device, a.adjacency)
    tests, epochs_best, medians = [], [], []
    last, warmup = (a.warmup + epochs, a.warmup) if a.bench else (epochs, 0)
    for r in range(runs):
        try:
            res = run(cfg, data, last, seed + r, device, a.resume if r == 0 else None, a.trace,
                      warmup, bf16)
        except RuntimeError as e:  # an op that refuses the precision
            raise SystemExit(f"pyg: {precision} with --adjacency {a.adjacency}: "
                             f"{str(e).strip().splitlines()[0]}")
        valid, test, epoch = res["best"]
        median_ms = statistics.median(t + e for t, e in zip(res["train_ms"], res["eval_ms"]))
        print(f"pyg run {r + 1} best valid {valid:.4f} at epoch {epoch}: test {test:.4f}, "
              f"median epoch {median_ms:.2f} ms", file=sys.stderr if a.bench else sys.stdout,
              flush=True)
        tests.append(test)
        epochs_best.append(epoch)
        medians.append(median_ms)
    if a.bench:
        if len(res["train_ms"]) <= a.warmup:
            raise SystemExit(f"pyg: --bench: the resumed run ends within --warmup {a.warmup}")
        print(json.dumps(bench_record(a, cfg, data, res, precision, device)), flush=True)
        return
    cuda = device.type == "cuda"
    print(json.dumps({"framework": "pyg", "torch": torch.__version__,
                      "torch_geometric": torch_geometric.__version__,
                      "adjacency": a.adjacency, "precision": precision,
                      "runs": runs, "epochs": epochs, "best_epoch": epochs_best,
                      "test_acc": tests, "test_acc_mean": statistics.mean(tests),
                      "test_acc_std": statistics.stdev(tests) if len(tests) > 1 else 0.0,
                      "median_epoch_ms": statistics.median(medians),
                      "peak_bytes": torch.cuda.max_memory_allocated() if cuda else None,
                      "device": torch.cuda.get_device_name() if cuda else "cpu"}), flush=True)


if __name__ == "__main__":
    main()
