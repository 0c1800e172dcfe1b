"""Helpers shared by the Python tests (numpy is required; torch is optional)."""

import ctypes

import pytest

import gizml


def host_bytes(t: gizml.Tensor) -> bytes:
    """The tensor's bytes (any dtype, BF16 included, which NumPy lacks), read on the host."""
    h = t.to(gizml.Device.host())
    return ctypes.string_at(h.data_ptr(), h.bytes()) if h.bytes() else b""


def normal(k: int, shape):
    """The inputs cpp_values.cpp draws: Tensor::normal(Key{k, 7}, shape)."""
    return gizml.Tensor.normal(gizml.Key(k, 7), shape)


def expect_error(fn, *fragments):
    """fn() raises gizml.Error whose message holds every fragment (the C++ message)."""
    with pytest.raises(gizml.Error) as info:
        fn()
    for f in fragments:
        assert f in str(info.value), str(info.value)
    return str(info.value)
