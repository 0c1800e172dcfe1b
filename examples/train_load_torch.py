#!/usr/bin/env python3
"""Loads gizml-train's weights into the same network in PyTorch and tests it on Fashion-MNIST's
10000 test images: the accuracy gizml-train printed for its last epoch comes out (measured: 90.87 %
both). Needs torch, numpy and safetensors (pip); not run by CI.
    python3 examples/train_load_torch.py train-out/weights.safetensors
"""
import gzip, struct, sys
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from safetensors.torch import load_file
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1); self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(3136, 128); self.fc2 = nn.Linear(128, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2); x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))
def idx(p):
    d = gzip.open(p).read(); r = d[3]; dims = struct.unpack(">" + "I" * r, d[4:4 + 4 * r])
    return np.frombuffer(d, np.uint8, offset=4 + 4 * r).reshape(dims)
m = Net(); m.load_state_dict(load_file(sys.argv[1])); m.eval()
x = torch.from_numpy(((idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0 - 0.2860) / 0.3530).astype(np.float32)).reshape(-1, 1, 28, 28)
y = torch.from_numpy(idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz").astype(np.int64))
with torch.no_grad(): acc = (m(x).argmax(1) == y).float().mean().item()
print(f"PyTorch with gizml's weights: test accuracy {100 * acc:.2f} %")
