#!/usr/bin/env python3
"""gizml-train beside PyTorch: the same network, batch, optimizer and number of steps on
Fashion-MNIST, on the same CPU threads, in one run; prints each one's time per step and per
epoch (60000 images) and the ratio.

    conv 3x3 (1 -> 32) + ReLU -> max pool 2 -> conv 3x3 (32 -> 64) + ReLU -> max pool 2
    -> Linear (3136 -> 128) + ReLU -> Dropout 0.25 -> Linear (128 -> 10), cross entropy, AdamW

usage:
    python3 bench/train_vs_torch.py --gizml build/gizml-train [--steps 469] [--batch 128] [--threads 2]
    bash bench/train_vs_torch.sh            # the same, from a venv with torch (made when asked: --install)

Needs torch and numpy (never installed by CI); the data is Debian's dataset-fashion-mnist.
Both sides time their training steps only (no data loading from disk, no test evaluation).
"""
import argparse
import gzip
import os
import re
import struct
import subprocess
import sys
import time


def read_idx(path):
    import numpy as np
    data = gzip.open(path).read()
    rank = data[3]
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def run_gizml(binary, steps, batch, threads, data):
    cmd = [binary, "--steps", str(steps), "--batch", str(batch), "--threads", str(threads), "--epochs", "1000",
           "--test-limit", "500", "--data", data, "--out", "/tmp/gizml-train-bench"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    print(out.strip())
    m = re.search(r"epoch 1: (\d+) steps, .*?, ([0-9.]+) s \(", out)
    if not m:
        sys.exit("train_vs_torch: cannot read gizml-train's epoch time from its output")
    return float(m.group(2)), int(m.group(1))


def run_torch(steps, batch, threads, data):
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    images = read_idx(f"{data}/train-images-idx3-ubyte.gz").astype(np.float32)
    labels = torch.from_numpy(read_idx(f"{data}/train-labels-idx1-ubyte.gz").astype(np.int64))
    x_all = torch.from_numpy(((images / 255.0 - 0.2860) / 0.3530).astype(np.float32)).reshape(-1, 1, 28, 28)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
            self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
            self.fc1 = nn.Linear(64 * 7 * 7, 128)
            self.fc2 = nn.Linear(128, 10)
            self.drop = nn.Dropout(0.25)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return self.fc2(self.drop(F.relu(self.fc1(x.flatten(1)))))

    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    per_epoch = (x_all.shape[0] + batch - 1) // batch
    done, seconds, losses = 0, 0.0, []
    while done < steps:
        order = torch.randperm(x_all.shape[0])
        for s in range(min(per_epoch, steps - done)):
            idx = order[s * batch:(s + 1) * batch]
            x, y = x_all[idx], labels[idx]
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            seconds += time.perf_counter() - t0
            losses.append(loss.item())
            done += 1
    print(f"torch {torch.__version__}: {steps} steps, mean loss of the last 50 {sum(losses[-50:]) / len(losses[-50:]):.4f}, "
          f"{seconds:.1f} s")
    return seconds, steps


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gizml", default="build/gizml-train", help="the gizml-train program")
    p.add_argument("--steps", type=int, default=469, help="training steps (469 of 128: one epoch)")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    if not os.path.exists(f"{a.data}/train-images-idx3-ubyte.gz"):
        sys.exit(f"train_vs_torch: no Fashion-MNIST in {a.data} (apt-get install dataset-fashion-mnist)")
    g_seconds, g_steps = run_gizml(a.gizml, a.steps, a.batch, a.threads, a.data)
    t_seconds, t_steps = run_torch(a.steps, a.batch, a.threads, a.data)
    per_epoch = (60000 + a.batch - 1) // a.batch
    g_epoch, t_epoch = g_seconds / g_steps * per_epoch, t_seconds / t_steps * per_epoch
    print(f"\n{a.steps} steps of {a.batch} images on {a.threads} threads ({os.cpu_count()} CPUs here):")
    print(f"  gizml  {1000 * g_seconds / g_steps:8.1f} ms a step   {g_epoch:7.1f} s an epoch")
    print(f"  torch  {1000 * t_seconds / t_steps:8.1f} ms a step   {t_epoch:7.1f} s an epoch")
    print(f"  gizml / torch: {g_epoch / t_epoch:.2f}x the time (exact ops, same bits on every machine)")


if __name__ == "__main__":
    main()
