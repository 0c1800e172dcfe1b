#!/usr/bin/env python3
"""Writes torch_rows.txt: PyTorch's values for layerNorm and crossEntropy on small cases.

The tests (tests/rows_test.cpp) read the inputs from the file too, so the data is the whole
contract; this script only says where it came from. Run with any PyTorch (CPU is enough):
    python3 tests/data/make_torch_values.py > tests/data/torch_rows.txt
Values are written as hex floats, so nothing is lost in the text.
"""
import sys

import torch
from torch_text import emit, header, line

torch.manual_seed(20261202)


header()

# layerNorm: torch.nn.functional.layer_norm over the last axis (1/n variance, as the SPEC).
for name, rows, n, eps, offset in [("small", 2, 5, 1e-5, 0.0), ("lanes", 3, 16, 1e-5, 0.0),
                                   ("odd", 2, 33, 1e-6, 0.0), ("offset", 2, 40, 1e-5, 100.0),
                                   ("wide", 1, 300, 1e-5, -3.0), ("tiny_eps", 2, 7, 0.0, 0.0)]:
    x = (torch.randn(rows, n) * 2.0 + offset).float()
    w = torch.randn(n).float()
    b = torch.randn(n).float()
    y = torch.nn.functional.layer_norm(x, (n,), w, b, eps)
    emit(f"case layerNorm {name} {rows} {n}", line("eps", torch.tensor([eps], dtype=torch.float64)),
         line("x", x), line("weight", w), line("bias", b), line("y", y))

# crossEntropy: torch.nn.functional.cross_entropy with integer targets.
for name, rows, classes, scale in [("small", 4, 10, 1.0), ("one_class", 3, 1, 1.0), ("wide", 2, 1000, 1.0),
                                    ("large_logits", 3, 17, 30.0), ("masked", 2, 8, 1.0)]:
    logits = (torch.randn(rows, classes) * scale).float()
    labels = torch.randint(0, classes, (rows,))
    if name == "masked":  # a -inf logit away from the label, as a causal mask makes
        for r in range(rows):
            logits[r, (labels[r] + 1) % classes] = float("-inf")
    logits.requires_grad_(True)
    per_row = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
    mean = torch.nn.functional.cross_entropy(logits, labels)
    grad, = torch.autograd.grad(per_row.sum(), logits)
    emit(f"case crossEntropy {name} {rows} {classes}", line("logits", logits),
         line("labels", labels.to(torch.float64)), line("rows", per_row), line("mean", mean.reshape(1)),
         line("grad", grad))
