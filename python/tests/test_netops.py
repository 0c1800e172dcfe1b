"""gizml.netops from Python: every op called, the same bits as the C++ API (values written by
cpp_values.cpp, which the CTest test python_package runs and names in $GIZML_CPP_VALUES), a batch
equal to its items computed alone, and bad input as gizml.Error with the C++ message."""

import os

import numpy as np
import pytest

import gizml
from gizml import DType, Gpu, Key, Tensor, lazyConv, lazyMatmul
from gizml import netops as n
from conftest import expect_error, host_bytes, normal


def python_values():
    """The outputs cpp_values.cpp prints, computed from Python in the same order."""
    out = {}
    x, w, b = normal(1, [5, 37]), normal(2, [37]), normal(3, [37])
    y, mean, rstd = n.layerNorm(x, w, b, 1e-5)
    out.update({"layerNorm.y": y, "layerNorm.mean": mean, "layerNorm.rstd": rstd})
    g = n.layerNormGrad(normal(4, [5, 37]), x, w, mean, rstd)
    out.update({"layerNormGrad.dx": g.dx, "layerNormGrad.dweight": g.dweight, "layerNormGrad.dbias": g.dbias})
    rms = n.rmsNorm(x, w, 1e-6)
    out.update({"rmsNorm.y": rms.y, "rmsNorm.rstd": rms.rstd})
    labels = [0, 36, 5, 17, 2]
    out["crossEntropyRows"] = n.crossEntropyRows(x, labels)
    out["crossEntropyGrad"] = n.crossEntropyGrad(x, labels, 0.2)
    out["dropout"] = x.dropout(Key(9, 1), 0.25)
    a, wm, bm, r = normal(5, [9, 33]), normal(6, [7, 33]), normal(7, [7]), normal(8, [9, 7])
    out["affine"] = n.affine(a, wm, bm)
    out["lazyMatmul.chain"] = lazyMatmul(a, wm).bias(bm).scale(0.5).gelu().residual(r).silu().relu().store()
    out["lazyMatmul.bf16"] = lazyMatmul(a, wm).bias(bm).dtype(DType.BF16).store()
    img, kern, kb = normal(9, [2, 3, 8, 9]), normal(10, [4, 27]), normal(11, [4])
    out["lazyConv"] = lazyConv(kern, img.rows(1, 2).reshape([3, 8, 9]), 3, 3, 1).bias(kb).silu().store()
    cols = n.im2col(img, 3, 3, 2, 1)
    out["im2col"] = cols
    out["col2im"] = n.col2im(cols, 2, 3, 8, 9, 3, 3, 2, 1)
    out["pool2d.max"] = n.pool2d(img, 2, 2, False)
    out["pool2d.avg"] = n.pool2d(img, 3, 2, True)
    out["pool2dGrad.max"] = n.pool2dGrad(normal(12, [2, 3, 4, 4]), img, 2, 2, False)
    out["conv1d"] = n.conv1d(normal(13, [11, 3]), normal(14, [4, 3, 3]), [normal(15, [4])], 2, 1, 1)
    out["groupNorm"] = n.groupNorm(normal(16, [6, 5, 4]), 3, normal(17, [6]), normal(18, [6]), 1e-5, True,
                                   DType.F32)
    rows_h = normal(19, [3, 512])
    out["hadamardRows"] = n.hadamardRows(rows_h)
    q, s = n.int8Rows(rows_h, 8)
    out.update({"int8Rows.q": q, "int8Rows.s": s})
    out["int8RowsProduct"] = n.int8RowsProduct(q, s, q, s)
    out["int8RowsProduct.bias"] = n.int8RowsProduct(q, s, q, s, normal(50, [3]))
    out["attention"] = n.attention(normal(20, [2, 5, 8]), normal(21, [2, 7, 8]), normal(22, [2, 7, 6]), 0.35, True,
                                   0.25, Key(23, 1))
    qkv = normal(24, [12, 3 * 2 * 8])
    prep = n.HeadPrep(normal(26, [8]), normal(27, [8]), normal(25, [12, 2]), normal(31, [12, 2]), 1e-6)
    out["attendedRows"] = n.attendedRows(qkv, 2, 8, False, 6, [prep], 9)
    cross = Tensor.empty([5, 16])
    n.crossAttentionRows(normal(28, [5, 16]), normal(29, [7, 32]), 2, 8, cross)
    out["crossAttentionRows"] = cross
    out["neighborhood3d"] = n.neighborhood3d(normal(30, [2 * 3 * 4, 3 * 2 * 8]), [2, 3, 4], [3, 3, 3], 2, 0.3)
    return out


def test_matches_cpp():
    path = os.environ.get("GIZML_CPP_VALUES")
    if not path:
        pytest.skip("GIZML_CPP_VALUES is not set: the CTest test python_package runs cpp_values and sets it")
    expected = dict(line.split() for line in open(path) if line.strip())
    got = python_values()
    assert sorted(got) == sorted(expected)
    for name, t in got.items():
        assert host_bytes(t).hex() == expected[name], f"{name}: Python and C++ differ"


def test_batch_equals_each_row_alone():
    x, w, b = normal(21, [6, 300]), normal(22, [300]), normal(23, [300])
    y = host_bytes(n.layerNorm(x, w, b, 1e-5).y)
    alone = b"".join(host_bytes(n.layerNorm(x.rows(i, i + 1), w, b, 1e-5).y) for i in range(6))
    assert y == alone
    a, wm, bm = normal(24, [8, 70]), normal(25, [5, 70]), normal(26, [5])
    whole = host_bytes(n.affine(a, wm, bm))
    assert whole == b"".join(host_bytes(n.affine(a.rows(i, i + 1), wm, bm)) for i in range(8))
    # And from NumPy's memory, the same bits as from gizml's.
    xa = np.from_dlpack(x).copy()
    assert host_bytes(n.layerNorm(gizml.from_dlpack(xa), w, b, 1e-5).y) == y
    one = gizml.threads()
    gizml.setThreads(1)
    try:
        assert host_bytes(n.layerNorm(x, w, b, 1e-5).y) == y
    finally:
        gizml.setThreads(one)


def test_every_other_op_runs():
    x = normal(30, [4, 16])
    assert n.argmax(x) == x.argmax()
    assert host_bytes(n.dropout(x, Key(1, 1), 0.5)) == host_bytes(x.dropout(Key(1, 1), 0.5))
    assert n.crossEntropyLoss(x, [0, 1, 2, 3]) == pytest.approx(np.mean(np.from_dlpack(n.crossEntropyRows(x, [0, 1, 2, 3]))), rel=1e-6)
    img = normal(31, [2, 5, 6])
    pr = n.patchRows(img, 3, 3, 1, 0, 5)
    assert pr.shape == [2 * 9, 5 * 6]
    assert n.patchRows(img, 3, 3, 1, 0, 5, DType.BF16).dtype == DType.BF16
    assert lazyConv(normal(32, [4, 18]), img, 3, 3, 1).shape == [4, 30]
    c1 = n.im2col1d(normal(33, [10, 3]), 3, 1, 1, 1)
    assert c1.shape == [10, 9] and n.im2col1d(normal(33, [10, 3]), 3, 1, 1, 1, 2, 4).shape == [4, 9]
    assert n.col2im1d(c1, 3, 10, 3, 1, 1).shape == [10, 3]
    assert n.convTranspose1d(normal(34, [5, 3]), normal(35, [3, 4, 3]), [], 2, 1).shape == [9, 4]
    assert n.pool2dGrad(normal(36, [1, 2, 2, 2]), normal(37, [1, 2, 4, 4]), 2, 2, True).shape == [1, 2, 4, 4]
    assert n.causalMask(2, 3).toFloats() == [0, 0, float("-inf"), 0, 0, 0]
    # The diffusion norms.
    rows, width = 3, 256
    xs, ws = normal(40, [rows, width]), normal(41, [width])
    shift, scale = normal(42, [2, width]), normal(43, [2, width])
    mp = Tensor.fromFloats([0, 1, 1], [rows])
    mn = n.modulatedNorm(xs, ws, shift, scale, mp, 1e-6)
    y = Tensor.empty([rows, width])
    n.modulatedNormInto(xs, ws, shift, scale, mp, 1e-6, False, y)
    assert host_bytes(y) == host_bytes(mn)
    assert host_bytes(n.modulatedNorm(xs, ws, shift, scale, mp, 1e-6, centered=True)) != host_bytes(mn)
    acc = xs.clone()
    n.gatedNormAddInto(acc, mn.to(DType.BF16), ws, scale, mp, 1e-6)
    assert host_bytes(acc) != host_bytes(xs)
    px = normal(44, [2, 4, 9])
    out = Tensor.empty([2, 4, 9])
    n.pixelNormInto(px, 1e-8, True, out)
    assert np.isfinite(np.from_dlpack(out)).all()
    assert host_bytes(n.pixelNorm(px, 1e-8, True)) == host_bytes(out)
    gx, gw, gb = normal(45, [4, 8]), normal(46, [4]), normal(47, [4])
    gy = n.groupNorm(gx, 2, gw, gb, 1e-5, False)
    assert gy.shape == [4, 8]
    gout = Tensor.empty([4, 8], DType.BF16)
    n.groupNormInto(gx, 2, gw, gb, 1e-5, False, gout)
    assert host_bytes(gout) == host_bytes(n.groupNorm(gx, 2, gw, gb, 1e-5, False, DType.BF16))
    # The 8-bit rows.
    assert host_bytes(n.rotateWeightRows(xs)) == host_bytes(n.hadamardRows(xs))
    hy = Tensor.empty([rows, width])
    n.hadamardRowsInto(xs, hy)
    assert host_bytes(hy) == host_bytes(n.hadamardRows(xs))
    q, s = Tensor.empty([rows, width]), Tensor.empty([rows, 1])
    n.int8RowsInto(xs, q, s)
    r = n.int8Rows(xs)
    assert len(r) == 2 and host_bytes(q) == host_bytes(r.q) and host_bytes(s) == host_bytes(r.s)
    po = Tensor.empty([rows, rows])
    n.int8RowsProductInto(r.q, r.s, r.q, r.s, po)
    assert host_bytes(po) == host_bytes(n.int8RowsProduct(q, s, q, s))
    pb, bias = Tensor.empty([rows, rows], DType.BF16), normal(51, [rows])
    n.int8RowsProductInto(r.q, r.s, r.q, r.s, pb, bias=bias)
    assert host_bytes(pb) == host_bytes(n.int8RowsProduct(q, s, q, s, bias).to(DType.BF16))
    yb, q2, s2 = Tensor.empty([rows, width], DType.BF16), Tensor.empty([rows, width]), Tensor.empty([rows, 1])
    n.modulatedInt8RowsInto(xs, ws, shift, scale, mp, 1e-6, yb, q2, s2)
    n.modulatedInt8RowsInto(xs, ws, shift, scale, mp, 1e-6, Tensor(), q2, s2, centered=False, bits=4)
    r4 = n.modulatedInt8Rows(xs, ws, shift, scale, mp, 1e-6, bits=4)
    assert host_bytes(r4.q) == host_bytes(q2) and host_bytes(r4.s) == host_bytes(s2)
    # Raw rows of BF16 values at an address (host memory: Gpu.host()).
    bf = normal(48, [2, 8]).to(DType.BF16)
    cos, sin = Tensor.fromFloats([1.0] * 8, [2, 4]), Tensor.zeros([2, 4])
    n.rowNormRopeInto(Gpu.host(), bf.data_ptr(), 8, 2, 8, 4, Tensor.fromFloats([1.0] * 8, [8]).data_ptr(), 1e-6,
                      cos.data_ptr(), sin.data_ptr())
    ss = (np.from_dlpack(bf.to(DType.F32)).astype(np.float64) ** 2).mean(axis=1)
    assert np.allclose(ss, 1.0, rtol=2e-2)  # each row now has unit RMS (in BF16)
    # Packed rows: prep in place equals prep on attendedRows' copy; attentionRows into F32 and BF16.
    qkv = normal(50, [8, 3 * 2 * 4])
    prep = n.HeadPrep(normal(51, [4]), normal(52, [4]))  # no rotation
    assert not prep.cos.defined() and prep.eps == 1e-6
    prepped = qkv.clone()
    n.headPrepInPlace(prepped, 8, 2, 4, prep)
    want = n.attendedRows(qkv, 2, 4, prep=[prep])
    assert host_bytes(n.attendedRows(prepped, 2, 4)) == host_bytes(want)
    out = Tensor.empty([8, 8])
    n.attentionRows(qkv, 2, 4, False, 0, out, [prep])
    assert host_bytes(out) == host_bytes(want)
    out16 = Tensor.empty([6, 8], DType.BF16)
    n.attentionRows(qkv, 2, 4, True, 4, out16, [], 6)  # quantized: a request the host (exact) ignores
    assert host_bytes(out16) == host_bytes(n.attendedRows(qkv, 2, 4, False, 4, [], 6).to(DType.BF16))


def test_step_ops_on_host_addresses():
    g = Gpu.host()
    assert (n.TOP_EACH, n.CANDIDATE_ROW, n.CANDIDATE_WORKERS, n.GROUP_SLICES) == (4, 2048, 256, 16)
    rows, vocab = 2, 1000
    logits = normal(50, [rows, vocab])
    top = Tensor.empty([rows])
    n.argmaxInto(g, rows, vocab, vocab, False, top.data_ptr(), logits.data_ptr())
    assert top.toFloats() == [float(i) for i in logits.argmax()]
    cand = Tensor.empty([rows, n.CANDIDATE_ROW])
    n.candidatesInto(g, rows, vocab, vocab, False, cand.data_ptr(), logits.data_ptr())
    best = n.sampleCandidates(cand.data_ptr(), 0.0, 0, 1.0, Key(1, 1))
    assert best.token == logits.argmax()[0] and not best.mayBeCut
    token, _ = n.sampleCandidates(cand.data_ptr(), 1.0, 4, 0.9, Key(1, 1))
    assert 0 <= token < vocab
    parts = normal(51, [3, 10])
    y = Tensor.zeros([10])
    n.splitSumInto(g, y.data_ptr(), parts.data_ptr(), 10, 3, False)
    p = np.from_dlpack(parts)
    assert np.from_dlpack(y).tolist() == ((p[0] + p[1]) + p[2]).tolist()
    x, w, d = normal(52, [2, 256]), normal(53, [256]), normal(54, [256])
    out = Tensor.empty([2, 256])
    n.normRotateInto(g, 2, 256, 1e-6, True, 256, 0, out.data_ptr(), x.data_ptr(), w.data_ptr(), d.data_ptr())
    mp = Tensor.fromFloats([1, 0], [2])
    swapped = Tensor.empty([2, 256])
    n.normRotateInto(g, 2, 256, 1e-6, True, 256, 0, swapped.data_ptr(), x.data_ptr(), w.data_ptr(), d.data_ptr(),
                     mp.data_ptr(), 2)
    assert host_bytes(swapped.rows(0, 1)) == host_bytes(out.rows(1, 2))
    pu = normal(55, [2, 2, 512])  # nUp = 2 parts of [rows, 2 ffn]
    h = Tensor.empty([2, 256])
    n.siluMulRotatedInto(g, 2, 256, 2, h.data_ptr(), pu.data_ptr(), d.data_ptr())
    n.siluMulRotatedInto(g, 2, 256, 2, h.data_ptr(), pu.data_ptr())
    assert np.isfinite(np.from_dlpack(h)).all()


def test_bad_input_raises_the_cpp_message():
    x = normal(60, [3, 8])
    expect_error(lambda: n.layerNorm(x, normal(1, [7]), normal(2, [8]), 1e-5),
                 "gizml::netops::layerNorm: weight: expected shape [8], got [7]")
    expect_error(lambda: n.layerNorm(x.to(DType.BF16), normal(1, [8]), normal(2, [8]), 1e-5), "layerNorm", "x")
    expect_error(lambda: n.crossEntropyLoss(x, [0, 1]), "crossEntropyLoss", "labels")
    expect_error(lambda: n.crossEntropyGrad(x, [0, 1, 99], 1.0), "crossEntropyGrad", "labels")
    expect_error(lambda: n.affine(x, normal(1, [4, 7]), normal(2, [4])), "affine")
    expect_error(lambda: n.pool2d(normal(1, [1, 1, 2, 2]), 3, 1, False), "pool2d", "size")
    expect_error(lambda: n.im2col(x, 3, 3, 1, 0), "im2col", "x")
    expect_error(lambda: n.hadamardRows(normal(1, [2, 100])), "hadamardRows", "x")
    expect_error(lambda: n.hadamardRowsInto(normal(1, [2, 256]), Tensor.empty([2, 512])), "hadamardRowsInto", "y")
    expect_error(lambda: n.int8Rows(normal(1, [2, 256]), 5), "int8Rows", "bits")
    expect_error(lambda: n.groupNorm(normal(1, [6, 4]), 4, normal(2, [6]), normal(3, [6]), 1e-5, False), "groupNorm")
    expect_error(lambda: n.groupNormInto(normal(1, [6, 4]), 3, normal(2, [6]), normal(3, [6]), 1e-5, False,
                                         Tensor.empty([6, 5])), "groupNormInto", "out")
    expect_error(lambda: n.splitSumInto(Gpu.host(), 0, 0, 4, 1, False), "splitSumInto")
    expect_error(lambda: n.argmaxInto(Gpu.host(), 1, 10, 5, False, x.data_ptr(), x.data_ptr()), "argmaxInto")
    expect_error(lambda: lazyMatmul(x, normal(1, [2, 8])).bias(normal(2, [3])).store(), "bias")
    expect_error(lambda: lazyMatmul(x, normal(1, [2, 8])).storeInto(Tensor.empty([3, 3])), "storeInto")
    expect_error(lambda: gizml.lazyConv3(normal(1, [2, 5]), normal(2, [3, 1, 4, 4])), "lazyConv3")
    expect_error(lambda: n.attention(normal(1, [1, 2, 4]), normal(2, [1, 3, 5]), normal(3, [1, 3, 4]), 0.5),
                 "gizml::netops::attention", "k")
    expect_error(lambda: n.attention(normal(1, [1, 2, 4]), normal(2, [1, 3, 4]), normal(3, [1, 3, 4]), 0.5, False, 1.0),
                 "attention", "rate")
    expect_error(lambda: n.attendedRows(normal(1, [6, 12]), 2, 2, False, 4), "attendedRows", "group")
    expect_error(lambda: n.crossAttentionRows(normal(1, [2, 8]), normal(2, [3, 8]), 2, 4, Tensor.empty([2, 8])),
                 "crossAttentionRows", "head")
    expect_error(lambda: n.neighborhood3d(normal(1, [6, 12]), [1, 2, 3], [3, 2, 3], 2, 0.5), "neighborhood3d", "kernel")


def test_lazy_describes_its_output():
    lazy = lazyMatmul(normal(70, [3, 8]), normal(71, [5, 8])).dtype(DType.F16)
    assert lazy.shape == [3, 5] and lazy.outputDType() == DType.F16 and lazy.device() == gizml.Device.host()
    assert lazy.store().dtype == DType.F16
    assert lazyMatmul(normal(70, [3, 8]), normal(71, [5, 8]), DType.BF16).store().shape == [3, 5]


# Every op of gizml.netops is called by a test above; a new binding must be added here with its test.
NETOPS_TESTED = """layerNorm layerNormGrad rmsNorm crossEntropyLoss crossEntropyRows crossEntropyGrad argmax dropout
    affine patchRows im2col col2im im2col1d col2im1d conv1d convTranspose1d pool2d pool2dGrad causalMask
    modulatedNorm modulatedNormInto gatedNormAddInto pixelNorm pixelNormInto groupNorm groupNormInto rowNormRopeInto
    hadamardRows hadamardRowsInto rotateWeightRows int8Rows int8RowsInto modulatedInt8Rows modulatedInt8RowsInto
    int8RowsProduct
    int8RowsProductInto argmaxInto candidatesInto splitSumInto
    normRotateInto siluMulRotatedInto sampleCandidates attention headPrepInPlace attendedRows attentionRows
    crossAttentionRows neighborhood3d""".split()


def test_every_op_binding_is_listed_as_tested():
    bound = {name for name in dir(n) if not name.startswith("_") and callable(getattr(n, name))
             and not isinstance(getattr(n, name), type)}
    assert bound == set(NETOPS_TESTED)
