"""gizml's ops as PyTorch autograd functions and layers.

Each ``torch.autograd.Function`` here runs gizml's exact op forward and backward on the tensors'
memory (zero copy through DLPack; on the host, or on a CUDA GPU when gizml was built with CUDA),
so a model computes the same bits on any CPU, thread count, batch split and GPU:

=====================  ======================================================================
function               forward / backward
=====================  ======================================================================
``layer_norm``         ``netops.layerNorm`` / ``netops.layerNormGrad``
``cross_entropy``      ``netops.crossEntropyLoss`` / ``netops.crossEntropyGrad``
``linear``             ``netops.affine`` / products composed from ``lazyMatmul`` (below)
``conv2d``             ``lazyConv`` (stride 1) or ``im2col`` + ``lazyMatmul`` / ``col2im`` and
                       products composed from ``lazyMatmul`` (below)
``max_pool2d``,        ``netops.pool2d`` / ``netops.pool2dGrad``
``avg_pool2d``
``dropout``            ``Tensor.dropout(key, p)`` / the same mask: ``dy.dropout(key, p)``
=====================  ======================================================================

Inference ops (forward only: a backward through them raises gizml.Error): ``group_norm``
(``netops.groupNorm``, SiLU optional), ``pixel_norm`` (``netops.pixelNorm``),
``modulated_norm`` (AdaLN, ``netops.modulatedNorm``), ``gated_norm_add_`` (in place,
``netops.gatedNormAddInto``), ``hadamard_rows``, ``int8_rows``, ``int8_linear`` (a W8A8 / W4A8
layer: ``netops.int8RowsProduct``), ``modulated_int8_rows`` (AdaLN then int8_rows in one pass),
``int8_rows_product`` (of codes already made), ``row_norm_rope_`` (QK norm and rotary embedding, in
place), and the layer ``Int8Linear``.

Composed backward products. gizml's product is ``lazyMatmul(a [m, k], w [n, k])`` = a wᵀ, each
element one fma chain over k from +0. The gradients it has no op for yet are that product on
transposed copies (a transpose is a copy of bits, made by PyTorch; a transposed product in C++
is coming from another branch):

* ``dx = lazyMatmul(dy, wᵀ)``; ``dw = lazyMatmul(dyᵀ, xᵀ)`` (the chain over rows in row order);
* ``db = lazyMatmul(ones [1, rows], dyᵀ)``: fma(1, v, acc) is acc + v rounded once, so db adds
  the rows' dy in row order from +0, as ``layerNormGrad``'s dbias does.

For a convolution the rows are the patches, ``im2col(x)`` ([n oh ow, c kh kw], rows in (image,
oy, ox) order), and ``dx = col2im(dcols)``.

Inputs are float32 (gizml's exact dtype; another dtype is ``gizml.Error``). A non-contiguous
input is copied with ``.contiguous()`` first (documented copy); everything else is zero copy.

``nn.Module`` s: ``Linear``, ``LayerNorm``, ``Conv2d``, ``MaxPool2d``, ``AvgPool2d``,
``Dropout``, ``CrossEntropyLoss`` and (inference only) ``GroupNorm`` are subclasses of PyTorch's
(the same parameters, state dict and constructor) whose forward runs gizml;
``from_torch_module(model)`` swaps a model's layers for them (``GroupNorm`` with
``inference=True``).
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn

import gizml
from gizml import netops

__all__ = [
    "LayerNormFunction", "CrossEntropyFunction", "LinearFunction", "Conv2dFunction", "Pool2dFunction",
    "DropoutFunction", "layer_norm", "cross_entropy", "linear", "conv2d", "max_pool2d", "avg_pool2d",
    "dropout", "Linear", "LayerNorm", "Conv2d", "MaxPool2d", "AvgPool2d", "Dropout", "CrossEntropyLoss",
    "from_torch_module", "to_gizml", "to_torch", "InferenceFunction", "group_norm", "pixel_norm",
    "modulated_norm", "gated_norm_add_", "hadamard_rows", "int8_rows", "int8_linear", "modulated_int8_rows",
    "int8_rows_product", "row_norm_rope_", "GroupNorm", "Int8Linear",
]


def to_gizml(t: torch.Tensor) -> gizml.Tensor:
    """A gizml.Tensor over ``t``'s memory (``t.contiguous()``'s when ``t`` is strided)."""
    return gizml.from_dlpack(t.detach().contiguous())


def to_torch(t: gizml.Tensor) -> torch.Tensor:
    """A torch.Tensor over ``t``'s memory (no copy)."""
    return torch.from_dlpack(t)


def _transposed(t: torch.Tensor) -> gizml.Tensor:
    """tᵀ of a 2-d tensor as a gizml tensor: a copy of the bits, transposed (by PyTorch)."""
    return to_gizml(t.t().contiguous())


def _column_sums(dy_t: gizml.Tensor, rows: int, device: torch.device) -> torch.Tensor:
    """The sum over rows of dy [rows, n], given dyᵀ [n, rows]: ones [1, rows] times dyᵀᵀ, each
    column's values added in row order from +0 (fma(1, v, acc) = acc + v, rounded once)."""
    ones = to_gizml(torch.ones(1, rows, dtype=torch.float32, device=device))
    return to_torch(gizml.lazyMatmul(ones, dy_t).store()).reshape(-1)


# ---- layer norm --------------------------------------------------------------------------------

class LayerNormFunction(torch.autograd.Function):
    """y = layerNorm(x, weight, bias, eps) over the last axis; backward by layerNormGrad."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        n = x.shape[-1]
        w = weight if weight is not None else torch.ones(n, dtype=x.dtype, device=x.device)
        b = bias if bias is not None else torch.zeros(n, dtype=x.dtype, device=x.device)
        gx, gw = to_gizml(x), to_gizml(w)
        y, mean, rstd = netops.layerNorm(gx, gw, to_gizml(b), eps)
        ctx.save_for_backward(to_torch(gx), to_torch(gw), to_torch(mean), to_torch(rstd))
        ctx.has_weight, ctx.has_bias = weight is not None, bias is not None
        return to_torch(y)

    @staticmethod
    def backward(ctx, dy):
        x, w, mean, rstd = ctx.saved_tensors
        dx, dweight, dbias = netops.layerNormGrad(to_gizml(dy), to_gizml(x), to_gizml(w), to_gizml(mean),
                                                  to_gizml(rstd))
        return (to_torch(dx), to_torch(dweight) if ctx.has_weight else None,
                to_torch(dbias) if ctx.has_bias else None, None)


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    return LayerNormFunction.apply(x, weight, bias, eps)


# ---- cross entropy -------------------------------------------------------------------------------

class CrossEntropyFunction(torch.autograd.Function):
    """The softmax cross-entropy of logits [rows, classes] against labels [rows] (int):
    crossEntropyLoss (the rows' losses added in f64 in row order, over rows) for "mean", times
    rows for "sum", rounded once to float32; backward crossEntropyGrad(logits, labels, dloss / rows)
    ("mean") or (logits, labels, dloss) ("sum")."""

    @staticmethod
    def forward(ctx, logits, labels, reduction):
        if reduction not in ("mean", "sum"):
            raise gizml.Error(f"gizml.torch.cross_entropy: reduction: expected 'mean' or 'sum', got {reduction!r}")
        labels = labels.tolist() if isinstance(labels, torch.Tensor) else list(labels)
        gl = to_gizml(logits)
        rows = logits.shape[0] if logits.dim() > 0 else 0
        mean = netops.crossEntropyLoss(gl, labels)  # the rows' losses added in f64 in row order, / rows
        loss = mean if reduction == "mean" else mean * rows  # (f64, then rounded once to float32)
        ctx.save_for_backward(to_torch(gl))
        ctx.labels, ctx.scale = labels, (1.0 / rows if reduction == "mean" else 1.0)
        return torch.tensor(loss, dtype=logits.dtype, device=logits.device)

    @staticmethod
    def backward(ctx, dloss):
        (logits,) = ctx.saved_tensors
        scale = float(dloss) * ctx.scale
        return to_torch(netops.crossEntropyGrad(to_gizml(logits), ctx.labels, scale)), None, None


def cross_entropy(logits, labels, reduction="mean"):
    return CrossEntropyFunction.apply(logits, labels, reduction)


# ---- linear (affine) -----------------------------------------------------------------------------

class LinearFunction(torch.autograd.Function):
    """y = x wᵀ + b (netops.affine; lazyMatmul without a bias) over the last axis of x."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        lead, k = x.shape[:-1], x.shape[-1]
        x2 = x.reshape(-1, k)
        gx, gw = to_gizml(x2), to_gizml(weight)
        if bias is not None:
            y = netops.affine(gx, gw, to_gizml(bias))
        else:
            y = gizml.lazyMatmul(gx, gw).store()
        ctx.save_for_backward(to_torch(gx), to_torch(gw))
        ctx.lead, ctx.has_bias = lead, bias is not None
        return to_torch(y).reshape(*lead, weight.shape[0])

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        dy2 = dy.reshape(-1, w.shape[0])
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = to_torch(gizml.lazyMatmul(to_gizml(dy2), _transposed(w)).store()).reshape(*ctx.lead, w.shape[1])
        if ctx.needs_input_grad[1] or (ctx.has_bias and ctx.needs_input_grad[2]):
            dy_t = _transposed(dy2)
            if ctx.needs_input_grad[1]:
                dw = to_torch(gizml.lazyMatmul(dy_t, _transposed(x)).store())
            if ctx.has_bias and ctx.needs_input_grad[2]:
                db = _column_sums(dy_t, x.shape[0], dy.device)
        return dx, dw, db


def linear(x, weight, bias=None):
    return LinearFunction.apply(x, weight, bias)


# ---- convolution -----------------------------------------------------------------------------------

class Conv2dFunction(torch.autograd.Function):
    """x [n, c, h, w] by weight [o, c, kh, kw] (+ bias [o]), one stride and one zero padding for
    both axes, no dilation or groups. Stride 1: lazyConv of each image (the patches read as the
    product needs them); otherwise im2col then lazyMatmul — the same chain over (ch, i, j) from +0,
    then + bias, so the same bits either way."""

    @staticmethod
    def forward(ctx, x, weight, bias, stride, pad):
        n, c, h, w = x.shape
        o, _, kh, kw = weight.shape
        gx, gw = to_gizml(x), to_gizml(weight.reshape(o, c * kh * kw))
        gb = to_gizml(bias) if bias is not None else None
        oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
        if stride == 1:
            out = gizml.Tensor.empty([n, o, oh * ow], device=gx.device)
            for i in range(n):
                lazy = gizml.lazyConv(gw, gx.rows(i, i + 1).reshape([c, h, w]), kh, kw, pad)
                if gb is not None:
                    lazy.bias(gb)
                lazy.storeInto(out.rows(i, i + 1).reshape([o, oh * ow]))
            y = to_torch(out).reshape(n, o, oh, ow)
        else:
            lazy = gizml.lazyMatmul(netops.im2col(gx, kh, kw, stride, pad), gw)
            if gb is not None:
                lazy.bias(gb)
            y = to_torch(lazy.store()).reshape(n, oh, ow, o).permute(0, 3, 1, 2).contiguous()
        ctx.save_for_backward(to_torch(gx), to_torch(gw))
        ctx.geometry = (n, c, h, w, o, kh, kw, stride, pad, oh, ow)
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w2 = ctx.saved_tensors
        n, c, h, w, o, kh, kw, stride, pad, oh, ow = ctx.geometry
        rows = n * oh * ow
        dy_rows = dy.permute(0, 2, 3, 1).reshape(rows, o)  # row (image, oy, ox), column o
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dcols = gizml.lazyMatmul(to_gizml(dy_rows), _transposed(w2)).store()
            dx = to_torch(netops.col2im(dcols, n, c, h, w, kh, kw, stride, pad))
        if ctx.needs_input_grad[1] or (ctx.has_bias and ctx.needs_input_grad[2]):
            dy_t = _transposed(dy_rows)
            if ctx.needs_input_grad[1]:
                cols = to_torch(netops.im2col(to_gizml(x), kh, kw, stride, pad))
                dw = to_torch(gizml.lazyMatmul(dy_t, _transposed(cols)).store()).reshape(o, c, kh, kw)
            if ctx.has_bias and ctx.needs_input_grad[2]:
                db = _column_sums(dy_t, rows, dy.device)
        return dx, dw, db, None, None


def conv2d(x, weight, bias=None, stride=1, padding=0):
    return Conv2dFunction.apply(x, weight, bias, int(stride), int(padding))


# ---- pooling -------------------------------------------------------------------------------------------

class Pool2dFunction(torch.autograd.Function):
    """pool2d (size x size windows, one stride, no padding; max or average) / pool2dGrad."""

    @staticmethod
    def forward(ctx, x, size, stride, average):
        gx = to_gizml(x)
        ctx.save_for_backward(to_torch(gx))
        ctx.args = (size, stride, average)
        return to_torch(netops.pool2d(gx, size, stride, average))

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return to_torch(netops.pool2dGrad(to_gizml(dy), to_gizml(x), *ctx.args)), None, None, None


def max_pool2d(x, kernel_size, stride=None):
    return Pool2dFunction.apply(x, int(kernel_size), int(stride or kernel_size), False)


def avg_pool2d(x, kernel_size, stride=None):
    return Pool2dFunction.apply(x, int(kernel_size), int(stride or kernel_size), True)


# ---- dropout -------------------------------------------------------------------------------------------

class DropoutFunction(torch.autograd.Function):
    """x.dropout(key, p): x * F32(1 / (1 - p)) where key.uniform(i) >= F32(p), else +0; the
    gradient is dy through the same mask and factor, dy.dropout(key, p)."""

    @staticmethod
    def forward(ctx, x, key, p):
        ctx.key, ctx.p = key, p
        return to_torch(to_gizml(x).dropout(key, p))

    @staticmethod
    def backward(ctx, dy):
        return to_torch(to_gizml(dy).dropout(ctx.key, ctx.p)), None, None


def dropout(x, key: gizml.Key, p=0.5):
    return DropoutFunction.apply(x, key, p)


# ---- diffusion norms and 8-bit rows (inference ops: forward only) --------------------------------

class InferenceFunction(torch.autograd.Function):
    """Runs one of gizml's inference ops (which have no backward in gizml): ``apply(name, run,
    *tensors)`` returns ``run(*tensors)``; a backward through its result raises gizml.Error naming
    the op, where a silent zero or missing gradient would mislead a training run."""

    @staticmethod
    def forward(ctx, name, run, *tensors):
        ctx.name = name
        return run(*tensors)

    @staticmethod
    def backward(ctx, *grads):
        raise gizml.Error(f"gizml.torch.{ctx.name}: no backward: an inference op (gizml has no gradient for it); "
                          "run it under torch.no_grad() or on detached tensors")


def _batched(x: torch.Tensor, name: str) -> None:
    """x is [N, C, *] (rank >= 2), or gizml.Error naming the function and x."""
    if x.dim() < 2:
        raise gizml.Error(f"gizml.torch.{name}: x: expected [N, C, *] (rank >= 2), got shape {tuple(x.shape)}")


_STORED = {torch.float32: gizml.DType.F32, torch.bfloat16: gizml.DType.BF16}


def _stored_dtype(out_dtype, name: str) -> gizml.DType:
    if out_dtype not in _STORED:
        raise gizml.Error(f"gizml.torch.{name}: out_dtype: expected torch.float32 or torch.bfloat16, got {out_dtype}")
    return _STORED[out_dtype]


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, silu=False, out_dtype=torch.float32):
    """``F.group_norm(x, num_groups, weight, bias, eps)`` (then SiLU, gizml's own, when ``silu``:
    a VAE's GroupNorm + SiLU in one pass) by ``netops.groupNorm``: x [N, C, *] float32, num_groups
    dividing C, weight and bias [C] float32 (None: ones and zeros) → x's shape as ``out_dtype``
    (float32, or bfloat16 with each value rounded once). Each image's groups are its own (the SPEC's
    statistics: GROUP_SLICES F32 slices added in f64): the batch runs as one groupNorm of x viewed
    as [N C, S] with N num_groups groups and weight and bias repeated N times, which is groupNorm of
    each image alone, bit for bit. Inference only (no backward)."""
    _batched(x, "group_norm")
    n, c = x.shape[0], x.shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1 or c % num_groups:
        raise gizml.Error(f"gizml.torch.group_norm: num_groups: expected a positive divisor of C = {c}, got "
                          f"{num_groups!r}")
    dtype = _stored_dtype(out_dtype, "group_norm")

    def run(x, weight, bias):
        if x.numel() == 0:
            return torch.empty(x.shape, dtype=out_dtype, device=x.device)
        w = weight if weight is not None else torch.ones(c, dtype=torch.float32, device=x.device)
        b = bias if bias is not None else torch.zeros(c, dtype=torch.float32, device=x.device)
        rows = x.contiguous().reshape(n * c, -1)
        y = netops.groupNorm(to_gizml(rows), n * num_groups, to_gizml(w.detach().repeat(n)),
                             to_gizml(b.detach().repeat(n)), eps, silu, dtype)
        return to_torch(y).reshape(x.shape)
    return InferenceFunction.apply("group_norm", run, x, weight, bias)


def pixel_norm(x, eps=1e-8, silu=False):
    """The pixel norm of StyleGAN and LTX, ``x / sqrt(mean(x², dim=1) + eps)`` (then gizml's SiLU
    when ``silu``), by ``netops.pixelNorm``: x [N, C, *] float32 or bfloat16 → a new tensor of
    x's shape and dtype (bfloat16: each value rounded once). The mean over channels is gizml's: the
    fma chain of the squares in channel order, divided by C. Inference only (no backward)."""
    _batched(x, "pixel_norm")

    def run(x):
        if x.numel() == 0:
            return torch.empty_like(x)
        frames = to_gizml(x.reshape(x.shape[0], x.shape[1], -1))
        return to_torch(netops.pixelNorm(frames, eps, silu)).reshape(x.shape)  # out from gizml's allocator
    return InferenceFunction.apply("pixel_norm", run, x)


def _modulations(x, t, name: str, what: str) -> int:
    """How many rows of modulation t holds for x [B, *, W]: B where t is [B, W] (a row a batch
    item), 1 where t is [W] or [1, W] (one for all rows); else gizml.Error naming the argument."""
    if x.dim() < 1:
        raise gizml.Error(f"gizml.torch.{name}: x: expected [B, *, W], got a scalar")
    width = x.shape[-1]
    mods = t.reshape(-1, width).shape[0] if 1 <= t.dim() <= 2 and t.shape[-1] == width else -1
    if mods < 0 or (mods != 1 and (x.dim() < 2 or mods != x.shape[0])):
        raise gizml.Error(f"gizml.torch.{name}: {what}: expected [W], [1, W] or [B, W] with x [B, *, W] (W = "
                          f"{width}, B = {x.shape[0] if x.dim() >= 2 else 1}), got {tuple(t.shape)}")
    return mods


def _row_map(rows: int, mods: int, device) -> gizml.Tensor:
    """gizml's row map (F32 indexes) for rows in batch order, a batch item's rows taking its row
    of modulation (all rows the first where mods = 1)."""
    return to_gizml(torch.arange(mods, dtype=torch.float32, device=device).repeat_interleave(rows // mods))


def modulated_norm(x, shift, scale, weight=None, eps=1e-6, centered=True, out_dtype=None):
    """AdaLN, ``norm(x) * (1 + scale) + shift`` (DiT's, FLUX's and LTX's modulated norm), by
    ``netops.modulatedNorm``: norm is LayerNorm without affine (centered) or RMSNorm (not
    centered) over the last axis, times ``weight`` [W] when given, then one fma with 1 + scale and
    shift. x [B, *, W] float32; shift and scale [B, W] (each batch item's rows take its own row of
    them: the modulation of a timestep and a prompt) or [W] / [1, W] (one for all rows), float32.
    Returns x's shape: ``out_dtype`` None gives gizml's default (float32 on the host, bfloat16 on a
    GPU); torch.bfloat16 gives the same bits on every device; float32 only on the host. Inference
    only (no backward)."""
    mods = _modulations(x, shift, "modulated_norm", "shift")
    if tuple(scale.shape) != tuple(shift.shape):
        raise gizml.Error(f"gizml.torch.modulated_norm: scale: expected shift's shape {tuple(shift.shape)}, got "
                          f"{tuple(scale.shape)}")
    dtype = None if out_dtype is None else _stored_dtype(out_dtype, "modulated_norm")
    width = x.shape[-1]

    def run(x, shift, scale, weight):
        rows = x.contiguous().reshape(-1, width)
        if rows.numel() == 0:
            return torch.empty(x.shape, dtype=out_dtype or torch.float32, device=x.device)
        w = weight if weight is not None else torch.ones(width, dtype=torch.float32, device=x.device)
        args = (to_gizml(rows), to_gizml(w), to_gizml(shift.reshape(mods, width)), to_gizml(scale.reshape(mods, width)),
                _row_map(rows.shape[0], mods, x.device), eps, centered)
        if dtype is None:
            return to_torch(netops.modulatedNorm(*args)).reshape(x.shape)
        y = gizml.Tensor.empty(list(rows.shape), dtype, args[0].device)
        netops.modulatedNormInto(*args, y)
        return to_torch(y).reshape(x.shape)
    return InferenceFunction.apply("modulated_norm", run, x, shift, scale, weight)


def gated_norm_add_(x, y, gate, weight=None, eps=1e-6):
    """In place, x += gate * (RMSNorm(y) * weight): the gated residual add after a block (LTX's and
    Wan's), by ``netops.gatedNormAddInto``: per row x = fma((y * rsqrt(mean(y²) + eps)) * weight,
    gate, x). x [B, *, W] float32 and contiguous (written where it is), y x's shape in bfloat16,
    gate [B, W] or [W] / [1, W] float32 (as modulated_norm's shift), weight [W] (None: ones).
    Returns x. Inference only: under torch.no_grad(), or with no input that requires grad."""
    mods = _modulations(x, gate, "gated_norm_add_", "gate")
    if not x.is_contiguous():
        raise gizml.Error(f"gizml.torch.gated_norm_add_: x: expected a contiguous tensor (written in place), got "
                          f"strides {x.stride()}")
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, y, gate, weight)):
        raise gizml.Error("gizml.torch.gated_norm_add_: an in-place inference op: run it under torch.no_grad()")
    width = x.shape[-1]
    rows = x.view(-1, width)
    if rows.numel():
        w = weight if weight is not None else torch.ones(width, dtype=torch.float32, device=x.device)
        netops.gatedNormAddInto(to_gizml(rows), to_gizml(y.reshape(-1, width)), to_gizml(w),
                                to_gizml(gate.reshape(mods, width)), _row_map(rows.shape[0], mods, x.device), eps)
    return x


def modulated_int8_rows(x, shift, scale, weight=None, eps=1e-6, centered=True, bits=8, return_normed=False):
    """modulated_norm's rows rounded to bfloat16, then int8_rows of them, in one pass (an AdaLN
    norm feeding an Int8Linear: the norm's output is never written unless asked for), by
    ``netops.modulatedInt8RowsInto``: the same bits as ``int8_rows(modulated_norm(x, shift, scale,
    weight, eps, centered, out_dtype=torch.bfloat16), bits)``. x [B, *, W] float32 (W a multiple of
    256), shift and scale as modulated_norm's → (q, s): q int8 of x's shape (codes of 8 or 4
    ``bits``), s float32 [B, *, 1]; with ``return_normed`` also the bfloat16 rows (q, s, y).
    Inference only (no backward)."""
    mods = _modulations(x, shift, "modulated_int8_rows", "shift")
    if tuple(scale.shape) != tuple(shift.shape):
        raise gizml.Error(f"gizml.torch.modulated_int8_rows: scale: expected shift's shape {tuple(shift.shape)}, "
                          f"got {tuple(scale.shape)}")
    width = x.shape[-1]

    def run(x, shift, scale, weight):
        rows = to_gizml(x.reshape(-1, width))
        w = weight if weight is not None else torch.ones(width, dtype=torch.float32, device=x.device)
        codes = gizml.DType.F32 if rows.device.isHost() else gizml.DType.I8 if bits == 8 else gizml.DType.I4
        q = gizml.Tensor.empty(list(rows.shape), codes, rows.device)
        s = gizml.Tensor.empty([rows.shape[0], 1], gizml.DType.F32, rows.device)
        y = gizml.Tensor.empty(list(rows.shape), gizml.DType.BF16, rows.device) if return_normed else gizml.Tensor()
        netops.modulatedInt8RowsInto(rows, to_gizml(w), to_gizml(shift.reshape(mods, width)),
                                     to_gizml(scale.reshape(mods, width)), _row_map(rows.shape[0], mods, x.device),
                                     eps, y, q, s, centered, bits)
        out = (to_torch(q if codes == gizml.DType.I8 else q.to(gizml.DType.I8)).reshape(x.shape),
               to_torch(s).reshape(*x.shape[:-1], 1))
        return out + (to_torch(y).reshape(x.shape),) if return_normed else out
    return InferenceFunction.apply("modulated_int8_rows", run, x, shift, scale, weight)


def _uniform_rows(x, name: str) -> int:
    """The stride between consecutive rows of x [..., W] viewed as [rows, W] (its last axis
    contiguous, its leading axes one run of rows at one stride: a slice of a wider row is), or
    gizml.Error naming the function and x."""
    ok = x.dim() >= 1 and (x.shape[-1] <= 1 or x.stride(-1) == 1)
    stride = None
    for axis in range(x.dim() - 2, -1, -1):  # innermost leading axis first; an extent of 1 has no step
        if x.shape[axis] == 1:
            continue
        if stride is None:
            stride = x.stride(axis)
            span = stride * x.shape[axis]
        elif x.stride(axis) != span:
            ok = False
        else:
            span *= x.shape[axis]
    if not ok:
        raise gizml.Error(f"gizml.torch.{name}: x: expected [..., W] with a contiguous last axis and its rows at one "
                          f"stride, got shape {tuple(x.shape)} and strides {x.stride()}")
    return stride if stride is not None else x.shape[-1]


def row_norm_rope_(x, weight, cos, sin, head, eps=1e-6):
    """In place, the queries' or keys' RMSNorm over the whole row, times ``weight``, then the
    rotary embedding of each head's split halves (LTX's and Wan's QK norm with RoPE), by
    ``netops.rowNormRopeInto``: x [..., W] bfloat16, written where it is: its rows may sit at a
    stride (x = qkv[..., :W] of a packed [..., 3 W] tensor; the values past W are untouched);
    weight [W] float32; cos and sin float32 [..., W / 2] (a row's pairs, pair j = h head / 2 + e
    for element e < head / 2 of head h; any leading shape that broadcasts to x's, such as one row
    a position for a batch of sequences); head even and dividing W. Per row, ``v = (v *
    rsqrt(mean(v²) + eps)) * weight`` (not rounded), then (p, q) of each head's halves become
    ``(fma(p, cos, -(q sin)), fma(q, cos, p sin))``, rounded once to bfloat16. Returns x.
    Inference only: under torch.no_grad(), or with no input that requires grad. On a CUDA
    tensor it runs on gizml's stream between two waits (PyTorch's current stream, then gizml's)."""
    name = "row_norm_rope_"
    if x.dtype != torch.bfloat16:
        raise gizml.Error(f"gizml.torch.{name}: x: expected torch.bfloat16, got {x.dtype}")
    stride = _uniform_rows(x, name)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, weight, cos, sin)):
        raise gizml.Error(f"gizml.torch.{name}: an in-place inference op: run it under torch.no_grad()")
    width = x.shape[-1]
    if isinstance(head, bool) or not isinstance(head, int) or head < 2 or head % 2 or width % head:
        raise gizml.Error(f"gizml.torch.{name}: head: expected an even divisor of W = {width}, got {head!r}")
    for what, t in (("weight", weight), ("cos", cos), ("sin", sin)):
        if t.dtype != torch.float32 or t.device != x.device:
            raise gizml.Error(f"gizml.torch.{name}: {what}: expected float32 on {x.device}, got {t.dtype} on "
                              f"{t.device}")
    if tuple(weight.shape) != (width,):
        raise gizml.Error(f"gizml.torch.{name}: weight: expected ({width},), got {tuple(weight.shape)}")
    rows = x.numel() // width if width else 0
    pairs = []
    for what, t in (("cos", cos), ("sin", sin)):
        try:
            pairs.append(t.expand(*x.shape[:-1], width // 2).reshape(rows, width // 2).contiguous())
        except RuntimeError:
            raise gizml.Error(f"gizml.torch.{name}: {what}: expected [..., W / 2 = {width // 2}] broadcasting to "
                              f"x's rows {tuple(x.shape[:-1])}, got {tuple(t.shape)}") from None
    if rows == 0:
        return x
    w = weight.detach().contiguous()
    if x.is_cuda:
        torch.cuda.current_stream(x.device).synchronize()
        gpu = gizml.Gpu.open(x.device.index)
    else:
        gpu = gizml.Gpu.host()
    netops.rowNormRopeInto(gpu, x.data_ptr(), stride, rows, width, head, w.data_ptr(), eps, pairs[0].data_ptr(),
                           pairs[1].data_ptr())
    gpu.synchronize()
    return x


def hadamard_rows(x):
    """``netops.hadamardRows``: the regular Hadamard transform of each 256 values of each row of x
    [..., W] (float32 or bfloat16, W a multiple of 256) → float32, x's shape. Its own inverse; the
    same transform rotates weight rows (``netops.rotateWeightRows``). Inference only."""
    return InferenceFunction.apply("hadamard_rows", lambda x: to_torch(netops.hadamardRows(to_gizml(x))), x)


def int8_rows(x, bits=8):
    """``netops.int8Rows``: each row of x [rows, W] (float32 or bfloat16, W a multiple of 256)
    rotated by hadamard_rows and quantized symmetrically with its own scale → (q, s): q int8 [rows, W]
    (codes in [-128, 127], or [-8, 7] for bits = 4; gizml's host form, F32 integers, and its GPU
    form, I4 two a byte, converted exactly), s float32 [rows, 1], so that q * s ≈ hadamard_rows(x).
    Inference only."""
    def run(x):
        r = netops.int8Rows(to_gizml(x), bits)
        q = r.q if r.q.dtype == gizml.DType.I8 else r.q.to(gizml.DType.I8)
        return to_torch(q), to_torch(r.s)
    return InferenceFunction.apply("int8_rows", run, x)


def int8_linear(x, qweight, sweight, bias=None, bits=8, out_dtype=torch.float32):
    """x wᵀ + bias as a layer of 8-bit rows (ConvRot's W8A8, or W4A8 / W8A4 / W4A4): the rows of x
    [..., K] (float32 or bfloat16, K a multiple of 256) quantized at the call by ``int8_rows(x,
    bits)`` (rotated by hadamard_rows, a scale a row), times the weight's codes and scales
    ``qweight, sweight = int8_rows(w, weight bits)`` (qweight [N, K] int8, sweight [N, 1]
    float32: the same rotation, so the product approximates x wᵀ), by ``netops.int8RowsProduct``:
    out[i, j] = ((F32(Σ qa qb) * sa[i]) * sb[j]) + bias[j], the sums exact integers → [..., N]
    as ``out_dtype`` (float32, or bfloat16 rounded once). Inference only."""
    if x.dim() < 1:
        raise gizml.Error("gizml.torch.int8_linear: x: expected [..., K], got a scalar")
    dtype = _stored_dtype(out_dtype, "int8_linear")

    def run(x, qweight, sweight, bias):
        rows = x.contiguous().reshape(-1, x.shape[-1])
        a = netops.int8Rows(to_gizml(rows), bits)  # codes as gizml keeps them (F32 on the host, I8 / I4 on a GPU)
        out = gizml.Tensor.empty([rows.shape[0], qweight.shape[0]], dtype, a.s.device)
        netops.int8RowsProductInto(a.q, a.s, to_gizml(qweight), to_gizml(sweight), out,
                                   to_gizml(bias) if bias is not None else gizml.Tensor())
        return to_torch(out).reshape(*x.shape[:-1], qweight.shape[0])
    return InferenceFunction.apply("int8_linear", run, x, qweight, sweight, bias)


def int8_rows_product(qa, sa, qb, sb, bias=None, out_dtype=torch.float32):
    """The product of codes already made, by ``netops.int8RowsProductInto``: qa [..., K] int8 and
    sa [..., 1] float32 (``int8_rows`` or ``modulated_int8_rows`` of activations), qb [N, K] int8
    and sb [N, 1] float32 (``int8_rows`` of the weight: the same rotation) → [..., N] as
    ``out_dtype`` (float32, or bfloat16 rounded once), out[i, j] = ((F32(Σ qa qb) * sa[i]) * sb[j])
    + bias[j], as int8_linear's. K a multiple of 256. Inference only (no backward)."""
    if qa.dim() < 1:
        raise gizml.Error("gizml.torch.int8_rows_product: qa: expected [..., K], got a scalar")
    if tuple(sa.shape) != (*qa.shape[:-1], 1):
        raise gizml.Error(f"gizml.torch.int8_rows_product: sa: expected {(*qa.shape[:-1], 1)} (a scale a row of qa), "
                          f"got {tuple(sa.shape)}")
    dtype = _stored_dtype(out_dtype, "int8_rows_product")

    def run(qa, sa, qb, sb, bias):
        rows = qa.reshape(-1, qa.shape[-1])
        out = gizml.Tensor.empty([rows.shape[0], qb.shape[0]], dtype, to_gizml(sb).device)
        netops.int8RowsProductInto(to_gizml(rows), to_gizml(sa.reshape(-1, 1)), to_gizml(qb), to_gizml(sb), out,
                                   to_gizml(bias) if bias is not None else gizml.Tensor())
        return to_torch(out).reshape(*qa.shape[:-1], qb.shape[0])
    return InferenceFunction.apply("int8_rows_product", run, qa, sa, qb, sb, bias)


# ---- layers --------------------------------------------------------------------------------------------

def _pair_value(v, what, layer):
    """One value for both axes (an int, or a pair of equal ints), as gizml's ops take."""
    if isinstance(v, (tuple, list)):
        if len(set(v)) != 1:
            raise gizml.Error(f"gizml.torch.{layer}: {what}: expected one value for both axes, got {tuple(v)}")
        v = v[0]
    if not isinstance(v, int):
        raise gizml.Error(f"gizml.torch.{layer}: {what}: expected an int, got {v!r}")
    return v


class Linear(nn.Linear):
    """nn.Linear whose forward is gizml's affine (same parameters and state dict)."""

    def forward(self, x):
        return linear(x, self.weight, self.bias)


class LayerNorm(nn.LayerNorm):
    """nn.LayerNorm over the last axis (normalized_shape of one extent), by gizml's layerNorm."""

    def forward(self, x):
        if len(self.normalized_shape) != 1:
            raise gizml.Error("gizml.torch.LayerNorm: normalized_shape: expected one extent (the last axis), got "
                              f"{tuple(self.normalized_shape)}")
        return layer_norm(x, self.weight, self.bias, self.eps)


class Conv2d(nn.Conv2d):
    """nn.Conv2d by gizml (no groups or dilation; one stride and one zero padding for both axes)."""

    def forward(self, x):
        unsupported = _conv2d_unsupported(self)
        if unsupported:
            raise gizml.Error(f"gizml.torch.Conv2d: {unsupported}")
        return conv2d(x, self.weight, self.bias, _pair_value(self.stride, "stride", "Conv2d"),
                      _pair_value(self.padding, "padding", "Conv2d"))


class MaxPool2d(nn.MaxPool2d):
    """nn.MaxPool2d by gizml's pool2d (square window, no padding, dilation or ceil_mode)."""

    def forward(self, x):
        unsupported = _pool_unsupported(self)
        if unsupported:
            raise gizml.Error(f"gizml.torch.MaxPool2d: {unsupported}")
        return max_pool2d(x, _pair_value(self.kernel_size, "kernel_size", "MaxPool2d"),
                          _pair_value(self.stride, "stride", "MaxPool2d"))


class AvgPool2d(nn.AvgPool2d):
    """nn.AvgPool2d by gizml's pool2d (square window, no padding, ceil_mode or divisor_override)."""

    def forward(self, x):
        unsupported = _pool_unsupported(self)
        if unsupported:
            raise gizml.Error(f"gizml.torch.AvgPool2d: {unsupported}")
        return avg_pool2d(x, _pair_value(self.kernel_size, "kernel_size", "AvgPool2d"),
                          _pair_value(self.stride, "stride", "AvgPool2d"))


class GroupNorm(nn.GroupNorm):
    """nn.GroupNorm by gizml's groupNorm (group_norm; float32 input). Inference only: a backward
    through it is a gizml.Error. ``from_torch_module(model, inference=True)`` makes a model's
    nn.GroupNorm this."""

    def forward(self, x):
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class Int8Linear(nn.Module):
    """A linear layer of 8-bit rows (int8_linear): its weight held as int8_rows codes and scales
    (buffers ``qweight`` [out, in] int8 and ``sweight`` [out, 1] float32, made once), ``bias``
    [out] float32 or None, its input quantized a row at a time at each call with ``bits`` (8 or
    4). ``Int8Linear.from_linear(linear, bits=8, weight_bits=8)`` quantizes an nn.Linear whose
    in_features is a multiple of 256. Inference only: a backward through it is a gizml.Error."""

    def __init__(self, in_features, out_features, bias=True, bits=8, weight_bits=8, device=None):
        super().__init__()
        if in_features % 256 or in_features < 256:
            raise gizml.Error(f"gizml.torch.Int8Linear: in_features: expected a positive multiple of 256, got "
                              f"{in_features}")
        for name, value in (("bits", bits), ("weight_bits", weight_bits)):
            if value not in (4, 8):
                raise gizml.Error(f"gizml.torch.Int8Linear: {name}: expected 8 or 4, got {value!r}")
        self.in_features, self.out_features, self.bits, self.weight_bits = in_features, out_features, bits, weight_bits
        self.register_buffer("qweight", torch.zeros(out_features, in_features, dtype=torch.int8, device=device))
        self.register_buffer("sweight", torch.ones(out_features, 1, dtype=torch.float32, device=device))
        self.register_buffer("bias", torch.zeros(out_features, device=device) if bias else None)

    @classmethod
    def from_linear(cls, linear: nn.Linear, bits=8, weight_bits=8) -> "Int8Linear":
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, bits, weight_bits,
                    linear.weight.device)
        with torch.no_grad():
            layer.qweight, layer.sweight = int8_rows(linear.weight.detach().float(), weight_bits)
            if linear.bias is not None:
                layer.bias = linear.bias.detach().float().clone()
        return layer

    def forward(self, x):
        return int8_linear(x, self.qweight, self.sweight, self.bias, self.bits)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"bits={self.bits}, weight_bits={self.weight_bits}")


class Dropout(nn.Dropout):
    """nn.Dropout by gizml: call i in training draws its mask from key.split(i), the same mask on
    every device (PyTorch's own generator is not used). Identity in eval mode."""

    def __init__(self, p=0.5, inplace=False, key: gizml.Key | None = None):
        super().__init__(p, inplace)
        self.key = key if key is not None else gizml.Key(0, 0)
        self.calls = 0

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        key = self.key.split(self.calls)
        self.calls += 1
        return dropout(x, key, self.p)


class CrossEntropyLoss(nn.CrossEntropyLoss):
    """nn.CrossEntropyLoss by gizml (class indices; reduction mean or sum; no weight, ignore_index
    other than the default, or label smoothing)."""

    def forward(self, logits, labels):
        if self.weight is not None or self.label_smoothing != 0:
            raise gizml.Error("gizml.torch.CrossEntropyLoss: weight and label_smoothing are not supported")
        return cross_entropy(logits, labels, self.reduction)


def _conv2d_unsupported(m: nn.Conv2d) -> str:
    if m.groups != 1:
        return f"groups: expected 1, got {m.groups}"
    if tuple(m.dilation) != (1, 1):
        return f"dilation: expected 1, got {tuple(m.dilation)}"
    if m.padding_mode != "zeros":
        return f"padding_mode: expected 'zeros', got {m.padding_mode!r}"
    if isinstance(m.padding, str) or len(set(m.padding)) != 1:
        return f"padding: expected one int for both axes, got {m.padding!r}"
    if len(set(m.stride)) != 1:
        return f"stride: expected one int for both axes, got {m.stride!r}"
    return ""


def _pool_unsupported(m) -> str:
    def one(v):
        return not isinstance(v, (tuple, list)) or len(set(v)) == 1
    if not one(m.kernel_size) or not one(m.stride):
        return f"expected a square window and one stride, got kernel_size {m.kernel_size}, stride {m.stride}"
    if m.padding not in (0, (0, 0)) or m.ceil_mode:
        return "padding and ceil_mode are not supported"
    if getattr(m, "dilation", 1) not in (1, (1, 1)) or getattr(m, "return_indices", False):
        return "dilation and return_indices are not supported"
    if getattr(m, "divisor_override", None) is not None:
        return "divisor_override is not supported"
    return ""


_CONVERSIONS = {
    nn.Linear: (Linear, lambda m: ""),
    nn.LayerNorm: (LayerNorm, lambda m: "" if len(m.normalized_shape) == 1 else "normalized_shape of rank > 1"),
    nn.Conv2d: (Conv2d, _conv2d_unsupported),
    nn.MaxPool2d: (MaxPool2d, _pool_unsupported),
    nn.AvgPool2d: (AvgPool2d, _pool_unsupported),
    nn.Dropout: (Dropout, lambda m: ""),
}


# Layers whose gizml op has no backward: converted only for inference.
_INFERENCE_CONVERSIONS = {
    nn.GroupNorm: (GroupNorm, lambda m: ""),
}


def from_torch_module(module: nn.Module, inplace: bool = False, key: gizml.Key | None = None,
                      inference: bool = False) -> nn.Module:
    """The module with every nn.Linear, nn.LayerNorm, nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d and
    nn.Dropout (those exact classes, in any nesting) made gizml's layer of the same class name,
    keeping its parameters (the same Parameter objects when ``inplace``; otherwise a deep copy is
    converted). A layer with options gizml does not have (groups, dilation, padding modes, ...)
    stays PyTorch's, with a warning. Dropout layers draw from ``key`` (default Key(0, 0)) split
    by their order in the module. With ``inference``, also the layers whose gizml op has no
    backward (nn.GroupNorm: a backward through it is then a gizml.Error), for a model that only
    runs forward (a VAE's decoder, a denoiser)."""
    root = module if inplace else copy.deepcopy(module)
    base = key if key is not None else gizml.Key(0, 0)
    conversions = {**_CONVERSIONS, **_INFERENCE_CONVERSIONS} if inference else _CONVERSIONS
    dropouts = 0
    for m in root.modules():
        target = conversions.get(type(m))
        if target is None:
            continue
        cls, unsupported = target
        why = unsupported(m)
        if why:
            warnings.warn(f"gizml.torch.from_torch_module: {type(m).__name__} kept as PyTorch's: {why}")
            continue
        m.__class__ = cls  # a subclass that adds no parameters: the same state, gizml's forward
        if cls is Dropout:
            m.key, m.calls = base.split(dropouts), 0
            dropouts += 1
    return root
