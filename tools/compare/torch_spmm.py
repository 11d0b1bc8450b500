#!/usr/bin/env python3
"""Times torch.sparse.mm on the matrix `gcnbench spmm --export-matrix DIR`
wrote, and torch.matmul on dense shapes in FP32 and TF32, for docs/perf.md.

    gcnbench spmm --dataset ogbn-arxiv --kernels cusparse --export-matrix /tmp/m
    python3 tools/compare/torch_spmm.py /tmp/m/ogbn-arxiv --out torch.jsonl

The matrix becomes a CUDA CSR tensor with int64 indices (as PyTorch Geometric
builds it), the same with int32 indices (as gcn's kernels store it), and a
coalesced COO tensor.  Each product is checked on sampled rows against a
float64 reference first (element error relative to the row's summed
magnitude: 1e-5 for SpMM and FP32, 1e-3 for TF32, as gcnbench), then timed
with a CUDA event pair around each of --reps runs after --warmup runs; median
and min are reported.  With --ours FILE (the JSON lines of `gcnbench spmm`
and `gcnbench matmul`) a side-by-side table follows.  Exit status 1 when any
check failed.
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np
import torch

MAX_SAMPLES = 1024
FORMATS = ("csr", "csr_i32", "coo")


def load_csr(folder):
    """shape, row_ptr, col_idx, values as gcn_graph_export_npy wrote them."""
    arr = {k: np.load(os.path.join(folder, k + ".npy"))
           for k in ("shape", "row_ptr", "col_idx", "values")}
    n_rows, n_cols = (int(v) for v in arr["shape"])
    nnz = int(arr["row_ptr"][-1])
    if (arr["row_ptr"].shape != (n_rows + 1,) or arr["col_idx"].shape != (nnz,)
            or arr["values"].shape != (nnz,) or arr["values"].dtype != np.float32):
        sys.exit(f"torch_spmm: {folder}: inconsistent CSR arrays")
    return n_rows, n_cols, arr["row_ptr"], arr["col_idx"], arr["values"]


def sparse_tensor(fmt, n_rows, n_cols, row_ptr, col_idx, values):
    dev = torch.device("cuda")
    val = torch.from_numpy(values).to(dev)
    if fmt == "coo":
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(row_ptr))
        idx = torch.from_numpy(np.stack([rows, col_idx])).to(dev)
        return torch.sparse_coo_tensor(idx, val, (n_rows, n_cols)).coalesce()
    itype = torch.int32 if fmt == "csr_i32" else torch.int64
    crow = torch.from_numpy(row_ptr).to(dev, itype)
    col = torch.from_numpy(col_idx).to(dev, itype)
    return torch.sparse_csr_tensor(crow, col, val, (n_rows, n_cols))


def cuda_time(fn, warmup, reps):
    """Median and min milliseconds of fn(), one event pair around each run."""
    for _ in range(warmup):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for start, end in ev:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    ms = [start.elapsed_time(end) for start, end in ev]
    return statistics.median(ms), min(ms)


def sample_rows(row_ptr):
    """Up to MAX_SAMPLES rows spread over the matrix, the longest one first."""
    n = len(row_ptr) - 1
    k = min(n, MAX_SAMPLES)
    rows = [int(np.argmax(np.diff(row_ptr)))] + [i * n // k for i in range(1, k)]
    return np.array(rows[:k], dtype=np.int64)


def reference(x, rows, row_ptr, col_idx, values):
    """A x and |A| |x| on the sampled rows, in float64."""
    xh = x.cpu().numpy()
    ref = np.zeros((len(rows), x.shape[1]))
    mag = np.zeros_like(ref)
    for r, i in enumerate(rows):
        lo, hi = row_ptr[i], row_ptr[i + 1]
        v, xs = values[lo:hi].astype(np.float64), xh[col_idx[lo:hi]].astype(np.float64)
        ref[r], mag[r] = v @ xs, np.abs(v) @ np.abs(xs)
    return ref, mag


def max_error(got, ref, mag):
    """Largest |got - ref| / mag; infinite when got holds a NaN or infinity."""
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.max(np.abs(got - ref) / np.where(mag > 0, mag, 1e-30), initial=0.0))


def set_tf32(on):
    """TF32 for torch.matmul on or off (the newer setting where it exists)."""
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "tf32" if on else "ieee"
    else:
        matmul.allow_tf32 = on


def matmul_error(y, x, w):
    """Largest |y - x w| / (|x| |w|) over sampled rows, in float64."""
    rows = torch.linspace(0, x.shape[0] - 1, min(x.shape[0], MAX_SAMPLES), device=x.device).long()
    xs, wd = x[rows].double(), w.double()
    ref, mag = (xs @ wd).cpu().numpy(), (xs.abs() @ wd.abs()).cpu().numpy()
    return max_error(y[rows].double().cpu().numpy(), ref, mag)


def bench_spmm(a, out):
    n_rows, n_cols, row_ptr, col_idx, values = load_csr(a.matrix)
    graph = os.path.basename(os.path.normpath(a.matrix))
    rows = sample_rows(row_ptr)
    mats = {}
    for fmt in a.formats.split(","):
        try:
            mats[fmt] = sparse_tensor(fmt, n_rows, n_cols, row_ptr, col_idx, values)
        except RuntimeError as e:
            print(f"torch_spmm: {fmt}: not available in this torch: {e}", file=sys.stderr)
    gen = torch.Generator(device="cuda").manual_seed(a.seed)
    print(f"{'graph':<16} {'n_rows':>9} {'nnz':>10} {'F':>5} {'format':<8} "
          f"{'median_ms':>9} {'min_ms':>9} {'max_err':>9} check")
    ok = True
    for f in (int(v) for v in a.feat.split(",")):
        x = torch.rand(n_cols, f, device="cuda", generator=gen) * 2 - 1
        ref, mag = reference(x, rows, row_ptr, col_idx, values)
        sel = torch.from_numpy(rows).cuda()
        for fmt, mat in list(mats.items()):
            try:
                y = torch.sparse.mm(mat, x)
            except RuntimeError as e:
                print(f"torch_spmm: {fmt}: not available in this torch: {e}", file=sys.stderr)
                del mats[fmt]
                continue
            err = max_error(y[sel].double().cpu().numpy(), ref, mag)
            del y
            med, lo = cuda_time(lambda: torch.sparse.mm(mat, x), a.warmup, a.reps)
            valid = err <= 1e-5
            ok &= valid
            print(f"{graph:<16.16} {n_rows:>9} {len(values):>10} {f:>5} {fmt:<8} "
                  f"{med:>9.4f} {lo:>9.4f} {err:>9.2e} {'ok' if valid else 'INVALID'}")
            out.append({"bench": "torch_spmm", "graph": graph, "n_rows": n_rows,
                        "nnz": len(values), "feat": f, "format": fmt, "median_ms": med,
                        "min_ms": lo, "max_err": err, "valid": valid, "reps": a.reps})
    return ok and len(mats) > 0


def bench_matmul(a, out):
    gen = torch.Generator(device="cuda").manual_seed(a.seed)
    print(f"\n{'MxKxN':<22} {'prec':<5} {'median_ms':>9} {'min_ms':>9} {'TFLOP/s':>8} "
          f"{'best':>8} {'max_err':>9} check")
    ok = True
    for spec in a.shapes.split(","):
        m, k, n = (int(v) for v in spec.split("x"))
        x = torch.rand(m, k, device="cuda", generator=gen) * 2 - 1
        w = torch.rand(k, n, device="cuda", generator=gen) * 2 - 1
        for prec, tol in (("fp32", 1e-5), ("tf32", 1e-3)):
            set_tf32(prec == "tf32")
            err = matmul_error(torch.matmul(x, w), x, w)
            med, lo = cuda_time(lambda: torch.matmul(x, w), a.warmup, a.reps)
            flop = 2.0 * m * k * n
            valid = err <= tol
            ok &= valid
            print(f"{spec:<22} {prec:<5} {med:>9.4f} {lo:>9.4f} {flop / med / 1e9:>8.2f} "
                  f"{flop / lo / 1e9:>8.2f} {err:>9.2e} {'ok' if valid else 'INVALID'}")
            out.append({"bench": "torch_matmul", "m": m, "k": k, "n": n, "precision": prec,
                        "median_ms": med, "min_ms": lo, "tflops": flop / med / 1e9,
                        "tflops_best": flop / lo / 1e9, "max_err": err, "tolerance": tol,
                        "valid": valid, "reps": a.reps})
    set_tf32(False)
    return ok


def side_by_side(ours_file, theirs):
    """cusparse vs torch.sparse.mm per F, gcn_matmul vs torch.matmul per shape."""
    ours = [json.loads(line) for line in open(ours_file) if line.strip()]
    spmm = {(r["graph"], r["feat"]): r for r in ours
            if r.get("bench") == "spmm" and r.get("kernel") == "cusparse" and not r.get("knob")}
    mm = {(r["m"], r["k"], r["n"], r["precision"]): r for r in ours if r.get("bench") == "matmul"}
    tsp = {(r["graph"], r["feat"], r["format"]): r for r in theirs if r["bench"] == "torch_spmm"}
    print(f"\nSpMM (median ms)\n{'graph':<16} {'F':>5} {'cusparse':>9} "
          + " ".join(f"{'torch_' + f:>13}" for f in FORMATS) + f" {'torch_csr/ours':>14}")
    for (graph, f), r in sorted(spmm.items()):
        t = [tsp.get((graph, f, fmt)) for fmt in FORMATS]
        if not any(t):
            continue
        cells = " ".join(f"{x['median_ms']:>13.4f}" if x else f"{'-':>13}" for x in t)
        ratio = f"{t[0]['median_ms'] / r['median_ms']:>13.2f}x" if t[0] else f"{'-':>14}"
        print(f"{graph:<16.16} {f:>5} {r['median_ms']:>9.4f} {cells} {ratio}")
    print(f"\nDense Y = X W (TFLOP/s at the median)\n{'MxKxN':<22} {'prec':<5} "
          f"{'gcn_matmul':>10} {'torch':>8} {'ours/torch':>10}")
    for t in (r for r in theirs if r["bench"] == "torch_matmul"):
        r = mm.get((t["m"], t["k"], t["n"], t["precision"]))
        if r and r.get("tflops"):
            shape = f"{t['m']}x{t['k']}x{t['n']}"
            print(f"{shape:<22} {t['precision']:<5} {r['tflops']:>10.2f} {t['tflops']:>8.2f} "
                  f"{r['tflops'] / t['tflops']:>9.2f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("matrix", help="a folder gcnbench spmm --export-matrix wrote")
    p.add_argument("--feat", default="16,32,64,128,256")
    p.add_argument("--formats", default=",".join(FORMATS))
    p.add_argument("--shapes", default="169343x128x256,169343x256x256")
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", help="append JSON lines here")
    p.add_argument("--ours", help="gcnbench JSON lines to compare with")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_spmm: no CUDA device")
    if any(f not in FORMATS for f in a.formats.split(",")):
        sys.exit(f"torch_spmm: --formats takes {','.join(FORMATS)}")
    device = torch.cuda.get_device_name()
    print(f"torch_spmm: torch {torch.__version__}, {device}", file=sys.stderr)
    results = []
    ok = bench_spmm(a, results)
    ok &= bench_matmul(a, results)
    if a.out:
        with open(a.out, "a") as f:
            for r in results:
                f.write(json.dumps({**r, "device": device, "torch": torch.__version__}) + "\n")
    if a.ours:
        side_by_side(a.ours, results)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
