#!/usr/bin/env python3
"""Graph classification with PyTorch Geometric on a TU collection, over the
folds gcn wrote, as a reference for gcn's own trainer.

    gcntrain models/gin-graph.json --dataset tu:PROTEINS_full --root ../shared/data \
        --folds 10 --folds-file /tmp/proteins.folds
    python3 tools/compare/pyg_graph.py --root ../shared/data --dataset PROTEINS_full \
        --folds-file /tmp/proteins.folds --protocol gin --jobs 10
    python3 tools/compare/pyg_graph.py --root ../shared/data --dataset PROTEINS_full \
        --folds-file /tmp/proteins.folds --protocol errica --adjacency sparse --data-on-device

Data: ROOT/tu/NAME/NAME_{A,graph_indicator,graph_labels,node_labels}.txt,
plain or gzip'd (.txt.gz), read with the standard library (not TUDataset).
A line "i, j" of NAME_A is the adjacency entry (row i, column j), which gcn
sums as y_i += x_j: the PyG edge j -> i.  Features: one-hot node labels
(label - min, max - min + 1 columns); classes: the distinct graph labels in
ascending order.  Each graph is a Data(x, edge_index, y), 0-based node ids
of its own, edges sorted by (target, source).

Folds: the file `gcntrain --folds-file` writes ('#' comments, then line k:
the 0-based graph ids of fold k).  For outer fold K of k:
  gin     trains on the other k - 1 folds and tests fold K after every epoch;
          the result is the folds' test accuracies at the epoch with the best
          mean test accuracy over the folds, the first of ties (Xu et al.)
  errica  validates on fold (K + 1) mod k, trains on the other k - 2; the
          result is each fold's test accuracy at its first best-validation
          epoch (Errica et al., without their hyper-parameter grid)
Mean and population std (numpy.std, ddof=0) over the folds.  per_fold in the
JSON: test_acc as the protocol picks it; best_epoch the fold's own best
(errica: its validation pick; gin: its best test accuracy's, an optimistic
figure) and best_test_acc the test accuracy there; last_test_acc.

Model (gcn's GIN-0 with jumping knowledge, as the GIN paper's code): h_0 = x,
h_l = ReLU(BN(MLP(h_{l-1} + sum of the neighbours' h_{l-1}))) (GINConv, eps
fixed at 0, MLP = Linear -> BN -> ReLU -> Linear), score = sum over l = 0..L
of Dropout(Linear_l(pool(h_l))) (--no-jk: the last layer's only).  Cross-
entropy, Adam, StepLR stepped after each epoch's shuffled batches, torch
seeded with seed + K for fold K.  Training accuracy counts each batch's
training-mode predictions as it trains.  --init torch keeps PyTorch's
default initialisation (the GIN code's); glorot is gcn's (Glorot-uniform
weights, zero biases).

--adjacency edge_index hands GINConv each batch's edge_index (gather, then
scatter-add); sparse a torch.sparse_csr_tensor adj_t built on the device per
batch (adj_t[i, j] = 1 for the edge j -> i), summed by a sparse product.
--data-on-device moves all graphs to the GPU once and collates there; by
default batches are collated on the host and moved with .to(device,
non_blocking=True).

Per fold, epoch_ms is the median over epochs of the training batches plus
the evaluation, between two CUDA synchronisations, train_ms of the batches
alone; peak_mib torch.cuda.max_memory_allocated(), reset as the fold starts
(per process; data on the device included).  --jobs J runs the folds in J
spawned processes, which may share one GPU.  Prints a line per fold, a
summary line and one JSON object; --trace prints every epoch, --curves FILE
writes the per-epoch curves as JSON.
"""
import argparse
import bisect
import gzip
import json
import math
import multiprocessing
import os
import statistics
import sys
import time
import warnings
from collections import namedtuple

# PyTorch's notes on every sparse CSR tensor built (beta state, invariants
# unchecked) say nothing about this script's runs.
warnings.filterwarnings("ignore", message="Sparse (CSR tensor support is in beta|invariant checks)")

# A TU collection as plain lists: node_ptr / edge_ptr [G + 1] delimit each
# graph's nodes and edges; columns [N] each node's one-hot column (of width);
# src, dst [E] the edges j -> i, graph-local ids, sorted by (graph, dst, src);
# classes [G] each graph's class in 0 .. n_classes - 1.
Collection = namedtuple("Collection",
                        "name node_ptr columns width src dst edge_ptr classes n_classes")


def read_ints(folder, name, part, required=True):
    """The integers of NAME_part.txt (else .txt.gz); commas count as spaces.
    None for a missing optional file."""
    path = os.path.join(folder, f"{name}_{part}.txt")
    if os.path.isfile(path):
        f = open(path)
    elif os.path.isfile(path + ".gz"):
        f = gzip.open(path + ".gz", "rt")
    elif required:
        raise SystemExit(f"pyg: {path}[.gz]: no such file")
    else:
        return None
    with f:
        text = f.read()
    try:
        return [int(v) for v in text.replace(",", " ").split()]
    except ValueError as e:
        raise SystemExit(f"pyg: {f.name}: {e}") from None


def load_collection(root, name):
    """ROOT/tu/NAME as a Collection, checked as gcn checks it."""
    folder = os.path.join(root, "tu", name)
    indicator = read_ints(folder, name, "graph_indicator")
    n = len(indicator)
    if not n or indicator[0] != 1 or \
            any(b - a not in (0, 1) for a, b in zip(indicator, indicator[1:])):
        raise SystemExit(f"pyg: {name}_graph_indicator: graph ids must run from 1 without gaps, "
                         "each graph's nodes together, in order")
    n_graphs = indicator[-1]
    node_ptr = [0] * (n_graphs + 1)
    for g in indicator:
        node_ptr[g] += 1
    for g in range(n_graphs):
        node_ptr[g + 1] += node_ptr[g]

    labels = read_ints(folder, name, "graph_labels")
    if len(labels) != n_graphs:
        raise SystemExit(f"pyg: {name}_graph_labels: {len(labels)} labels for {n_graphs} graphs")
    values = sorted(set(labels))
    class_of = {v: c for c, v in enumerate(values)}
    classes = [class_of[v] for v in labels]

    node_labels = read_ints(folder, name, "node_labels", required=False)
    if node_labels is None:
        raise SystemExit(f"pyg: {name}: no node labels (this reference takes their one-hot "
                         "encoding as features)")
    if len(node_labels) != n:
        raise SystemExit(f"pyg: {name}_node_labels: {len(node_labels)} labels for {n} nodes")
    low = min(node_labels)
    columns = [v - low for v in node_labels]

    a = read_ints(folder, name, "A")
    if len(a) % 2:
        raise SystemExit(f"pyg: {name}_A: an odd number of node ids")
    keys = []
    for i, j in zip(a[0::2], a[1::2]):
        if not (1 <= i <= n and 1 <= j <= n) or indicator[i - 1] != indicator[j - 1]:
            raise SystemExit(f"pyg: {name}_A: entry ({i}, {j}) is out of range or joins two graphs")
        keys.append((i - 1) * n + j - 1)
    keys.sort()  # by (target, source), so by graph too: a graph's nodes are contiguous
    loops = sum(k // n == k % n for k in keys)
    repeats = sum(x == y for x, y in zip(keys, keys[1:]))
    if loops or repeats:
        print(f"pyg: {name}: {loops} self-loops and {repeats} repeated entries, kept as they are",
              file=sys.stderr)
    dst = [k // n for k in keys]
    edge_ptr = [bisect.bisect_left(dst, p) for p in node_ptr]
    base = [node_ptr[g - 1] for g in indicator]  # each node's graph's first node
    src = [k % n - base[k % n] for k in keys]
    dst = [d - base[d] for d in dst]
    return Collection(name, node_ptr, columns, max(columns) + 1, src, dst, edge_ptr, classes,
                      len(values))


def read_folds(path, n_graphs):
    """The folds of a gcn fold file: lists of 0-based graph ids, each graph
    in exactly one fold."""
    folds, fold_of = [], {}
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            ids, where = [], f"pyg: {path}:{line_no}"
            for token in line.split():
                try:
                    g = int(token)
                except ValueError:
                    raise SystemExit(f"{where}: {token!r} is not a graph id") from None
                if not 0 <= g < n_graphs:
                    raise SystemExit(f"{where}: graph {g} out of range [0, {n_graphs})")
                if g in fold_of:
                    raise SystemExit(f"{where}: graph {g} is in fold {fold_of[g]} "
                                     f"and fold {len(folds)}")
                fold_of[g] = len(folds)
                ids.append(g)
            folds.append(ids)
    if len(folds) < 2:
        raise SystemExit(f"pyg: {path}: {len(folds)} folds, expected at least 2")
    if len(fold_of) != n_graphs:
        missing = next(g for g in range(n_graphs) if g not in fold_of)
        raise SystemExit(f"pyg: {path}: graph {missing} is in no fold "
                         f"({n_graphs - len(fold_of)} missing)")
    return folds


def split_ids(folds, k_fold, protocol):
    """(train, valid, test) graph ids of outer fold k_fold; valid is empty
    under the gin protocol."""
    k = len(folds)
    held = {k_fold, (k_fold + 1) % k} if protocol == "errica" else {k_fold}
    train = sorted(g for f in range(k) if f not in held for g in folds[f])
    valid = folds[(k_fold + 1) % k] if protocol == "errica" else []
    return train, valid, folds[k_fold]


def fold_best(r, protocol):
    """A fold's own best epoch, 0-based, the first of ties: its best
    validation accuracy's (errica) or its best test accuracy's (gin)."""
    curve = r["valid"] if protocol == "errica" else r["test"]
    return max(range(len(curve)), key=curve.__getitem__)


# Per process state of the fold runs: the device, the Data list and the
# folds, set by setup (in each spawned process, or once in this one).
STATE = {}


def setup(coll, folds, args):
    """Prepares this process for run_fold: threads, precision, the graphs."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.data import Data

    device = torch.device(args.device)
    if device.type == "cpu" and args.threads:
        torch.set_num_threads(args.threads)
    tf32 = args.precision == "tf32"
    if hasattr(torch.backends.cuda.matmul, "fp32_precision"):  # PyTorch >= 2.9
        torch.backends.cuda.matmul.fp32_precision = "tf32" if tf32 else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if tf32 else "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    x = F.one_hot(torch.tensor(coll.columns), coll.width).float()
    edge_index = torch.tensor([coll.src, coll.dst], dtype=torch.long)
    nodes = [b - a for a, b in zip(coll.node_ptr, coll.node_ptr[1:])]
    edges = [b - a for a, b in zip(coll.edge_ptr, coll.edge_ptr[1:])]
    home = device if args.data_on_device else torch.device("cpu")
    graphs = [Data(x=xg.clone(), edge_index=eg.clone(), y=torch.tensor([c])).to(home)
              for xg, eg, c in zip(x.split(nodes), edge_index.split(edges, dim=1), coll.classes)]
    STATE.update(device=device, graphs=graphs, folds=folds, args=args,
                 width=coll.width, n_classes=coll.n_classes)


def build_model(width, n_classes, args):
    """GIN-0 with jumping-knowledge readout (see the module docstring)."""
    import torch.nn.functional as F
    from torch import nn
    from torch_geometric.nn import GINConv, global_add_pool, global_max_pool, global_mean_pool

    class GIN(nn.Module):
        def __init__(self):
            super().__init__()
            h, widths = args.hidden, [width] + [args.hidden] * args.layers
            self.convs = nn.ModuleList(
                GINConv(nn.Sequential(nn.Linear(w, h), nn.BatchNorm1d(h), nn.ReLU(),
                                      nn.Linear(h, h)), eps=0.0, train_eps=False)
                for w in widths[:-1])
            self.norms = nn.ModuleList(nn.BatchNorm1d(h) for _ in range(args.layers))
            self.heads = nn.ModuleList(nn.Linear(w, n_classes)
                                       for w in (widths[-1:] if args.no_jk else widths))
            self.pool = {"sum": global_add_pool, "mean": global_mean_pool,
                         "max": global_max_pool}[args.pooling]

        def forward(self, x, adj, batch, n_graphs):
            hs = [x]
            for conv, norm in zip(self.convs, self.norms):
                hs.append(F.relu(norm(conv(hs[-1], adj))))
            score = 0
            for h, head in zip(hs[-len(self.heads):], self.heads):
                score = score + F.dropout(head(self.pool(h, batch, n_graphs)), args.dropout,
                                          self.training)
            return score

    model = GIN()
    if args.init == "glorot":
        for m in model.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
    return model


def adjacency(batch, kind):
    """The batch's graph as GINConv takes it: its edge_index, or a sparse CSR
    adj_t (rows = targets, which the per-graph (target, source) order and
    the collation's increasing node offsets keep sorted)."""
    import torch
    if kind == "edge_index":
        return batch.edge_index
    src, dst = batch.edge_index
    n = batch.num_nodes
    crow = torch.cat([dst.new_zeros(1), torch.bincount(dst, minlength=n).cumsum(0)])
    return torch.sparse_csr_tensor(crow, src, torch.ones(src.numel(), device=dst.device),
                                   size=(n, n))


def run_fold(k_fold):
    """Trains and evaluates outer fold k_fold in this process; returns its
    per-epoch curves (loss, train/valid/test accuracy, epoch and training
    milliseconds), peak MiB and wall seconds."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.loader import DataLoader

    device, graphs, args = STATE["device"], STATE["graphs"], STATE["args"]
    cuda = device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def forward(model, batch):
        batch = batch.to(device, non_blocking=True)
        return model(batch.x, adjacency(batch, args.adjacency), batch.batch,
                     batch.num_graphs), batch.y

    @torch.no_grad()
    def accuracy(model, loader):
        if loader is None:
            return None
        model.eval()
        correct, n = torch.zeros((), dtype=torch.long, device=device), 0
        for batch in loader:
            out, y = forward(model, batch)
            correct += (out.argmax(dim=-1) == y).sum()
            n += y.numel()
        return int(correct) / n

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    train_ids, valid_ids, test_ids = split_ids(STATE["folds"], k_fold, args.protocol)
    torch.manual_seed(args.seed + k_fold)
    model = build_model(STATE["width"], STATE["n_classes"], args).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=args.lr_every, gamma=args.lr_gamma)
    train_loader = DataLoader([graphs[g] for g in train_ids], batch_size=args.batch_size,
                              shuffle=True, drop_last=False)
    valid_loader, test_loader = (
        DataLoader([graphs[g] for g in ids], batch_size=args.eval_batch_size) if ids else None
        for ids in (valid_ids, test_ids))
    curves = {k: [] for k in ("loss", "train", "valid", "test", "epoch_ms", "train_ms")}
    for epoch in range(1, args.epochs + 1):
        sync()
        t0 = time.perf_counter()
        model.train()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), dtype=torch.long, device=device)
        for batch in train_loader:
            opt.zero_grad()
            out, y = forward(model, batch)
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * y.numel()
            correct += (out.detach().argmax(dim=-1) == y).sum()
        sched.step()
        sync()
        t1 = time.perf_counter()
        valid, test = accuracy(model, valid_loader), accuracy(model, test_loader)
        sync()
        t2 = time.perf_counter()
        loss = float(loss_sum) / len(train_ids)
        if not math.isfinite(loss):
            raise RuntimeError(f"pyg: fold {k_fold}: non-finite training loss at epoch {epoch}")
        for key, v in zip(curves, (loss, int(correct) / len(train_ids), valid, test,
                                   (t2 - t0) * 1e3, (t1 - t0) * 1e3)):
            curves[key].append(v)
        if args.trace:
            print(f"pyg fold {k_fold} epoch {epoch} loss {loss:.6g} "
                  f"train {curves['train'][-1]:.4f} "
                  f"valid {'-' if valid is None else f'{valid:.4f}'} test {test:.4f} "
                  f"ms {curves['epoch_ms'][-1]:.2f}", flush=True)
    return dict(curves, fold=k_fold, valid=curves["valid"] if valid_ids else None,
                peak_mib=torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
                wall_s=time.perf_counter() - start)


def fold_results(coll, folds, args, run_ids):
    """Runs the folds run_ids, in this process or in --jobs spawned ones
    (each running one fold at a time); yields each result as it ends."""
    jobs = min(args.jobs, len(run_ids))
    if jobs == 1:
        setup(coll, folds, args)
        yield from map(run_fold, run_ids)
        return
    with multiprocessing.get_context("spawn").Pool(jobs, setup, (coll, folds, args)) as pool:
        yield from pool.imap_unordered(run_fold, run_ids)


def fold_line(r, protocol):
    """The human-readable line of a finished fold."""
    e = fold_best(r, protocol)
    by = "best valid" if protocol == "errica" else "best test"
    peak = "-" if r["peak_mib"] is None else f"{r['peak_mib']:.1f}"
    epoch_ms, train_ms = statistics.median(r["epoch_ms"]), statistics.median(r["train_ms"])
    return (f"pyg fold {r['fold']}: {len(r['test'])} epochs, {by} at epoch {e + 1}: test "
            f"{r['test'][e]:.4f}, last test {r['test'][-1]:.4f}, median epoch {epoch_ms:.2f} ms "
            f"(train {train_ms:.2f}), peak {peak} MiB, {r['wall_s']:.1f} s")


def summarise(results, protocol):
    """(mean, std, chosen epoch (gin, 1-based) or None, per-fold records)."""
    import numpy as np
    if protocol == "gin":
        epoch = int(np.argmax(np.mean([r["test"] for r in results], axis=0)))
        picks = [r["test"][epoch] for r in results]
    else:
        epoch = None
        picks = [r["test"][fold_best(r, protocol)] for r in results]
    per_fold = []
    for r, acc in zip(results, picks):
        e = fold_best(r, protocol)
        per_fold.append({"fold": r["fold"], "test_acc": acc, "best_epoch": e + 1,
                         "best_test_acc": r["test"][e], "last_test_acc": r["test"][-1],
                         "epoch_ms": statistics.median(r["epoch_ms"]),
                         "train_ms": statistics.median(r["train_ms"]),
                         "peak_mib": r["peak_mib"], "wall_s": r["wall_s"]})
    return (float(np.mean(picks)), float(np.std(picks, ddof=0)),
            None if epoch is None else epoch + 1, per_fold)


def positive(kind):
    """An argparse type: a number of type kind, above zero."""
    def parse(s):
        v = kind(s)
        if not v > 0:
            raise argparse.ArgumentTypeError(f"expected a number above 0, got {s}")
        return v
    return parse


def arguments():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default="data", help="data folder holding tu/NAME (default: data)")
    p.add_argument("--dataset", required=True, metavar="NAME", help="TU collection (tu:NAME too)")
    p.add_argument("--folds-file", required=True, metavar="FILE", help="folds gcntrain wrote")
    p.add_argument("--protocol", default="gin", choices=("gin", "errica"))
    p.add_argument("--fold", type=int, metavar="K", help="run outer fold K only (default: all)")
    p.add_argument("--jobs", type=positive(int), default=1, metavar="J",
                   help="run the folds in J spawned processes (default 1)")
    p.add_argument("--epochs", type=positive(int), default=350)
    p.add_argument("--batch-size", type=positive(int), default=32)
    p.add_argument("--eval-batch-size", type=positive(int), default=512)
    p.add_argument("--lr", type=positive(float), default=0.01, help="Adam's (default 0.01)")
    p.add_argument("--lr-every", type=positive(int), default=50, metavar="N",
                   help="StepLR step_size in epochs (default 50)")
    p.add_argument("--lr-gamma", type=positive(float), default=0.5,
                   help="StepLR gamma (default 0.5)")
    p.add_argument("--layers", type=positive(int), default=5, help="GIN layers (default 5)")
    p.add_argument("--hidden", type=positive(int), default=64)
    p.add_argument("--dropout", type=float, default=0.5, help="on each head's scores (default 0.5)")
    p.add_argument("--pooling", default="sum", choices=("sum", "mean", "max"))
    p.add_argument("--no-jk", action="store_true", help="read out the last layer only")
    p.add_argument("--init", default="torch", choices=("torch", "glorot"),
                   help="Linear initialisation: PyTorch's default or gcn's Glorot/zero bias")
    p.add_argument("--seed", type=int, default=0, help="fold K seeds torch with seed + K")
    p.add_argument("--adjacency", default="edge_index", choices=("edge_index", "sparse"))
    p.add_argument("--data-on-device", action="store_true",
                   help="move all graphs to the device once; collate there")
    p.add_argument("--precision", default="fp32", choices=("fp32", "tf32"))
    p.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda if available")
    p.add_argument("--threads", type=positive(int), metavar="N",
                   help="cpu: torch.set_num_threads(N)")
    p.add_argument("--trace", action="store_true", help="print every epoch of every fold")
    p.add_argument("--curves", metavar="FILE", help="write the per-epoch curves as JSON")
    a = p.parse_args()
    if not 0 <= a.dropout < 1:
        p.error("--dropout: expected 0 <= p < 1")
    a.dataset = a.dataset.removeprefix("tu:")
    return a


def main():
    start = time.perf_counter()
    args = arguments()
    coll = load_collection(args.root, args.dataset)
    folds = read_folds(args.folds_file, len(coll.classes))
    k = len(folds)
    if args.protocol == "errica" and k < 3:
        raise SystemExit("pyg: the errica protocol needs at least 3 folds")
    if args.fold is not None and not 0 <= args.fold < k:
        raise SystemExit(f"pyg: --fold {args.fold}: expected 0 to {k - 1}")
    run_ids = list(range(k)) if args.fold is None else [args.fold]

    import torch
    import torch_geometric
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"pyg: {coll.name}: {len(coll.classes)} graphs, {coll.width} features, "
          f"{coll.n_classes} classes, {k} folds, {args.protocol} protocol, {args.device}",
          flush=True)
    results = []
    for r in fold_results(coll, folds, args, run_ids):
        print(fold_line(r, args.protocol), flush=True)
        results.append(r)
    results.sort(key=lambda r: r["fold"])
    mean, std, epoch, per_fold = summarise(results, args.protocol)
    at = f"at epoch {epoch} (best mean test accuracy)" if epoch else \
        "at each fold's best validation"
    print(f"pyg {args.protocol}: test accuracy {mean:.4f} +- {std:.4f} {at} over "
          f"{len(results)} folds", flush=True)
    if args.curves:
        with open(args.curves, "w") as f:
            json.dump({"dataset": coll.name, "protocol": args.protocol,
                       "folds": [{key: r[key] for key in ("fold", "loss", "train", "valid", "test",
                                                          "epoch_ms")} for r in results]}, f)
    print(json.dumps({"framework": "pyg", "dataset": coll.name, "protocol": args.protocol,
                      "folds": k, "epochs": args.epochs, "mean": mean, "std": std,
                      "epoch": epoch, "per_fold": per_fold,
                      "wall_s": time.perf_counter() - start,
                      "config": dict(vars(args), torch=torch.__version__,
                                     torch_geometric=torch_geometric.__version__,
                                     device_name=torch.cuda.get_device_name()
                                     if args.device == "cuda" else "cpu")}), flush=True)


if __name__ == "__main__":
    main()
