#!/usr/bin/env python3
"""Writes torch_norms.txt: PyTorch's values for the diffusion norms and the Hadamard rotation.

The tests (tests/norms_test.cpp, tests/quant_test.cpp) read the inputs from the file too, so the
data is the whole contract; this script only says where it came from. Run with any PyTorch (CPU):
    python3 tests/data/make_torch_norms_values.py > tests/data/torch_norms.txt
Values are written as hex floats, so nothing is lost in the text.
"""
import torch
import torch.nn.functional as F
from torch_text import emit, header, line

torch.manual_seed(20261202)


header()

# pixelNorm (StyleGAN / LTX): x * rsqrt(mean over channels of x^2 + eps), eps = 1e-8; then SiLU.
for name, frames, c, pixels, act in [("small", 1, 4, 5, 0), ("silu", 2, 16, 9, 1), ("wide", 1, 64, 33, 0)]:
    x = torch.randn(frames, c, pixels).float() * 2.0
    y = x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + 1e-8)
    if act:
        y = F.silu(y)
    emit(f"case pixelNorm {name} {frames} {c} {pixels} {act}", line("x", x), line("y", y))

# groupNorm: torch.nn.functional.group_norm of one sample [1, c, ...], then SiLU when act.
for name, shape, groups, eps, act in [("small", (4, 3), 2, 1e-5, 0), ("silu", (32, 6, 5), 8, 1e-6, 1),
                                      ("one_group", (12, 17), 1, 1e-5, 0), ("offset", (16, 4, 4), 4, 1e-5, 1)]:
    x = torch.randn(*shape).float() + (3.0 if name == "offset" else 0.0)
    w = torch.randn(shape[0]).float()
    b = torch.randn(shape[0]).float()
    y = F.group_norm(x[None], groups, w, b, eps)[0]
    if act:
        y = F.silu(y)
    emit(f"case groupNorm {name} {groups} {act} " + " ".join(str(s) for s in shape),
         line("eps", torch.tensor([eps], dtype=torch.float64)), line("x", x), line("weight", w), line("bias", b),
         line("y", y))

# AdaLN: norm(x) * (1 + scale[m]) + shift[m], the norm RMS (F.rms_norm) or centered (F.layer_norm),
# each with weight w and no bias; m = map[r].
for name, rows, n, mods, centered in [("rms", 3, 16, 2, 0), ("centered", 4, 40, 3, 1), ("wide", 2, 300, 2, 0)]:
    x = torch.randn(rows, n).float() * 2.0 + 0.5
    w = torch.randn(n).float()
    shift = torch.randn(mods, n).float() * 0.1
    scale = torch.randn(mods, n).float() * 0.1
    m = torch.tensor([r % mods for r in range(rows)])
    eps = 1e-6
    normed = F.layer_norm(x, (n,), w, None, eps) if centered else F.rms_norm(x, (n,), w, eps)
    y = normed * (1 + scale[m]) + shift[m]
    emit(f"case adaLN {name} {rows} {n} {mods} {centered}", line("eps", torch.tensor([eps], dtype=torch.float64)),
         line("x", x), line("weight", w), line("shift", shift), line("scale", scale), line("map", m.double()),
         line("y", y))

# The regular Hadamard transform: x times H256 = H4 (x) H4 (x) H4 (x) H4 / 16, by the Kronecker
# definition (symmetric, so x H = (H x^T)^T), each 256 values of each row.
H4 = torch.tensor([[1, 1, 1, -1], [1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, 1, 1]], dtype=torch.float64)
H = torch.kron(torch.kron(torch.kron(H4, H4), H4), H4) / 16
for name, rows, n in [("one_block", 2, 256), ("blocks", 3, 768)]:
    x = torch.randn(rows, n).float()
    y = (x.double().reshape(rows, n // 256, 256) @ H).reshape(rows, n)
    emit(f"case hadamard {name} {rows} {n}", line("x", x), line("y", y))
