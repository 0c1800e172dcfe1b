#!/usr/bin/env python3
"""Writes torch_conv.txt: PyTorch's values for conv1d, convTranspose1d, pool2d (max and average),
their gradients, and im2col (torch.nn.functional.unfold) on small cases.

The tests (tests/conv_test.cpp, tests/pool_test.cpp) read the inputs from the file too, so the data
is the whole contract; this script only says where it came from. Run with any PyTorch (CPU is enough):
    python3 tests/data/make_torch_conv_values.py > tests/data/torch_conv.txt
Values are written as hex floats, so nothing is lost in the text. gizml's layouts differ from
PyTorch's: conv1d takes x [t, c] (PyTorch's input [1, c, t] transposed) and gives [ot, o]; im2col
gives [n oh ow, c kh kw] (unfold's [n, c kh kw, L] transposed).
"""
import torch
import torch.nn.functional as F
from torch_text import emit, header, line

torch.manual_seed(20261203)


header()

# conv1d: ints t c o k stride pad dilation has_bias.
for name, t, c, o, k, stride, pad, dil, has_bias in [
        ("plain", 9, 3, 4, 3, 1, 0, 1, True), ("no_bias", 8, 2, 5, 2, 1, 0, 1, False),
        ("stride2_pad1", 11, 4, 3, 3, 2, 1, 1, True), ("dilation2_pad2", 10, 3, 2, 3, 1, 2, 2, True),
        ("dilation3_stride2", 16, 2, 3, 2, 2, 1, 3, False), ("stride_gt_k", 13, 5, 17, 2, 3, 0, 1, True),
        ("k_is_padded_t", 4, 3, 2, 6, 1, 1, 1, True), ("wide_channels", 12, 20, 18, 5, 1, 2, 1, True)]:
    x = torch.randn(t, c)
    w = torch.randn(o, c, k)
    b = torch.randn(o) if has_bias else None
    y = F.conv1d(x.t().unsqueeze(0), w, b, stride=stride, padding=pad, dilation=dil)[0].t()
    emit(f"case conv1d {name} {t} {c} {o} {k} {stride} {pad} {dil} {int(has_bias)}", line("x", x), line("w", w))
    if has_bias:
        emit(line("bias", b))
    emit(line("y", y))

# conv_transpose1d: ints n c o k stride pad has_bias.
for name, n, c, o, k, stride, pad, has_bias in [
        ("plain", 5, 3, 4, 3, 1, 0, True), ("no_bias", 4, 2, 3, 2, 1, 0, False),
        ("stride2", 6, 3, 2, 4, 2, 1, True), ("stride3_pad2", 5, 4, 3, 5, 3, 2, True),
        ("stride_gt_k", 4, 2, 17, 2, 3, 0, True), ("one_row", 1, 3, 2, 3, 2, 1, False)]:
    x = torch.randn(n, c)
    w = torch.randn(c, o, k)
    b = torch.randn(o) if has_bias else None
    y = F.conv_transpose1d(x.t().unsqueeze(0), w, b, stride=stride, padding=pad)[0].t()
    emit(f"case convTranspose1d {name} {n} {c} {o} {k} {stride} {pad} {int(has_bias)}", line("x", x), line("w", w))
    if has_bias:
        emit(line("bias", b))
    emit(line("y", y))

# pool2d and its gradient (autograd): ints n c h w size stride average. No NaN here: PyTorch's
# max_pool2d lets a NaN win, gizml's never does.
for name, n, c, h, w, size, stride in [
        ("two_by_two", 2, 3, 6, 8, 2, 2), ("overlap", 1, 2, 7, 7, 3, 1), ("stride_gt_size", 2, 2, 9, 10, 2, 3),
        ("odd_overlap", 1, 3, 9, 8, 3, 2), ("whole_image", 2, 1, 5, 5, 5, 1)]:
    for average in (False, True):
        x = torch.randn(n, c, h, w, requires_grad=True)
        y = (F.avg_pool2d if average else F.max_pool2d)(x, size, stride)
        dy = torch.randn_like(y)
        dx, = torch.autograd.grad(y, x, dy)
        op = "avg" if average else "max"
        emit(f"case pool2d {op}_{name} {n} {c} {h} {w} {size} {stride} {int(average)}", line("x", x), line("y", y),
             line("dy", dy), line("dx", dx))

# im2col = unfold, transposed to [n L, c kh kw]: ints n c h w kh kw stride pad.
for name, n, c, h, w, kh, kw, stride, pad in [
        ("plain", 2, 3, 5, 6, 3, 3, 1, 0), ("pad1", 1, 2, 4, 5, 3, 2, 1, 1), ("stride2_pad2", 2, 2, 7, 6, 3, 3, 2, 2),
        ("stride_gt_k", 1, 3, 8, 9, 2, 2, 3, 0), ("kernel_is_padded", 1, 2, 3, 4, 5, 6, 1, 1)]:
    x = torch.randn(n, c, h, w)
    cols = F.unfold(x, (kh, kw), padding=pad, stride=stride).transpose(1, 2).reshape(-1, c * kh * kw)
    emit(f"case im2col {name} {n} {c} {h} {w} {kh} {kw} {stride} {pad}", line("x", x), line("cols", cols))
