#!/usr/bin/env python3
"""Trains the model of a gcn configuration with PyTorch Geometric on the data
`gcntrain --export-data DIR` wrote, so both frameworks see identical inputs.

    gcntrain models/gcn.json --dataset ogbn-arxiv --features random:128 --export-data /tmp/arxiv
    python3 tools/compare/pyg_train.py models/gcn.json /tmp/arxiv --runs 1

The model mirrors gcn's (models/model.c): each block is dropout on its input
-> layer -> batch norm -> activation; GCNConv normalises D^-1/2 (A+I) D^-1/2
(self-loops added, as gcn's GCN adjacency); GINConv sums the neighbours of the
exported graph, which has no self-loops (gcn's raw adjacency); Linear weights
are Glorot-uniform and biases zero, as gcn initialises them.  Training is
full-batch with the configuration's optimiser, parameter groups per block for
per-layer weight decay, and the test accuracy at the first epoch with the best
validation accuracy.  An epoch's time is the training step plus the
evaluation of all splits, between two CUDA synchronisations, as gcntrain times
it.  Prints one line per run and then one JSON object: test accuracy mean and
std, the best epochs, median epoch time and torch.cuda.max_memory_allocated()
(the data included, as gcntrain's peak includes it).

--resume CKPT starts the first run from a checkpoint `gcntrain --save` wrote
(parameters, batch-norm statistics and Adam state, in gcn's order:
models/checkpoint.c), so both frameworks continue from one state;
--trace prints every epoch's loss and accuracies
(tools/compare/trajectory_arxiv.sh compares them with gcntrain's).
"""
import argparse
import json
import os
import statistics
import struct
import time
import zlib

import numpy as np
import torch
import torch.nn.functional as F
import torch_geometric
from torch import nn
from torch_geometric.nn import GCNConv, GINConv


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

    def forward(self, x, edge_index):
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.layer(x) if self.kind == "linear" else self.layer(x, edge_index)
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

    def forward(self, x, edge_index):
        for b in self.blocks:
            x = b(x, edge_index)
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


def load(folder, device):
    """The exported arrays on the device.  gcn computes y_i = sum_j A_ij x_j
    over the stored entries (row i, column j); PyG sends messages from
    edge_index[0] to edge_index[1], so the rows are swapped."""
    def get(name):
        return torch.from_numpy(np.load(os.path.join(folder, name))).to(device)
    x, y = get("x.npy"), get("y.npy")
    edge_index = get("edge_index.npy").flip(0).contiguous()
    split = [get(f"{s}_idx.npy") for s in ("train", "valid", "test")]
    return x, edge_index, y, split


# models/checkpoint.c's header: magic, version, configuration hash, epoch,
# best epoch, best train / valid / test accuracy, seed, one offset per RNG
# stream (GCN_RNG_N_STREAMS = 5, core/rng.h), optimiser steps, tensor count,
# reserved; then per tensor rows and cols (int64) and its floats; then a
# CRC-32 of everything before it.  Host byte order, little-endian here.
CKPT_HEADER = struct.Struct("<8sIIii3dQ5QqII")


def read_checkpoint(path):
    """(epoch, optimiser steps, [float32 arrays]) of a gcn checkpoint."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < CKPT_HEADER.size + 4 or \
            zlib.crc32(raw[:-4]) != struct.unpack("<I", raw[-4:])[0]:
        raise SystemExit(f"pyg: {path}: not a gcn checkpoint or damaged (CRC-32)")
    h = CKPT_HEADER.unpack_from(raw)
    if h[0].rstrip(b"\0") != b"GCNCKPT" or h[1] != 1:
        raise SystemExit(f"pyg: {path}: not a version 1 gcn checkpoint")
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
            len(tensors) != len(params) + len(buffers) + 2 * len(ordered):
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


def run(cfg, data, epochs, seed, device, checkpoint=None, trace=False):
    """One run, from a gcn checkpoint when given; returns (best valid, its
    test accuracy, its epoch) and the median epoch time in milliseconds."""
    x, edge_index, y, (train, valid, test) = data
    torch.manual_seed(seed)
    model = Model(cfg, x.size(1), int(y.max()) + 1).to(device)
    opt = optimiser(cfg, model)
    first = resume(model, opt, checkpoint) + 1 if checkpoint else 1
    best = (-1.0, 0.0, 0)
    times = []
    for epoch in range(first, epochs + 1):
        synchronize(device)
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(x, edge_index)
        loss = F.cross_entropy(out[train], y[train])
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(x, edge_index).argmax(dim=-1)
            acc = [float((pred[i] == y[i]).float().mean()) for i in (train, valid, test)]
        synchronize(device)
        times.append((time.perf_counter() - t0) * 1e3)
        if trace:
            print(f"pyg epoch {epoch} loss {float(loss):.6g} train {acc[0]:.6f} "
                  f"valid {acc[1]:.6f} test {acc[2]:.6f}", flush=True)
        if not torch.isfinite(loss):
            raise SystemExit(f"pyg: non-finite training loss at epoch {epoch}")
        if acc[1] > best[0]:
            best = (acc[1], acc[2], epoch)
    return best, statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("config")
    p.add_argument("data", help="folder written by gcntrain --export-data")
    p.add_argument("--epochs", type=int, help="default: the configuration's")
    p.add_argument("--runs", type=int, help="default: the configuration's")
    p.add_argument("--seed", type=int, help="run r uses seed + r (default: the configuration's)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--resume", metavar="CKPT", help="start the first run from a gcn checkpoint")
    p.add_argument("--trace", action="store_true", help="print every epoch")
    a = p.parse_args()
    with open(a.config) as f:
        cfg = json.load(f)
    epochs = a.epochs or cfg.get("epochs", 200)
    runs = a.runs or cfg.get("runs", 1)
    seed = cfg.get("seed", 0) if a.seed is None else a.seed
    device = torch.device(a.device)
    tf32 = cfg.get("precision", "fp32") == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    data = load(a.data, device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    tests, epochs_best, medians = [], [], []
    for r in range(runs):
        (valid, test, epoch), median_ms = run(cfg, data, epochs, seed + r, device,
                                              a.resume if r == 0 else None, a.trace)
        print(f"pyg run {r + 1} best valid {valid:.4f} at epoch {epoch}: test {test:.4f}, "
              f"median epoch {median_ms:.2f} ms", flush=True)
        tests.append(test)
        epochs_best.append(epoch)
        medians.append(median_ms)
    cuda = device.type == "cuda"
    print(json.dumps({"framework": "pyg", "torch": torch.__version__,
                      "torch_geometric": torch_geometric.__version__,
                      "runs": runs, "epochs": epochs, "best_epoch": epochs_best,
                      "test_acc": tests, "test_acc_mean": statistics.mean(tests),
                      "test_acc_std": statistics.stdev(tests) if len(tests) > 1 else 0.0,
                      "median_epoch_ms": statistics.median(medians),
                      "peak_bytes": torch.cuda.max_memory_allocated() if cuda else None,
                      "device": torch.cuda.get_device_name() if cuda else "cpu"}), flush=True)


if __name__ == "__main__":
    main()
