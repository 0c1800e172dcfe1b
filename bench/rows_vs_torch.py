#!/usr/bin/env python3
"""gizml's row ops beside PyTorch's on the same shapes and threads, in one run.

Runs build/bench/gizml_bench for the row ops (layerNorm, layerNormGrad, crossEntropy rows and
gradient, 2-d max pooling and its gradient, argmax; the diffusion norms, the Hadamard rotation and
the 8-bit rows) and the plain copies beside them, then times
PyTorch's kernels for the same work on the same shapes with the same thread count (allocations
reused where PyTorch allows an out=, as a trained model's step would), and prints each op's time,
PyTorch's, the ratio, and gizml's bytes/s as a share of the copy measured in the same run.

Needs torch and numpy (bench/train_vs_torch.sh --install makes a venv with them; CI never runs
this). Example:
    bench/.venv/bin/python3 bench/rows_vs_torch.py --bench build/bench/gizml_bench --threads 2
"""
import argparse
import json
import os
import platform
import subprocess
import tempfile
import time

# (gizml benchmark, its copy baseline, a label)
CASES = [
    ("BM_LayerNorm/4096/4096/real_time", "BM_Copy/4096/4096/real_time", "layerNorm [4096, 4096]"),
    ("BM_LayerNormGrad/4096/4096/real_time", "BM_Copy/4096/4096/real_time", "layerNormGrad [4096, 4096]"),
    ("BM_CrossEntropyRows/2048/32000/real_time", "BM_Copy/2048/32000/real_time", "crossEntropy rows [2048, 32000]"),
    ("BM_CrossEntropyGrad/2048/32000/real_time", "BM_Copy/2048/32000/real_time", "crossEntropyGrad [2048, 32000]"),
    ("BM_Pool2d/max/32/64/112/112/2/2/real_time", "BM_Copy/2048/12544/real_time", "max pool 2x2 [32, 64, 112, 112]"),
    ("BM_Pool2dGrad/max/32/64/112/112/2/2/real_time", "BM_Copy/2048/12544/real_time", "max pool grad [32, 64, 112, 112]"),
    ("BM_ArgmaxInto/64/152064/real_time", "BM_Copy/64/152064/real_time", "argmax [64, 152064]"),
    # The diffusion norms and 8-bit rows (bench/norms_bench.cpp, bench/quant_bench.cpp): 25.2 M
    # values each, beside the copy of [8192, 3072] F32.
    ("BM_PixelNorm/0/real_time", "BM_Copy/8192/3072/real_time", "pixelNorm [8, 384, 8192]"),
    ("BM_PixelNorm/1/real_time", "BM_Copy/8192/3072/real_time", "pixelNorm + SiLU"),
    ("BM_GroupNorm/0/real_time", "BM_Copy/8192/3072/real_time", "groupNorm [512, 48 x 1024] / 32"),
    ("BM_GroupNorm/1/real_time", "BM_Copy/8192/3072/real_time", "groupNorm + SiLU"),
    ("BM_ModulatedNorm/0/real_time", "BM_Copy/8192/3072/real_time", "modulatedNorm RMS [8192, 3072]"),
    ("BM_ModulatedNorm/1/real_time", "BM_Copy/8192/3072/real_time", "modulatedNorm centered"),
    ("BM_GatedNormAdd/real_time", "BM_Copy/8192/3072/real_time", "gatedNormAdd [8192, 3072]"),
    ("BM_RowNormRope/real_time", "BM_Copy/8192/3072/real_time", "rowNormRope BF16 [8192, 3072]"),
    ("BM_HadamardRows/8192/3072/real_time", "BM_Copy/8192/3072/real_time", "hadamardRows [8192, 3072]"),
    ("BM_Int8Rows/8192/3072/8/real_time", "BM_Copy/8192/3072/real_time", "int8Rows F32 [8192, 3072]"),
    ("BM_Int8RowsBF16/8192/3072/8/real_time", "BM_Copy/8192/3072/real_time", "int8Rows BF16 [8192, 3072]"),
    ("BM_ModulatedInt8Rows/8192/real_time", "BM_Copy/8192/3072/real_time", "modulatedInt8Rows [8192, 3072]"),
]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def gizml_times(bench, threads):
    names = sorted({c[0] for c in CASES} | {c[1] for c in CASES})
    pattern = "^(" + "|".join(n.replace("/real_time", "") for n in names) + ")/real_time$"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gizml.json")
        subprocess.run([bench, "--benchmark_filter=" + pattern, "--benchmark_out=" + path,
                        "--benchmark_out_format=json", "--benchmark_repetitions=5",
                        "--benchmark_report_aggregates_only=true"],
                       env=env, check=True, capture_output=True, text=True)
        with open(path) as f:
            report = json.load(f)
    times, rates = {}, {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        times[name] = b["real_time"] * scale
        rates[name] = b.get("bytes_per_second", 0.0)
    return times, rates


def median_time(fn, reps=9):
    for _ in range(2):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2]


def torch_times(threads):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(1)
    t = {}
    # layerNorm and its gradient (native kernels, as autograd runs them)
    x = torch.randn(4096, 4096, generator=g)
    w, b = torch.randn(4096, generator=g), torch.randn(4096, generator=g)
    dy = torch.randn(4096, 4096, generator=g)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [4096], w, b, 1e-5)
    t["layerNorm [4096, 4096]"] = median_time(lambda: torch.ops.aten.native_layer_norm(x, [4096], w, b, 1e-5))
    t["layerNormGrad [4096, 4096]"] = median_time(
        lambda: torch.ops.aten.native_layer_norm_backward(dy, x, [4096], mean, rstd, w, b, [True, True, True]))
    # cross entropy: per-row losses; the gradient of the summed loss (nll backward, log-softmax backward)
    logits = torch.randn(2048, 32000, generator=g)
    labels = torch.randint(0, 32000, (2048,), generator=g)
    t["crossEntropy rows [2048, 32000]"] = median_time(lambda: F.cross_entropy(logits, labels, reduction="none"))
    logp = torch.log_softmax(logits, 1)
    one = torch.ones((), dtype=torch.float32)

    def ce_grad():
        gl = torch.ops.aten.nll_loss_backward(one, logp, labels, None, 2, -100, one)
        return torch.ops.aten._log_softmax_backward_data(gl, logp, 1, torch.float32)
    t["crossEntropyGrad [2048, 32000]"] = median_time(ce_grad)
    # 2-d max pooling and its gradient
    img = torch.randn(32, 64, 112, 112, generator=g)
    y, idx = torch.ops.aten.max_pool2d_with_indices(img, [2, 2], [2, 2])
    gy = torch.randn_like(y)
    t["max pool 2x2 [32, 64, 112, 112]"] = median_time(lambda: F.max_pool2d(img, 2, 2))
    t["max pool grad [32, 64, 112, 112]"] = median_time(
        lambda: torch.ops.aten.max_pool2d_with_indices_backward(gy, img, [2, 2], [2, 2], [0, 0], [1, 1], False, idx))
    # argmax of each row
    big = torch.randn(64, 152064, generator=g)
    t["argmax [64, 152064]"] = median_time(lambda: torch.argmax(big, 1))
    del logits, logp, img, y, gy, big, x, dy
    diffusion_times(torch, F, g, t)
    return t, torch.__version__


def hadamard256(torch):
    """The SPEC's H256 = H4 (x) H4 (x) H4 (x) H4 / 16, as a matrix (what a PyTorch user multiplies by)."""
    h4 = torch.tensor([[1, 1, 1, -1], [1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, 1, 1]], dtype=torch.float32)
    h = h4
    for _ in range(3):
        h = torch.kron(h, h4)
    return h / 16


def diffusion_times(torch, F, g, t):
    """PyTorch's kernels for the work of bench/norms_bench.cpp and bench/quant_bench.cpp: the same
    shapes, outputs written into tensors made once where PyTorch takes an out= (as gizml's *Into)."""
    rows, width, mods = 8192, 3072, 4
    # pixelNorm, as StyleGAN and LTX write it: x * rsqrt(mean over channels of x^2 + eps), into out
    px = torch.randn(8, 384, 8192, generator=g)
    pout = torch.empty_like(px)

    def pixel(act):
        torch.mul(px, torch.rsqrt(px.square().mean(1, keepdim=True).add_(1e-8)), out=pout)
        if act:
            F.silu(pout, inplace=True)
    t["pixelNorm [8, 384, 8192]"] = median_time(lambda: pixel(False))
    t["pixelNorm + SiLU"] = median_time(lambda: pixel(True))
    del px, pout
    # groupNorm over [512, 48 x 1024] in 32 groups, then SiLU in place
    gx = torch.randn(1, 512, 48 * 1024, generator=g)
    gw, gb = torch.randn(512, generator=g), torch.randn(512, generator=g)
    t["groupNorm [512, 48 x 1024] / 32"] = median_time(lambda: F.group_norm(gx, 32, gw, gb, 1e-6))
    t["groupNorm + SiLU"] = median_time(lambda: F.silu(F.group_norm(gx, 32, gw, gb, 1e-6), inplace=True))
    del gx
    # AdaLN: row r takes modulation r % 4 (gizml's map), so a [2048, 4, 3072] view broadcasts it
    x = torch.randn(rows // mods, mods, width, generator=g)
    w = torch.randn(width, generator=g)
    shift, scale = torch.randn(1, mods, width, generator=g), torch.randn(1, mods, width, generator=g)
    scale1 = 1 + scale
    yout = torch.empty_like(x)
    t["modulatedNorm RMS [8192, 3072]"] = median_time(
        lambda: torch.addcmul(shift, F.rms_norm(x, [width], w, 1e-6), scale1, out=yout))
    t["modulatedNorm centered"] = median_time(
        lambda: torch.addcmul(shift, F.layer_norm(x, [width], w, None, 1e-6), scale1, out=yout))
    ybf = torch.randn(rows // mods, mods, width, generator=g).to(torch.bfloat16)
    gate = torch.randn(1, mods, width, generator=g)
    t["gatedNormAdd [8192, 3072]"] = median_time(lambda: x.addcmul_(F.rms_norm(ybf.float(), [width], w, 1e-6), gate))
    del ybf, yout

    # rowNormRope: BF16 rows normalised over the row, then each head of 128 turned by halves
    v = torch.randn(rows, width, generator=g).to(torch.bfloat16)
    cos, sin = torch.rand(rows, width // 128, 64, generator=g), torch.rand(rows, width // 128, 64, generator=g)

    def rope():
        n = F.rms_norm(v.float(), [width], w, 1e-6).view(rows, width // 128, 128)
        first, second = n[..., :64], n[..., 64:]
        out = torch.cat((first * cos - second * sin, second * cos + first * sin), -1)
        v.copy_(out.view(rows, width))
    t["rowNormRope BF16 [8192, 3072]"] = median_time(rope)
    del v, cos, sin

    # The Hadamard rotation as a product with H256, and int8 rows: per row max |y| / 127, rint, clamp
    h = hadamard256(torch)
    xr = torch.randn(rows, width, generator=g)
    hy = torch.empty(rows * width // 256, 256)
    t["hadamardRows [8192, 3072]"] = median_time(lambda: torch.matmul(xr.view(-1, 256), h, out=hy))

    def int8_rows(src):
        y = torch.matmul(src.view(-1, 256), h).view(rows, width)
        s = y.abs().amax(1, keepdim=True).div_(127).clamp_(min=1e-30)
        return torch.round(y.div_(s)).clamp_(-128, 127).to(torch.int8), s
    t["int8Rows F32 [8192, 3072]"] = median_time(lambda: int8_rows(xr))
    xb = xr.to(torch.bfloat16)
    t["int8Rows BF16 [8192, 3072]"] = median_time(lambda: int8_rows(xb.float()))
    del xb
    xm = xr.view(rows // mods, mods, width)
    t["modulatedInt8Rows [8192, 3072]"] = median_time(
        lambda: int8_rows(torch.addcmul(shift, F.rms_norm(xm, [width], w, 1e-6), scale1).to(torch.bfloat16).float()))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default="build/bench/gizml_bench", help="the gizml_bench program")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    times, rates = gizml_times(a.bench, a.threads)
    theirs, version = torch_times(a.threads)
    print(f"{cpu_model()}, {a.threads} threads; PyTorch {version}; medians")
    print(f"{'op':36} {'gizml':>10} {'PyTorch':>10} {'PyTorch/gizml':>14} {'gizml bytes/s / copy':>22}")
    for name, copy, label in CASES:
        if name not in times:
            print(f"{label:36} (not in {a.bench})")
            continue
        ours, torch_t = times[name], theirs[label]
        share = rates[name] / rates[copy] if rates.get(copy) else float("nan")
        print(f"{label:36} {ours * 1e3:8.2f} ms {torch_t * 1e3:8.2f} ms {torch_t / ours:13.2f}x {share * 100:20.0f} %")


if __name__ == "__main__":
    main()
