#!/usr/bin/env python3
"""Writes torch_grad.txt: PyTorch's autograd values for the backward ops of gizml/netops/grad.hpp
and the products of gizml/lazy.hpp (lazyMatmulNN, lazyMatmulTN, lazyConvBatch), on small cases:
conv2d (batched, strided, padded) and its three gradients, linear and its three, relu and its
gradient, three steps of torch.optim.AdamW, and a small CNN's loss and parameter gradients.

The tests (tests/grad_test.cpp) read the inputs from the file too, so the data is the whole
contract; this script only says where it came from. Run with any PyTorch (CPU is enough):
    python3 tests/data/make_torch_grad_values.py > tests/data/torch_grad.txt
Values are written as hex floats. gizml's layouts: a convolution's weight is [o, c kh kw] (conv2d's
[o, c, kh, kw] flattened) and its output [n, o, oh ow].
"""
import torch
import torch.nn.functional as F
from torch_text import emit, header, line

torch.manual_seed(20261203)
header()

# conv2d: ints n c h w o kh kw stride pad.
for name, n, c, h, w, o, kh, kw, stride, pad in [
        ("plain", 2, 3, 5, 6, 4, 3, 3, 1, 1), ("stride2", 3, 2, 7, 6, 3, 3, 3, 2, 1),
        ("no_pad_rect", 2, 2, 6, 5, 5, 2, 3, 1, 0), ("stride3_pad2", 1, 3, 8, 9, 2, 3, 3, 3, 2),
        ("one_by_one", 2, 4, 3, 3, 3, 1, 1, 1, 0)]:
    x = torch.randn(n, c, h, w, requires_grad=True)
    wt = torch.randn(o, c, kh, kw, requires_grad=True)
    b = torch.randn(o, requires_grad=True)
    y = F.conv2d(x, wt, b, stride=stride, padding=pad)
    dy = torch.randn_like(y)
    dx, dw, db = torch.autograd.grad(y, (x, wt, b), dy)
    emit(f"case conv2d {name} {n} {c} {h} {w} {o} {kh} {kw} {stride} {pad}", line("x", x), line("w", wt),
         line("b", b), line("y", y), line("dy", dy), line("dx", dx), line("dw", dw), line("db", db))

# linear: ints rows in out.
for name, rows, fin, fout in [("small", 4, 5, 3), ("batch", 16, 33, 10), ("wide", 3, 100, 17)]:
    x = torch.randn(rows, fin, requires_grad=True)
    wt = torch.randn(fout, fin, requires_grad=True)
    b = torch.randn(fout, requires_grad=True)
    y = F.linear(x, wt, b)
    dy = torch.randn_like(y)
    dx, dw, db = torch.autograd.grad(y, (x, wt, b), dy)
    emit(f"case linear {name} {rows} {fin} {fout}", line("x", x), line("w", wt), line("b", b), line("y", y),
         line("dy", dy), line("dx", dx), line("dw", dw), line("db", db))

# relu: ints count.
x = torch.randn(40, requires_grad=True)
with torch.no_grad():
    x[3] = 0.0
    x[5] = -0.0
y = F.relu(x)
dy = torch.randn_like(y)
dx, = torch.autograd.grad(y, x, dy)
emit("case relu mixed 40", line("x", x), line("y", y), line("dy", dy), line("dx", dx))

# AdamW, three steps of torch.optim.AdamW (foreach=False: the single-tensor loop): ints count steps.
# The config (lr 1e-2, betas 0.9 0.999, eps 1e-8, weight_decay 0.1) is fixed here and in the test.
p = torch.randn(50)
grads = [torch.randn(50) for _ in range(3)]
param = torch.nn.Parameter(p.clone())
opt = torch.optim.AdamW([param], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1, foreach=False)
for g in grads:
    param.grad = g.clone()
    opt.step()
emit("case adamW three_steps 50 3", line("p", p), line("g1", grads[0]), line("g2", grads[1]), line("g3", grads[2]),
     line("out", param.detach()))

# A small CNN: conv 3x3 pad 1 (1 -> 3) -> relu -> max pool 2 -> linear (3*4*4 -> 5) -> cross
# entropy (mean); the loss and every parameter's gradient. ints n labels...
n = 4
x = torch.randn(n, 1, 8, 8)
labels = torch.tensor([0, 3, 4, 1])
w1 = torch.randn(3, 1, 3, 3, requires_grad=True)
b1 = torch.randn(3, requires_grad=True)
w2 = (0.3 * torch.randn(5, 48)).requires_grad_()
b2 = torch.randn(5, requires_grad=True)
h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
logits = F.linear(h.flatten(1), w2, b2)
loss = F.cross_entropy(logits, labels)
gw1, gb1, gw2, gb2 = torch.autograd.grad(loss, (w1, b1, w2, b2))
emit(f"case cnn small {n} " + " ".join(str(int(v)) for v in labels), line("x", x), line("w1", w1), line("b1", b1),
     line("w2", w2), line("b2", b2), line("loss", loss.reshape(1)), line("dw1", gw1), line("db1", gb1),
     line("dw2", gw2), line("db2", gb2))
