"""gizml with PyTorch (skipped without torch; CI does not install it): DLPack both ways on the host
and CUDA, gizml.torch's autograd functions (torch.autograd.gradcheck in float64 over the float32
ops, and against PyTorch's own layers in float32) and from_torch_module."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (CI does not install it)")

import gizml  # noqa: E402
import gizml.torch as gt  # noqa: E402
from gizml import netops  # noqa: E402
from conftest import expect_error, host_bytes  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and gizml.gpuCount() > 0 else [])
TYPES = [(torch.float32, gizml.DType.F32), (torch.float64, gizml.DType.F64), (torch.bfloat16, gizml.DType.BF16),
         (torch.float16, gizml.DType.F16), (torch.float8_e4m3fn, gizml.DType.E4M3), (torch.int8, gizml.DType.I8),
         (torch.int32, gizml.DType.I32), (torch.int64, gizml.DType.I64), (torch.uint8, gizml.DType.U8)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("torch_type,dtype", TYPES)
def test_dlpack_same_memory_both_ways(device, torch_type, dtype):
    t = torch.arange(12, device=device).to(torch_type).reshape(3, 4)
    g = gizml.from_dlpack(t)
    assert g.dtype == dtype and g.shape == [3, 4] and g.data_ptr() == t.data_ptr()
    assert g.device == (gizml.Device.cuda(t.device.index or 0) if device == "cuda" else gizml.Device.host())
    t[1, 2] = 7  # written through torch, read through gizml
    assert g.to(gizml.Device.host()).to(gizml.DType.F32).toFloats()[6] == 7
    back = torch.from_dlpack(g)
    assert back.dtype == torch_type and back.data_ptr() == t.data_ptr() and back.device == t.device
    back[2, 3] = 5
    assert t[2, 3].item() == 5


def test_dlpack_strided_torch_tensor_is_an_error():
    t = torch.zeros(4, 6)
    expect_error(lambda: gizml.from_dlpack(t.t()), "gizml.from_dlpack: tensor: expected a contiguous row-major")
    expect_error(lambda: gizml.from_dlpack(t[:, ::2]), "strides [6, 2]")
    expect_error(lambda: gizml.from_dlpack(torch.zeros(2, dtype=torch.complex64)), "gizml.from_dlpack: dtype")
    g = gizml.Tensor.normal(gizml.Key(1, 1), [5])
    expected = g.toFloats()
    t = torch.from_dlpack(g)
    del g
    assert t.tolist() == expected  # the capsule keeps gizml's storage


def in_float64(f):
    """f over float32 (gizml's dtype) seen as a float64 function, for gradcheck."""
    return lambda *xs: f(*[x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]).double()


def check_gradients(f, *inputs):
    assert torch.autograd.gradcheck(in_float64(f), inputs, eps=1e-3, atol=2e-3, rtol=2e-3)


def leaf(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).requires_grad_()


def test_gradcheck_layer_norm():
    check_gradients(lambda x, w, b: gt.layer_norm(x, w, b, 1e-5), leaf(3, 7), leaf(7, seed=1), leaf(7, seed=2))
    check_gradients(lambda x: gt.layer_norm(x), leaf(2, 3, 5))


def test_gradcheck_cross_entropy():
    labels = torch.tensor([1, 0, 4])
    check_gradients(lambda x: gt.cross_entropy(x, labels), leaf(3, 5))
    check_gradients(lambda x: gt.cross_entropy(x, labels, "sum"), leaf(3, 5))


def test_gradcheck_linear():
    check_gradients(gt.linear, leaf(4, 6), leaf(3, 6, seed=1), leaf(3, seed=2))
    check_gradients(lambda x, w: gt.linear(x, w), leaf(2, 2, 6), leaf(3, 6, seed=1))


@pytest.mark.parametrize("stride,pad", [(1, 1), (2, 0), (2, 1)])
def test_gradcheck_conv2d(stride, pad):
    check_gradients(lambda x, w, b: gt.conv2d(x, w, b, stride, pad), leaf(2, 2, 5, 6), leaf(3, 2, 3, 2, seed=1),
                    leaf(3, seed=2))


def test_gradcheck_pooling_and_dropout():
    check_gradients(lambda x: gt.max_pool2d(x, 2), leaf(1, 2, 4, 6))
    check_gradients(lambda x: gt.avg_pool2d(x, 3, 2), leaf(2, 1, 5, 5))
    check_gradients(lambda x: gt.dropout(x, gizml.Key(3, 4), 0.3), leaf(4, 9))


def pair(seed=0):
    """Random float32 inputs for gizml's and PyTorch's copies of a layer."""
    g = torch.Generator().manual_seed(seed)
    return lambda *shape: torch.randn(*shape, generator=g)


LAYERS = [
    (lambda: torch.nn.Linear(20, 7), (5, 20)),
    (lambda: torch.nn.Linear(20, 7, bias=False), (2, 3, 20)),
    (lambda: torch.nn.LayerNorm(33), (4, 33)),
    (lambda: torch.nn.Conv2d(3, 4, 3, padding=1), (2, 3, 8, 7)),
    (lambda: torch.nn.Conv2d(3, 4, (3, 2), stride=2), (2, 3, 9, 8)),
    (lambda: torch.nn.MaxPool2d(2), (2, 3, 6, 8)),
    (lambda: torch.nn.AvgPool2d(3, stride=2), (1, 2, 7, 9)),
]


@pytest.mark.parametrize("make,shape", LAYERS)
def test_layers_match_pytorch_in_float32(make, shape):
    torch.manual_seed(0)
    reference = make()
    ours = gt.from_torch_module(reference)
    assert type(ours).__module__ == "gizml.torch" and type(reference).__module__.startswith("torch")
    x = pair()(*shape).requires_grad_()
    x2 = x.detach().clone().requires_grad_()
    y, y_ref = ours(x), reference(x2)
    torch.testing.assert_close(y, y_ref, rtol=1e-5, atol=1e-5)
    dy = pair(1)(*y.shape)
    y.backward(dy)
    y_ref.backward(dy)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-5, atol=1e-5)
    for p, q in zip(ours.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)


def test_cross_entropy_matches_pytorch():
    logits = pair()(6, 11).requires_grad_()
    labels = torch.tensor([0, 10, 3, 3, 7, 1])
    l2 = logits.detach().clone().requires_grad_()
    loss, ref = gt.CrossEntropyLoss()(logits, labels), torch.nn.CrossEntropyLoss()(l2, labels)
    torch.testing.assert_close(loss, ref)
    loss.backward()
    ref.backward()
    torch.testing.assert_close(logits.grad, l2.grad)
    expect_error(lambda: gt.CrossEntropyLoss(label_smoothing=0.1)(logits, labels), "label_smoothing")


def test_composed_gradients_are_exact_orders():
    """db adds the rows in row order from +0 (float32, one rounding an add); a batch's forward is
    its rows computed alone; stride 1 (lazyConv) and the im2col path give the same bits."""
    x, w, b = pair()(9, 12).requires_grad_(), pair(1)(5, 12).requires_grad_(), pair(2)(5).requires_grad_()
    y = gt.linear(x, w, b)
    dy = pair(3)(9, 5)
    y.backward(dy)
    acc = np.zeros(5, np.float32)
    for row in dy.numpy():
        acc = (acc + row).astype(np.float32)
    assert b.grad.numpy().tobytes() == acc.tobytes()
    rows = torch.cat([gt.linear(x[i:i + 1], w, b) for i in range(9)])
    assert torch.equal(rows, y)
    xi, wi, bi = pair(4)(2, 3, 6, 7), pair(5)(4, 3, 3, 3), pair(6)(4)
    direct = gt.conv2d(xi, wi, bi, 1, 1)
    cols = netops.im2col(gt.to_gizml(xi), 3, 3, 1, 1)
    via = gizml.lazyMatmul(cols, gt.to_gizml(wi.reshape(4, 27))).bias(gt.to_gizml(bi)).store()
    assert torch.equal(direct, gt.to_torch(via).reshape(2, 6, 7, 4).permute(0, 3, 1, 2))


def test_dropout_layer_and_same_mask_backward():
    d = gt.Dropout(0.25, key=gizml.Key(5, 5))
    x = torch.ones(1000, requires_grad=True)
    y = d(x)
    scale = np.float32(1) / np.float32(0.75)
    kept = y.detach() != 0
    assert torch.all(y.detach()[kept] == torch.tensor(float(np.float32(1 / 0.75))))
    assert 650 < int(kept.sum()) < 850
    y.backward(torch.full((1000,), 2.0))
    assert torch.equal(x.grad != 0, kept)
    assert not torch.equal(d(x), y), "the next call draws from the next split key"
    d.eval()
    assert d(x) is x
    del scale


def test_from_torch_module_swaps_layers_and_trains():
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 4, 3, groups=2, padding=1),  # groups: stays PyTorch's
        torch.nn.Flatten(), torch.nn.Linear(64, 16), torch.nn.LayerNorm(16), torch.nn.Dropout(0.1),
        torch.nn.Linear(16, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = gt.from_torch_module(model)
    assert any("groups" in str(w.message) for w in caught)
    kinds = [type(m).__module__.split(".")[0] for m in ours]
    assert kinds == ["gizml", "torch", "gizml", "torch", "torch", "gizml", "gizml", "gizml", "gizml"]
    assert ours.state_dict().keys() == model.state_dict().keys()
    assert all(type(m).__module__.startswith("torch") for m in model), "a copy was converted"
    ours.eval()
    model.eval()
    x = torch.randn(8, 1, 8, 8)
    torch.testing.assert_close(ours(x), model(x), rtol=1e-5, atol=1e-5)
    inplace = gt.from_torch_module(model, inplace=True)
    assert inplace is model and isinstance(model[0], gt.Conv2d) and isinstance(model[0], torch.nn.Conv2d)
    # A few steps of training through gizml's forward and backward lower the loss.
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    opt = torch.optim.SGD(ours.parameters(), lr=0.05)
    loss_fn = gt.CrossEntropyLoss()
    before = loss_fn(ours(x), labels).item()
    ours.train()
    for _ in range(20):
        opt.zero_grad()
        loss_fn(ours(x), labels).backward()
        opt.step()
    ours.eval()
    assert loss_fn(ours(x), labels).item() < before


def test_bad_input_is_gizml_error():
    expect_error(lambda: gt.layer_norm(torch.zeros(2, 3, dtype=torch.float64)), "gizml::netops::layerNorm")
    expect_error(lambda: gt.layer_norm(torch.zeros(2, 3), torch.ones(4), torch.zeros(3)), "weight")
    expect_error(lambda: gt.linear(torch.zeros(2, 3), torch.zeros(4, 5)), "lazyMatmul")
    conv = gt.from_torch_module(torch.nn.Conv2d(2, 2, 3))
    conv.dilation = (2, 2)
    expect_error(lambda: conv(torch.zeros(1, 2, 8, 8)), "gizml.torch.Conv2d: dilation")
    expect_error(lambda: gt.max_pool2d(torch.zeros(1, 1, 2, 2), 3), "gizml::netops::pool2d")
    expect_error(lambda: gt.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 5])), "labels")
    expect_error(lambda: gt.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 1]), "none"), "reduction")
    # A strided input to a layer is copied (documented), never read wrong.
    x = torch.randn(6, 4)
    torch.testing.assert_close(gt.layer_norm(x.t()), torch.nn.functional.layer_norm(x.t(), (6,)))
    assert host_bytes(gt.to_gizml(x.t())) == x.t().contiguous().numpy().tobytes()


# ---- the inference ops: diffusion norms and 8-bit rows ---------------------------------------------

F = torch.nn.functional


def test_group_norm_matches_pytorch_and_each_image_alone():
    x, w, b = pair()(3, 8, 5, 7), pair(1)(8), pair(2)(8)
    y = gt.group_norm(x, 4, w, b, 1e-5)
    assert y.dtype == torch.float32 and y.shape == x.shape
    torch.testing.assert_close(y, F.group_norm(x, 4, w, b, 1e-5), rtol=1e-5, atol=1e-5)
    # The batch as one groupNorm of [N C, S] is groupNorm of each image alone, bit for bit.
    for i in range(3):
        alone = netops.groupNorm(gt.to_gizml(x[i]), 4, gt.to_gizml(w), gt.to_gizml(b), 1e-5, False, gizml.DType.F32)
        assert torch.equal(y[i], gt.to_torch(alone))
    act = gt.group_norm(x, 4, w, b, 1e-5, silu=True)
    torch.testing.assert_close(act, F.silu(F.group_norm(x, 4, w, b, 1e-5)), rtol=1e-5, atol=1e-5)
    # BF16: each value of the F32 result rounded once (to nearest even, as torch's conversion).
    for silu, f32 in ((False, y), (True, act)):
        half = gt.group_norm(x, 4, w, b, 1e-5, silu, torch.bfloat16)
        assert half.dtype == torch.bfloat16 and torch.equal(half, f32.to(torch.bfloat16))
    torch.testing.assert_close(gt.group_norm(x, 2), F.group_norm(x, 2), rtol=1e-5, atol=1e-5)  # no affine
    flat = pair(3)(4, 6) * 100 + 3  # [N, C]: one value a channel
    torch.testing.assert_close(gt.group_norm(flat, 3), F.group_norm(flat, 3), rtol=1e-5, atol=1e-5)
    assert gt.group_norm(torch.zeros(0, 8, 3), 4).shape == (0, 8, 3)
    strided = pair(4)(2, 16, 3, 5)[:, ::2]  # a strided input is copied first (documented), never read wrong
    assert torch.equal(gt.group_norm(strided, 4, w, b), gt.group_norm(strided.contiguous(), 4, w, b))
    assert torch.equal(gt.pixel_norm(strided.transpose(2, 3)), gt.pixel_norm(strided.transpose(2, 3).contiguous()))


def test_pixel_norm_matches_pytorch():
    x = pair()(2, 16, 3, 5) * 4
    reference = x / torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-8)
    y = gt.pixel_norm(x)
    torch.testing.assert_close(y, reference, rtol=1e-5, atol=1e-6)
    frames = gizml.Tensor.empty([2, 16, 15])
    netops.pixelNormInto(gt.to_gizml(x.reshape(2, 16, 15)), 1e-8, False, frames)
    assert torch.equal(y.reshape(2, 16, 15), gt.to_torch(frames))
    act = gt.pixel_norm(x, silu=True)
    torch.testing.assert_close(act, F.silu(reference), rtol=1e-5, atol=1e-6)
    # BF16 frames: read exactly, computed in F32, rounded once: the F32 result of the same values, rounded.
    xb = x.to(torch.bfloat16)
    for silu in (False, True):
        yb = gt.pixel_norm(xb, silu=silu)
        assert yb.dtype == torch.bfloat16 and torch.equal(yb, gt.pixel_norm(xb.float(), silu=silu).to(torch.bfloat16))
    assert torch.equal(x, pair()(2, 16, 3, 5) * 4), "the input is not written"


def test_modulated_norm_is_adaln():
    x, w = pair()(2, 5, 96), pair(1)(96)
    shift, scale = pair(2)(2, 96), pair(3)(2, 96) * 0.1
    centered = gt.modulated_norm(x, shift, scale, eps=1e-6)
    reference = F.layer_norm(x, (96,), eps=1e-6) * (1 + scale[:, None]) + shift[:, None]
    torch.testing.assert_close(centered, reference, rtol=1e-5, atol=1e-5)
    rms = gt.modulated_norm(x, shift, scale, w, eps=1e-6, centered=False)
    rms_reference = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w * (1 + scale[:, None]) + shift[:, None]
    torch.testing.assert_close(rms, rms_reference, rtol=1e-5, atol=1e-5)
    # Each batch item's rows with its own row of shift and scale: netops.modulatedNorm of those rows alone.
    zero = gt.to_gizml(torch.zeros(5))
    for i in range(2):
        alone = netops.modulatedNorm(gt.to_gizml(x[i]), gt.to_gizml(torch.ones(96)), gt.to_gizml(shift[i:i + 1]),
                                     gt.to_gizml(scale[i:i + 1]), zero, 1e-6, True)
        assert torch.equal(centered[i], gt.to_torch(alone))
    # One modulation for all rows ([W] or [1, W]); BF16 out: each value rounded once.
    one = gt.modulated_norm(x, shift[0], scale[0], eps=1e-6)
    assert torch.equal(one[0], centered[0]) and torch.equal(one, gt.modulated_norm(x, shift[:1], scale[:1], eps=1e-6))
    half = gt.modulated_norm(x, shift, scale, eps=1e-6, out_dtype=torch.bfloat16)
    assert half.dtype == torch.bfloat16 and torch.equal(half, centered.to(torch.bfloat16))


def test_gated_norm_add_in_place():
    x, y = pair()(2, 5, 64), pair(1)(2, 5, 64).to(torch.bfloat16) * 3
    gate, w = pair(2)(2, 64), pair(3)(64)
    before = x.clone()
    assert gt.gated_norm_add_(x, y, gate, w) is x
    yf = y.float()
    reference = before + yf * torch.rsqrt((yf * yf).mean(-1, keepdim=True) + 1e-6) * w * gate[:, None]
    torch.testing.assert_close(x, reference, rtol=1e-5, atol=1e-5)
    for i in range(2):  # each batch item's rows with its own gate: gatedNormAddInto of those rows alone
        alone = before[i].clone()
        netops.gatedNormAddInto(gt.to_gizml(alone), gt.to_gizml(y[i]), gt.to_gizml(w), gt.to_gizml(gate[i:i + 1]),
                                gt.to_gizml(torch.zeros(5)), 1e-6)
        assert torch.equal(x[i], alone)
    one, other = before.clone(), before.clone()
    gt.gated_norm_add_(one, y, gate[0])
    gt.gated_norm_add_(other, y, gate[:1], torch.ones(64))
    assert torch.equal(one, other)
    expect_error(lambda: gt.gated_norm_add_(before.transpose(0, 1), y.transpose(0, 1), gate[0]),
                 "gizml.torch.gated_norm_add_: x", "contiguous")
    expect_error(lambda: gt.gated_norm_add_(before, y, gate[:, :3]), "gizml.torch.gated_norm_add_: gate")
    expect_error(lambda: gt.gated_norm_add_(before, y.float(), gate), "gizml::netops::gatedNormAddInto", "y")
    expect_error(lambda: gt.gated_norm_add_(before.requires_grad_(), y, gate), "run it under torch.no_grad()")


def dense_hadamard256():
    h4 = torch.tensor([[1, 1, 1, -1], [1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, 1, 1]], dtype=torch.float64)
    h = h4
    for _ in range(3):
        h = torch.kron(h, h4)
    return h / 16


def test_hadamard_and_int8_rows():
    x = pair()(3, 512)
    y = gt.hadamard_rows(x)
    dense = (x.double().reshape(3, 2, 256) @ dense_hadamard256()).reshape(3, 512)
    torch.testing.assert_close(y.double(), dense, rtol=0, atol=1e-5)
    torch.testing.assert_close(gt.hadamard_rows(y), x, rtol=0, atol=1e-5)  # its own inverse
    assert torch.equal(gt.hadamard_rows(x.to(torch.bfloat16)), gt.hadamard_rows(x.to(torch.bfloat16).float()))
    for bits, top in ((8, 127), (4, 7)):
        q, s = gt.int8_rows(x, bits)
        assert q.dtype == torch.int8 and q.shape == (3, 512) and s.dtype == torch.float32 and s.shape == (3, 1)
        r = netops.int8Rows(gt.to_gizml(x), bits)
        assert torch.equal(q, gt.to_torch(r.q).to(torch.int8)) and torch.equal(s, gt.to_torch(r.s))
        assert int(q.abs().max()) == top
        assert torch.all((q.double() * s.double() - y.double()).abs() <= s.double() * 0.5 + 1e-6)


@pytest.mark.parametrize("centered", [True, False])
@pytest.mark.parametrize("bits", [8, 4])
def test_modulated_int8_rows_is_the_norm_then_int8_rows(centered, bits):
    x, w = pair()(2, 3, 512), pair(1)(512)
    shift, scale = pair(2)(2, 512), pair(3)(2, 512) * 0.1
    bf16 = torch.bfloat16
    q, s, y = gt.modulated_int8_rows(x, shift, scale, w, 1e-6, centered, bits, return_normed=True)
    assert q.dtype == torch.int8 and q.shape == x.shape and s.dtype == torch.float32 and s.shape == (2, 3, 1)
    normed = gt.modulated_norm(x, shift, scale, w, 1e-6, centered, out_dtype=bf16)
    assert y.dtype == bf16 and torch.equal(y, normed)  # the BF16 rows, bit for bit
    qr, sr = gt.int8_rows(normed.reshape(6, 512), bits)
    assert torch.equal(q.reshape(6, 512), qr) and torch.equal(s.reshape(6, 1), sr)
    assert int(q.abs().max()) == (127 if bits == 8 else 7)
    q1, s1 = gt.modulated_int8_rows(x, shift[0], scale[0], w, 1e-6, centered, bits)  # one modulation for all rows
    qr1, sr1 = gt.int8_rows(gt.modulated_norm(x, shift[0], scale[0], w, 1e-6, centered, bf16).reshape(6, 512), bits)
    assert torch.equal(q1.reshape(6, 512), qr1) and torch.equal(s1.reshape(6, 1), sr1)
    assert torch.equal(q1[0], q[0]) and not torch.equal(q1[1], q[1])
    # Then a W8A8 / W4A8 layer's product of those codes: int8_linear of the BF16 rows, bit for bit.
    w_linear, b = pair(4)(24, 512) * 0.05, pair(5)(24)
    qw, sw = gt.int8_rows(w_linear, 8)
    out = gt.int8_rows_product(q, s, qw, sw, b)
    assert out.shape == (2, 3, 24) and torch.equal(out, gt.int8_linear(normed, qw, sw, b, bits))
    sums = (q.reshape(6, 512).long() @ qw.long().t()).float()
    assert torch.equal(out.reshape(6, 24), sums * s.reshape(6, 1) * sw.reshape(1, -1) + b)
    assert torch.equal(gt.int8_rows_product(q, s, qw, sw, b, torch.bfloat16), out.to(torch.bfloat16))
    expect_error(lambda: gt.int8_rows_product(q, s.reshape(6, 1), qw, sw), "gizml.torch.int8_rows_product: sa")
    expect_error(lambda: gt.int8_rows_product(q, s, qw[:, :256], sw), "gizml::netops::int8RowsProduct")


def rope_reference(x, w, cos, sin, head, eps):
    """row_norm_rope_'s formula in float64 (gizml's sums and fmas in float32 differ in the last
    bits only): RMSNorm over the row, times w, then each head's split halves rotated."""
    v = x.double()
    n = v * torch.rsqrt((v * v).mean(-1, keepdim=True) + eps) * w.double()
    heads = n.reshape(*n.shape[:-1], -1, 2, head // 2)  # [..., heads, halves, head / 2]
    c = cos.double().expand(*x.shape[:-1], x.shape[-1] // 2).reshape(heads[..., 0, :].shape)
    s = sin.double().expand(*x.shape[:-1], x.shape[-1] // 2).reshape(heads[..., 0, :].shape)
    p, q = heads[..., 0, :], heads[..., 1, :]
    return torch.stack((p * c - q * s, q * c + p * s), -2).reshape(x.shape)


def test_row_norm_rope_in_place_on_packed_rows():
    width, head, eps = 64, 16, 1e-6
    qkv = pair()(2, 5, 3 * width).to(torch.bfloat16) * 4
    w = pair(1)(width)
    angles = pair(2)(5, width // 2)
    cos, sin = torch.cos(angles), torch.sin(angles)  # a row of pairs a position, for both sequences
    before = qkv.clone()
    queries = qkv[..., :width]  # rows at a stride of 3 W
    with torch.no_grad():
        assert gt.row_norm_rope_(queries, w, cos, sin, head, eps) is queries
    assert torch.equal(qkv[..., width:], before[..., width:])  # keys and values untouched
    reference = rope_reference(before[..., :width], w, cos, sin, head, eps)
    torch.testing.assert_close(queries.double(), reference, rtol=2 ** -7, atol=1e-6)  # a BF16 rounding
    # The same rows made contiguous, with the pairs written out a row each: the same bits.
    alone = before[..., :width].contiguous()
    gt.row_norm_rope_(alone, w, cos.expand(2, 5, width // 2).contiguous(), sin.expand(2, 5, width // 2), head, eps)
    assert torch.equal(alone, queries)
    flat = before[..., :width].reshape(10, width)  # [rows, W] with cos and sin [rows, W / 2]
    gt.row_norm_rope_(flat, w, cos.repeat(2, 1), sin.repeat(2, 1), head, eps)
    assert torch.equal(flat, alone.reshape(10, width))
    # Rows not at one stride, other dtypes, heads, shapes and gradients: gizml.Error.
    expect_error(lambda: gt.row_norm_rope_(qkv[:, ::2, :width], w, cos[::2], sin[::2], head),
                 "gizml.torch.row_norm_rope_: x", "one stride")
    expect_error(lambda: gt.row_norm_rope_(qkv[..., :width].float(), w, cos, sin, head),
                 "gizml.torch.row_norm_rope_: x", "bfloat16")
    expect_error(lambda: gt.row_norm_rope_(queries, w, cos, sin, 6), "gizml.torch.row_norm_rope_: head")
    expect_error(lambda: gt.row_norm_rope_(queries, w, cos, sin, 5), "gizml.torch.row_norm_rope_: head")
    expect_error(lambda: gt.row_norm_rope_(queries, w[:8], cos, sin, head), "gizml.torch.row_norm_rope_: weight")
    expect_error(lambda: gt.row_norm_rope_(queries, w, cos[:3], sin, head), "gizml.torch.row_norm_rope_: cos")
    expect_error(lambda: gt.row_norm_rope_(queries, w, cos, sin.double(), head), "gizml.torch.row_norm_rope_: sin")
    expect_error(lambda: gt.row_norm_rope_(queries, w.requires_grad_(), cos, sin, head), "torch.no_grad()")
    assert torch.equal(alone, queries)  # nothing written by a failed call


@pytest.mark.parametrize("bits,weight_bits", [(8, 8), (8, 4), (4, 4)])
def test_int8_linear_is_its_formula(bits, weight_bits):
    x, w, b = pair()(2, 3, 512), pair(1)(40, 512) * 0.05, pair(2)(40)
    qw, sw = gt.int8_rows(w, weight_bits)
    y = gt.int8_linear(x, qw, sw, b, bits)
    assert y.dtype == torch.float32 and y.shape == (2, 3, 40)
    # ((F32(Σ qa qb) * sa) * sb) + bias, the sum of integers exact (int64 here).
    qa, sa = gt.int8_rows(x.reshape(6, 512), bits)
    sums = (qa.long() @ qw.long().t()).float()
    assert torch.equal(y.reshape(6, 40), sums * sa * sw.reshape(1, -1) + b)
    assert torch.equal(gt.int8_linear(x, qw, sw, b, bits, torch.bfloat16), y.to(torch.bfloat16))
    assert torch.equal(gt.int8_linear(x, qw, sw, None, bits), (sums * sa * sw.reshape(1, -1)).reshape(2, 3, 40))
    if bits == weight_bits == 8:  # and near x wᵀ + b: the rotation cancels, 8-bit rounding remains
        torch.testing.assert_close(y, F.linear(x, w, b), rtol=0, atol=0.03 * float(F.linear(x, w).abs().max()))


def test_int8_linear_layer():
    torch.manual_seed(3)
    linear = torch.nn.Linear(256, 24)
    layer = gt.Int8Linear.from_linear(linear)
    assert set(layer.state_dict()) == {"qweight", "sweight", "bias"} and layer.qweight.dtype == torch.int8
    x = pair()(5, 256)
    qw, sw = gt.int8_rows(linear.weight.detach(), 8)
    assert torch.equal(layer(x), gt.int8_linear(x, qw, sw, linear.bias.detach()))
    four = gt.Int8Linear.from_linear(torch.nn.Linear(256, 8, bias=False), bits=4, weight_bits=4)
    assert four.bias is None and int(four.qweight.abs().max()) <= 8 and "bits=4" in repr(four)
    expect_error(lambda: gt.Int8Linear.from_linear(torch.nn.Linear(100, 3)), "gizml.torch.Int8Linear: in_features")
    expect_error(lambda: gt.Int8Linear(256, 3, bits=6), "gizml.torch.Int8Linear: bits")
    expect_error(lambda: layer(pair()(2, 255)), "gizml::netops::int8Rows")


def test_inference_ops_have_no_backward():
    x, w, b = pair()(2, 4, 9).requires_grad_(), pair(1)(4).requires_grad_(), pair(2)(4)
    for y, name in ((gt.group_norm(x, 2, w, b), "group_norm"), (gt.pixel_norm(x), "pixel_norm"),
                    (gt.modulated_norm(x, pair(3)(9), pair(4)(9)), "modulated_norm"),
                    (gt.modulated_int8_rows(pair(5)(2, 256).requires_grad_(), pair(6)(256), pair(7)(256))[1],
                     "modulated_int8_rows")):
        assert y.requires_grad
        expect_error(lambda: y.sum().backward(), f"gizml.torch.{name}: no backward")
    with torch.no_grad():  # the usual inference: nothing to raise
        torch.testing.assert_close(gt.group_norm(x, 2, w, b), F.group_norm(x, 2, w, b), rtol=1e-5, atol=1e-5)


def test_group_norm_layer_and_from_torch_module_for_inference():
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.GroupNorm(4, 8), torch.nn.SiLU())
    kept = gt.from_torch_module(model)
    assert isinstance(kept[0], gt.Conv2d) and type(kept[1]) is torch.nn.GroupNorm  # training: no gizml GroupNorm
    ours = gt.from_torch_module(model, inference=True)
    assert isinstance(ours[1], gt.GroupNorm) and ours.state_dict().keys() == model.state_dict().keys()
    x = pair()(2, 3, 6, 5)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), model(x), rtol=1e-5, atol=1e-5)
    expect_error(lambda: ours(x).sum().backward(), "gizml.torch.group_norm: no backward")


def test_inference_ops_bad_input_is_gizml_error():
    x = torch.zeros(2, 8, 3)
    expect_error(lambda: gt.group_norm(x, 3), "gizml.torch.group_norm: num_groups", "C = 8")
    expect_error(lambda: gt.group_norm(torch.zeros(8), 2), "gizml.torch.group_norm: x", "rank >= 2")
    expect_error(lambda: gt.group_norm(x, 2, out_dtype=torch.float16), "gizml.torch.group_norm: out_dtype")
    expect_error(lambda: gt.group_norm(x.double(), 2), "gizml::netops::groupNorm")
    expect_error(lambda: gt.group_norm(x, 2, torch.ones(4)), "gizml::netops::groupNorm", "w")
    expect_error(lambda: gt.pixel_norm(torch.zeros(5)), "gizml.torch.pixel_norm: x")
    expect_error(lambda: gt.pixel_norm(x.half()), "gizml::netops::pixelNorm", "x")
    expect_error(lambda: gt.modulated_norm(x, torch.zeros(3, 3), torch.zeros(3, 3)),
                 "gizml.torch.modulated_norm: shift")
    expect_error(lambda: gt.modulated_norm(x, torch.zeros(2, 3), torch.zeros(3)), "gizml.torch.modulated_norm: scale")
    expect_error(lambda: gt.hadamard_rows(torch.zeros(2, 100)), "gizml::netops::hadamardRows")
    expect_error(lambda: gt.int8_rows(torch.zeros(2, 256), 5), "gizml::netops::int8Rows", "bits")
    rows, mod = torch.zeros(2, 256), torch.zeros(256)
    expect_error(lambda: gt.modulated_int8_rows(rows, mod, mod, bits=6), "gizml::netops::modulatedInt8RowsInto", "bits")
    expect_error(lambda: gt.modulated_int8_rows(x, x[0, 0], x[0, 0]), "gizml::netops::modulatedInt8RowsInto", "x")
    expect_error(lambda: gt.modulated_int8_rows(rows, mod, mod[:8]), "gizml.torch.modulated_int8_rows: scale")
    expect_error(lambda: gt.modulated_int8_rows(rows, torch.zeros(3, 256), torch.zeros(3, 256)),
                 "gizml.torch.modulated_int8_rows: shift")


@pytest.mark.skipif("cuda" not in DEVICES, reason="no CUDA GPU (torch.cuda and gizml.gpuCount() both needed)")
def test_cuda_layers_give_the_host_bits():
    """gizml.torch on CUDA tensors runs gizml's kernels on their memory: the same bits as the host."""
    x, w, b = pair()(6, 40), pair(1)(40), pair(2)(40)
    assert torch.equal(gt.layer_norm(x, w, b).cpu(), gt.layer_norm(x.cuda(), w.cuda(), b.cuda()).cpu())
    wl, bl = pair(3)(7, 40), pair(4)(7)
    xs = [x.clone().requires_grad_(), x.cuda().requires_grad_()]
    ys = [gt.linear(xs[0], wl, bl), gt.linear(xs[1], wl.cuda(), bl.cuda())]
    assert torch.equal(ys[0], ys[1].cpu())
    dy = pair(5)(6, 7)
    ys[0].backward(dy)
    ys[1].backward(dy.cuda())
    assert torch.equal(xs[0].grad, xs[1].grad.cpu())
    img, k = pair(6)(2, 3, 9, 8), pair(7)(4, 3, 3, 3)
    for stride in (1, 2):
        assert torch.equal(gt.conv2d(img, k, None, stride, 1), gt.conv2d(img.cuda(), k.cuda(), None, stride, 1).cpu())
    assert torch.equal(gt.max_pool2d(img, 2), gt.max_pool2d(img.cuda(), 2).cpu())
    assert torch.equal(gt.dropout(x, gizml.Key(1, 2), 0.3), gt.dropout(x.cuda(), gizml.Key(1, 2), 0.3).cpu())
    logits, labels = pair(8)(5, 9), torch.tensor([0, 8, 3, 3, 1])
    assert gt.cross_entropy(logits, labels).item() == gt.cross_entropy(logits.cuda(), labels.cuda()).item()
    # The inference ops too (modulated_norm with a BF16 out on both: a GPU's default is BF16).
    frames, w8, b8 = pair(9)(2, 8, 5, 7), pair(10)(8), pair(11)(8)
    for silu in (False, True):
        assert torch.equal(gt.group_norm(frames, 4, w8, b8, 1e-5, silu),
                           gt.group_norm(frames.cuda(), 4, w8.cuda(), b8.cuda(), 1e-5, silu).cpu())
        assert torch.equal(gt.pixel_norm(frames, silu=silu), gt.pixel_norm(frames.cuda(), silu=silu).cpu())
    shift, scale = pair(12)(6, 40), pair(13)(6, 40)
    bf16 = torch.bfloat16
    assert torch.equal(gt.modulated_norm(x, shift, scale, w, out_dtype=bf16),
                       gt.modulated_norm(x.cuda(), shift.cuda(), scale.cuda(), w.cuda(), out_dtype=bf16).cpu())
    acc, ybf = pair(16)(6, 40), pair(17)(6, 40).to(torch.bfloat16)
    on_gpu = acc.cuda()
    with torch.no_grad():
        gt.gated_norm_add_(acc, ybf, shift, w)
        gt.gated_norm_add_(on_gpu, ybf.cuda(), shift.cuda(), w.cuda())
    assert torch.equal(acc, on_gpu.cpu())
    rows = pair(14)(4, 512)
    assert torch.equal(gt.hadamard_rows(rows), gt.hadamard_rows(rows.cuda()).cpu())
    for bits in (8, 4):
        (q, s), (qg, sg) = gt.int8_rows(rows, bits), gt.int8_rows(rows.cuda(), bits)
        assert torch.equal(q, qg.cpu()) and torch.equal(s, sg.cpu())
        layer = gt.Int8Linear.from_linear(torch.nn.Linear(512, 16), bits, bits)
        assert torch.equal(layer(rows), layer.cuda()(rows.cuda()).cpu())
        mod, mul = pair(18)(2, 512), pair(19)(2, 512) * 0.1
        host = gt.modulated_int8_rows(rows.reshape(2, 2, 512), mod, mul, bits=bits, return_normed=True)
        gpu = gt.modulated_int8_rows(rows.reshape(2, 2, 512).cuda(), mod.cuda(), mul.cuda(), bits=bits,
                                     return_normed=True)
        assert all(torch.equal(h, g.cpu()) for h, g in zip(host, gpu))
        qw, sw = gt.int8_rows(pair(23)(8, 512), bits)
        assert torch.equal(gt.int8_rows_product(host[0], host[1], qw, sw),
                           gt.int8_rows_product(gpu[0], gpu[1], qw.cuda(), sw.cuda()).cpu())
    qkv, wq, angles = pair(20)(3, 4, 96).to(bf16), pair(21)(32), pair(22)(4, 16)
    on_gpu = qkv.cuda()
    with torch.no_grad():
        gt.row_norm_rope_(qkv[..., 32:64], wq, torch.cos(angles), torch.sin(angles), 8)
        gt.row_norm_rope_(on_gpu[..., 32:64], wq.cuda(), torch.cos(angles).cuda(), torch.sin(angles).cuda(), 8)
    assert torch.equal(qkv, on_gpu.cpu())
