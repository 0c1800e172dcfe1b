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
