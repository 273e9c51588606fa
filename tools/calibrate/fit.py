#!/usr/bin/env python3
"""Fit the compute model's efficiencies to kernels measured by measure_kernels.py.

Pure Python (no numpy): a grid search minimising the root-mean-square of log(model/measured)
for each kernel family, with the model of crates/workload/src/compute.rs:

    GEMM       t = flops / (peak * e_gemm * q(m,128) q(n,128) q(k,64) * T/(T + T0)) + launch
               T = ceil(m/128) * ceil(n/128) output tiles
    attention  t = flops / (peak * e * B/(B + B0)) + launch,  B = heads * ceil(q/128) blocks
               (forward and backward fitted apart; cuDNN's fused kernel)
    memory     e_mem = median of bytes / (t * hbm) over the copy and the residual add

Usage: python3 fit.py MEASURED.csv PEAK_FLOPS HBM_BYTES_PER_S
"""

import csv
import math
import statistics
import sys


def q(d, t):
    return d / (t * math.ceil(d / t)) if d else 1.0


def gemm_time(r, peak, e, t0, launch):
    m, n, k = r["m"], r["n"], r["k"]
    tiles = math.ceil(m / 128) * math.ceil(n / 128)
    eff = e * q(m, 128) * q(n, 128) * q(k, 64) * tiles / (tiles + t0)
    return r["flops"] / (peak * eff) + launch


def attention_time(r, peak, e, b0, launch):
    blocks = r["k"] * math.ceil(r["m"] / 128)
    return r["flops"] / (peak * e * blocks / (blocks + b0)) + launch


def rms_log(rows, f):
    return math.sqrt(sum(math.log(f(r) / r["s"]) ** 2 for r in rows) / len(rows))


def grid(lo, hi, n):
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def best(rows, f, es, xs, ls):
    return min(((rms_log(rows, lambda r: f(r, e, x, l)), e, x, l)
                for e in es for x in xs for l in ls))


def main():
    path, peak, hbm = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    rows = []
    for r in csv.DictReader(open(path)):
        for c in ("m", "n", "k", "flops", "bytes"):
            r[c] = int(r[c])
        r["s"] = float(r["us"]) * 1e-6
        rows.append(r)

    gemms = [r for r in rows if r["family"] == "gemm"]
    err, e, t0, launch = best(gemms, lambda r, e, x, l: gemm_time(r, peak, e, x, l),
                              grid(0.60, 0.80, 41), grid(0, 100, 51), grid(0, 8e-6, 17))
    print(f"gemm: e_gemm={e:.3f} tiles0={t0:.0f} launch={launch * 1e6:.1f}us "
          f"rms_log={err:.3f} over {len(gemms)}")
    for kernel in ("fwd", "bwd"):
        att = [r for r in rows if r["family"] == "attention" and "cudnn" in r["op"]
               and r["kernel"] == kernel]
        err, ea, b0, _ = best(att, lambda r, e, x, l: attention_time(r, peak, e, x, l),
                              grid(0.30, 0.70, 81), grid(0, 400, 81), [launch])
        print(f"attention {kernel}: e={ea:.3f} blocks0={b0:.0f} rms_log={err:.3f} "
              f"over {len(att)}")
    mem = [r["bytes"] / (r["s"] * hbm) for r in rows
           if r["op"] in ("device-copy", "residual-add")]
    print(f"memory: e_mem={statistics.median(mem):.3f} over {len(mem)}")


if __name__ == "__main__":
    main()
