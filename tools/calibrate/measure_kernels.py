#!/usr/bin/env python3
"""Time the kernels fabricsim's LLM generator emits, on a real GPU, for the compute model.

Writes one CSV row per kernel (docs/calibration.md gives the columns): the GEMMs of a
transformer layer (forward, and the two backward GEMMs, in nn.Linear's layouts) for Llama 3
8B / 70B / 405B at several tensor-parallel widths, fused causal attention forward and backward
(PyTorch SDPA), element-wise kernels, a square-GEMM sweep and a device-to-device copy.

Timing: triton.testing.do_bench (CUDA events, L2 flushed before each run, median of the
repeats), BF16 operands drawn at random (never zeros). Usage:

    python3 measure_kernels.py OUT.csv
"""

import csv
import sys

import torch
import torch.nn.functional as F
import triton.testing

DEV = "cuda"
BF16 = torch.bfloat16

# name, d_model, ffn, heads, kv_heads
MODELS = [
    ("llama3-8b", 4096, 14336, 32, 8),
    ("llama3-70b", 8192, 28672, 64, 8),
    ("llama3-405b", 16384, 53248, 128, 8),
]
TPS = {"llama3-8b": [1, 2, 4, 8], "llama3-70b": [2, 4, 8], "llama3-405b": [4, 8]}
TOKENS = 8192


def median_us(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def rand(*shape):
    return torch.randn(*shape, device=DEV, dtype=BF16)


def gemm_rows(model, tp, tokens, what, m, n, k):
    """Y[m,n] = X[m,k] @ W[n,k]^T and its two backward GEMMs."""
    x, w, dy = rand(m, k), rand(n, k), rand(m, n)
    rows = []
    for kernel, fn, shape in [
        ("fwd", lambda: x @ w.t(), (m, n, k)),
        ("dgrad", lambda: dy @ w, (m, k, n)),
        ("wgrad", lambda: dy.t() @ x, (n, k, m)),
    ]:
        us = median_us(fn)
        gm, gn, gk = shape
        rows.append(
            dict(
                family="gemm", model=model, tp=tp, tokens=tokens, op=what, kernel=kernel,
                m=gm, n=gn, k=gk, flops=2 * gm * gn * gk,
                bytes=2 * (gm * gk + gk * gn + gm * gn), us=round(us, 3),
            )
        )
    del x, w, dy
    return rows


def layer_gemms(model, d, ffn, h, kv, tp, tokens):
    hd = d // h
    rows = []
    rows += gemm_rows(model, tp, tokens, "qkv", tokens, (h + 2 * kv) * hd // tp, d)
    rows += gemm_rows(model, tp, tokens, "out-proj", tokens, d, h * hd // tp)
    rows += gemm_rows(model, tp, tokens, "mlp-up", tokens, 2 * ffn // tp, d)
    rows += gemm_rows(model, tp, tokens, "mlp-down", tokens, d, ffn // tp)
    return rows


def attention_rows(model, d, h, kv, tp, seq, backend):
    hd = d // h
    heads = h // tp
    kvh = max(kv // tp, 1)
    q = rand(1, heads, seq, hd).requires_grad_()
    k = rand(1, kvh, seq, hd).requires_grad_()
    v = rand(1, kvh, seq, hd).requires_grad_()
    # Expand K/V to every query head outside the timed region (GQA costs the same FLOPs).
    ke = k.detach().repeat_interleave(heads // kvh, dim=1).requires_grad_()
    ve = v.detach().repeat_interleave(heads // kvh, dim=1).requires_grad_()
    with torch.nn.attention.sdpa_kernel([backend]):
        fwd = lambda: F.scaled_dot_product_attention(q, ke, ve, is_causal=True)
        out = fwd()
        g = rand(*out.shape)
        fwd_us = median_us(fwd)

        def fwd_bwd():
            o = F.scaled_dot_product_attention(q, ke, ve, is_causal=True)
            torch.autograd.grad(o, (q, ke, ve), g)

        both_us = median_us(fwd_bwd)
    # Executed FLOPs of causal attention: half the dense QK^T and PV (2 FLOPs a multiply-add);
    # the backward does twice the forward's.
    causal = 2 * seq * seq * hd * heads
    io = 2 * (4 * seq * hd * heads)  # q, k, v, o in BF16
    # m = query tokens, n = key tokens, k = heads (of head_dim 128)
    base = dict(family="attention", model=model, tp=tp, tokens=seq, m=seq, n=seq, k=heads)
    return [
        dict(base, op=f"attention-{backend.name.lower()}", kernel="fwd", flops=causal,
             bytes=io, us=round(fwd_us, 3)),
        dict(base, op=f"attention-{backend.name.lower()}", kernel="bwd", flops=2 * causal,
             bytes=2 * io, us=round(both_us - fwd_us, 3)),
    ]


def elementwise_rows(d, tokens):
    x, r, w = rand(tokens, d), rand(tokens, d), rand(d)
    a, b = rand(tokens, 4 * d), rand(tokens, 4 * d)
    n = tokens * d * 2
    cases = [
        ("residual-add", lambda: x + r, 3 * n),
        ("rms-norm", lambda: F.rms_norm(x, (d,), w), 2 * n),
        ("swiglu", lambda: F.silu(a) * b, 3 * 4 * n),
    ]
    rows = []
    for what, fn, nbytes in cases:
        rows.append(
            dict(family="elementwise", model="", tp=1, tokens=tokens, op=what, kernel="fwd",
                 m=tokens, n=d, k=0, flops=0, bytes=nbytes, us=round(median_us(fn), 3))
        )
    return rows


def copy_row():
    src = rand(1 << 30)  # 2 GiB
    dst = torch.empty_like(src)
    us = median_us(lambda: dst.copy_(src))
    nbytes = 2 * src.numel() * 2
    return dict(family="copy", model="", tp=1, tokens=0, op="device-copy", kernel="fwd",
                m=0, n=0, k=0, flops=0, bytes=nbytes, us=round(us, 3))


def square_rows():
    rows = []
    for s in [256, 512, 1024, 2048, 4096, 8192, 16384]:
        x, w = rand(s, s), rand(s, s)
        us = median_us(lambda: x @ w.t())
        rows.append(
            dict(family="gemm", model="square", tp=1, tokens=s, op="square", kernel="fwd",
                 m=s, n=s, k=s, flops=2 * s**3, bytes=6 * s * s, us=round(us, 3))
        )
    return rows


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}",
          file=sys.stderr)
    rows = [copy_row()]
    rows += square_rows()
    for model, d, ffn, h, kv in MODELS:
        for tp in TPS[model]:
            rows += layer_gemms(model, d, ffn, h, kv, tp, TOKENS)
        print(f"# gemms {model} done", file=sys.stderr)
    for tokens in [1024, 2048, 4096, 16384]:
        rows += layer_gemms("llama3-8b", 4096, 14336, 32, 8, 8, tokens)
    backends = [torch.nn.attention.SDPBackend.FLASH_ATTENTION,
                torch.nn.attention.SDPBackend.CUDNN_ATTENTION]
    for model, d, ffn, h, kv in MODELS:
        for tp in TPS[model]:
            for seq in [4096, 8192]:
                for backend in backends:
                    try:
                        rows += attention_rows(model, d, h, kv, tp, seq, backend)
                    except RuntimeError as e:
                        print(f"# {backend} {model} tp{tp}: {e}", file=sys.stderr)
    print("# attention done", file=sys.stderr)
    for d in [4096, 8192, 16384]:
        rows += elementwise_rows(d, TOKENS)
    fields = ["family", "model", "tp", "tokens", "op", "kernel", "m", "n", "k", "flops",
              "bytes", "us"]
    with open(out, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields)
        wr.writeheader()
        for r in rows:
            wr.writerow(r)
    for r in rows:
        secs = r["us"] * 1e-6
        tf = r["flops"] / secs * 1e-12 if r["flops"] else 0.0
        gbs = r["bytes"] / secs * 1e-9
        print(f"{r['family']:11} {r['model']:11} tp{r['tp']} {r['op']:22} {r['kernel']:5} "
              f"{r['m']:>6}x{r['n']:>6}x{r['k']:>6} {r['us']:>10.1f} us {tf:7.1f} TF/s "
              f"{gbs:7.0f} GB/s")


if __name__ == "__main__":
    main()
