#!/usr/bin/env python3
"""Trains the model of a gcn configuration with PyTorch Geometric on the data
`gcntrain --export-data DIR` wrote, so both frameworks see identical inputs.

    gcntrain models/gcn.json --dataset ogbn-arxiv --features random:128 --export-data /tmp/arxiv
    python3 tools/compare/pyg_train.py models/gcn.json /tmp/arxiv --runs 1

Prints one line per run and a JSON summary: test accuracy at the best
validation epoch, median epoch time (train step + evaluation, CUDA
synchronised) and torch.cuda.max_memory_allocated().
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv, GINConv


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
            mlp = nn.Sequential(nn.Linear(fin, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                nn.Linear(hidden, fout))
            self.layer = GINConv(mlp, eps=spec.get("eps", 0.0), train_eps=spec.get("train_eps", False))
        else:
            self.layer = nn.Linear(fin, fout, bias=bias)
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
    o = cfg.get("optimizer", {"type": "adam", "lr": 0.01})
    kind, wd = o["type"], o.get("weight_decay", 0.01 if o["type"] == "adamw" else 0.0)
    groups = [{"params": b.parameters(),
               "weight_decay": wd if b.weight_decay is None else b.weight_decay} for b in model.blocks]
    lr = o.get("lr", 0.01 if kind == "sgd" else 0.001)
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=o.get("momentum", 0.0),
                               dampening=o.get("dampening", 0.0), nesterov=o.get("nesterov", False))
    betas = (o.get("beta1", 0.9), o.get("beta2", 0.999))
    cls = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
    return cls(groups, lr=lr, betas=betas, eps=o.get("eps", 1e-8))


def load(folder, device):
    get = lambda name: np.load(os.path.join(folder, name))
    x = torch.from_numpy(get("x.npy")).to(device)
    edge_index = torch.from_numpy(get("edge_index.npy")).to(device)
    y = torch.from_numpy(get("y.npy")).to(device)
    split = [torch.from_numpy(get(f"{s}_idx.npy")).to(device) for s in ("train", "valid", "test")]
    return x, edge_index, y, split


def run(cfg, data, epochs, seed, device):
    x, edge_index, y, (train, valid, test) = data
    torch.manual_seed(seed)
    model = Model(cfg, x.size(1), int(y.max()) + 1).to(device)
    opt = optimiser(cfg, model)
    best = (-1.0, 0.0, 0)
    times = []
    for epoch in range(1, epochs + 1):
        torch.cuda.synchronize()
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
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        if acc[1] > best[0]:
            best = (acc[1], acc[2], epoch)
    return best, statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("config")
    p.add_argument("data")
    p.add_argument("--epochs", type=int)
    p.add_argument("--runs", type=int)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    cfg = json.load(open(a.config))
    epochs = a.epochs or cfg.get("epochs", 200)
    runs = a.runs or cfg.get("runs", 1)
    device = torch.device("cuda")
    data = load(a.data, device)
    torch.cuda.reset_peak_memory_stats()
    tests, medians = [], []
    for r in range(runs):
        (valid, test, epoch), median_ms = run(cfg, data, epochs, a.seed + r, device)
        print(f"pyg run {r + 1} best valid {valid:.4f} at epoch {epoch}: test {test:.4f}, "
              f"median epoch {median_ms:.2f} ms", flush=True)
        tests.append(test)
        medians.append(median_ms)
    print(json.dumps({"framework": "pyg", "torch": torch.__version__,
                      "test_acc_mean": statistics.mean(tests),
                      "test_acc_std": statistics.stdev(tests) if len(tests) > 1 else 0.0,
                      "median_epoch_ms": statistics.median(medians),
                      "peak_bytes": torch.cuda.max_memory_allocated(),
                      "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    main()
