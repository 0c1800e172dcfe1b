"""The core types from Python (NumPy only): Tensor, Key, DType, Device, Gpu, the free functions,
DLPack with NumPy (the same memory both ways) and gizml.Error carrying the C++ message."""

import math
import sys

import numpy as np
import pytest

import gizml
from conftest import expect_error, host_bytes


def test_package_exports_one_spelling():
    for name in ["Tensor", "Key", "DType", "Device", "Gpu", "Lazy", "Error", "lazyMatmul", "lazyConv",
                 "lazyConv3", "from_dlpack", "netops"]:
        assert hasattr(gizml, name), name
    import gizml.netops as n
    from gizml.netops import layerNorm
    assert n is gizml.netops and layerNorm is gizml.netops.layerNorm
    assert issubclass(gizml.Error, RuntimeError)


def test_key_is_philox():
    k = gizml.Key(0, 0)
    assert k.philox(0) == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]  # Random123's known answer
    assert gizml.Key().k0 == 0 and gizml.Key(3, 4).k1 == 4
    key = gizml.Key(1, 2)
    assert key.word(5) == key.philox(1)[1]
    assert key.uniform(5) == (key.word(5) >> 8) * 2.0 ** -24
    assert math.isfinite(key.normal(3))
    assert key.split(1) != key.split(2) and key.split(1) == gizml.Key(1, 2).split(1)
    assert repr(key) == "gizml.Key(1, 2)"
    k.k0 = 9
    assert k == gizml.Key(9, 0)


def test_tensor_creation_views_and_copies():
    t = gizml.Tensor.normal(gizml.Key(1, 2), [4, 6])
    assert t.shape == [4, 6] and t.dtype == gizml.DType.F32 and t.device == gizml.Device.host()
    assert (t.numel(), t.rank(), t.dim(-1), t.rowCount(), t.rowLength(), t.bytes()) == (24, 2, 6, 4, 6, 96)
    assert t.defined() and not gizml.Tensor().defined()
    assert "shape=[4, 6]" in repr(t) and repr(gizml.Tensor()) == "gizml.Tensor(undefined)"
    values = t.toFloats()
    assert t.rows(1, 3).toFloats() == values[6:18]
    assert t.reshape([24]).toFloats() == values
    c = t.clone()
    assert c.toFloats() == values and c.data_ptr() != t.data_ptr()
    z = gizml.Tensor.zeros([4, 6])
    z.copyFrom(t)
    assert z.toFloats() == values
    assert gizml.Tensor.empty([2, 3], gizml.DType.BF16).bytes() == 12
    u = gizml.Tensor.uniform(gizml.Key(1, 2), [8]).toFloats()
    assert u == [gizml.Key(1, 2).uniform(i) for i in range(8)]
    assert gizml.Tensor.normal(gizml.Key(1, 2), [8]).toFloats() == [gizml.Key(1, 2).normal(i) for i in range(8)]
    f = gizml.Tensor.fromFloats([1.0, 2.5, -3.0], [3], gizml.DType.BF16)
    assert f.dtype == gizml.DType.BF16 and f.toFloats() == [1.0, 2.5, -3.0]
    assert f.to(gizml.DType.F32).dtype == gizml.DType.F32 and f.to(gizml.Device.host()).toFloats() == f.toFloats()
    assert gizml.Tensor.fromFloats([1, 5, 2, 2], [2, 2]).argmax() == [1, 0]
    d = t.dropout(gizml.Key(3, 3), 0.5).toFloats()
    assert all(v == 0 or v == np.float32(2) * np.float32(x) for v, x in zip(d, values))


def test_device_gpu_and_free_functions():
    h = gizml.Device.host()
    assert h.isHost() and not h.isCuda() and h.name() == "host" and h.index == 0 and repr(h) == "gizml.Device(host)"
    c = gizml.Device.cuda(1)
    assert c.isCuda() and c.name() == "cuda:1" and c != h and hash(c) != hash(h)
    assert isinstance(gizml.builtWithCuda(), bool)
    assert gizml.builtForGpuSimulator() is False  # the package is built for a GPU or for none
    if gizml.gpuCount() == 0:
        assert gizml.noGpuReason() != ""
        expect_error(lambda: gizml.Gpu.open(0), "gizml::Gpu::open")
        expect_error(lambda: gizml.Tensor.empty([2], gizml.DType.F32, gizml.Device.cuda(0)), "device")
    else:
        g = gizml.Gpu.open(0)
        assert g.device == gizml.Device.cuda(0)
        g.synchronize()
    hg = gizml.Gpu.host()
    assert hg.device.isHost() and hg.stream == 0
    hg.synchronize()
    before = gizml.threads()
    gizml.setThreads(1)
    assert gizml.threads() == 1
    gizml.setThreads(before)
    expect_error(lambda: gizml.setThreads(0), "setThreads")
    gizml.Tensor.empty([1 << 16])  # freed at once into the cache
    assert gizml.cachedHostBytes() > 0
    gizml.releaseCachedHostMemory()
    assert gizml.cachedHostBytes() == 0


def test_dtype_functions():
    D = gizml.DType
    assert [gizml.dtypeName(d) for d in (D.F32, D.BF16, D.E4M3)] == ["F32", "BF16", "E4M3"]
    assert gizml.dtypeBits(D.I4) == 4 and gizml.dtypeBytes(D.I4, 3) == 2
    assert gizml.isFloating(D.F16) and not gizml.isFloating(D.I8)
    assert gizml.floatToBF16(1.0) == 0x3F80 and gizml.bf16ToFloat(0x3F80) == 1.0
    assert gizml.floatToF16(1.0) == 0x3C00 and gizml.f16ToFloat(0x3C00) == 1.0
    assert gizml.floatToE4M3(1000.0) == 0x7E and gizml.e4m3ToFloat(0x7E) == 448.0
    assert gizml.floatToI8(200.0) == 127 and gizml.floatToI4(2.5) == 2


NUMPY_TYPES = [(np.float32, gizml.DType.F32), (np.float64, gizml.DType.F64), (np.float16, gizml.DType.F16),
               (np.int8, gizml.DType.I8), (np.int32, gizml.DType.I32), (np.int64, gizml.DType.I64),
               (np.uint8, gizml.DType.U8)]


@pytest.mark.parametrize("np_type,dtype", NUMPY_TYPES)
def test_numpy_dlpack_is_the_same_memory_both_ways(np_type, dtype):
    a = np.arange(12).astype(np_type).reshape(3, 4)
    g = gizml.from_dlpack(a)
    assert g.dtype == dtype and g.shape == [3, 4] and g.data_ptr() == a.ctypes.data
    a[1, 2] = 7
    assert g.rows(1, 2).to(gizml.DType.F32).toFloats()[2] == 7  # written through NumPy, read through gizml
    back = np.from_dlpack(g)
    assert back.dtype == np_type and back.ctypes.data == a.ctypes.data
    back[2, 3] = 5
    assert a[2, 3] == 5


def test_dlpack_keeps_the_owner_alive():
    g = gizml.Tensor.normal(gizml.Key(4, 4), [1000])
    expected = g.toFloats()
    a = np.from_dlpack(g)
    del g  # the capsule holds the Tensor, and so its storage
    assert a.tolist() == expected
    b = np.arange(6, dtype=np.float32)
    view = gizml.from_dlpack(b).rows(2, 4)
    del b  # the view holds NumPy's array
    assert view.toFloats() == [2.0, 3.0]
    assert gizml.numpy(view).tolist() == [2.0, 3.0]


def test_dlpack_refuses_strides_and_unknown_types_clearly():
    a = np.zeros((4, 3), dtype=np.float32)
    expect_error(lambda: gizml.from_dlpack(a.T), "gizml.from_dlpack: tensor: expected a contiguous row-major",
                 "strides [1, 3]")
    expect_error(lambda: gizml.from_dlpack(a[:, ::2]), "contiguous")
    expect_error(lambda: gizml.from_dlpack(np.zeros(3, dtype=np.uint16)), "gizml.from_dlpack: dtype")
    assert gizml.from_dlpack(a[1:3]).shape == [2, 3]  # a row slice is contiguous
    assert gizml.from_dlpack(np.zeros((0, 5), np.float32)).numel() == 0
    assert gizml.from_dlpack(np.ones((3, 1), np.float32).T).shape == [1, 3]  # extents of 1: any stride
    i4 = gizml.Tensor.zeros([4], gizml.DType.I4)
    expect_error(lambda: np.from_dlpack(i4), "gizml.Tensor.__dlpack__: dtype: I4")
    assert gizml.from_dlpack(np.array(2.5, np.float32)).shape == [] and gizml.from_dlpack(np.array(2.5, np.float32)).toFloats() == [2.5]


def test_errors_carry_the_cpp_message():
    t = gizml.Tensor.zeros([3, 2])
    msg = expect_error(lambda: t.rows(2, 4), "gizml::Tensor::rows: r0, r1: expected 0 <= r0 <= r1 <= 3")
    assert msg.startswith("gizml::Tensor::rows")
    expect_error(lambda: t.reshape([4]), "gizml::Tensor::reshape: shape")
    expect_error(lambda: gizml.Tensor.empty([-1]), "gizml::Tensor::empty: shape")
    expect_error(lambda: gizml.Tensor.fromFloats([1.0], [2]), "values")
    expect_error(lambda: t.dim(5), "axis")
    expect_error(lambda: t.dropout(gizml.Key(), 2.0), "dropout")
    expect_error(lambda: gizml.lazyMatmul(t, gizml.Tensor.zeros([2, 3])).store(), "lazyMatmul")
