#!/usr/bin/env python3
"""gizml's row ops beside PyTorch's on the same shapes and threads, in one run.

Runs build/bench/gizml_bench for the row ops (layerNorm, layerNormGrad, crossEntropy rows and
gradient, 2-d max pooling and its gradient, argmax) and the plain copies beside them, then times
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
    return t, torch.__version__


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
