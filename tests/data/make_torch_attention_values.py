#!/usr/bin/env python3
"""Writes torch_attention.txt: PyTorch's scaled_dot_product_attention for netops::attention.

The tests (tests/attention_test.cpp) read the inputs from the file too, so the data is the whole
contract; this script only says where it came from. Run with any PyTorch (CPU):
    python3 tests/data/make_torch_attention_values.py > tests/data/torch_attention.txt
Values are written as hex floats, so nothing is lost in the text.

Causal attention with tq < tk is gizml's (and the seed's) decoder mask, query i seeing keys
j <= i + tk - tq (aligned to the last key, as with a KV cache). PyTorch's is_causal aligns to the
first key instead (j <= i), so those cases pass that mask as attn_mask; with tq = tk the two agree
and is_causal is used.
"""
import torch
import torch.nn.functional as F
from torch_text import emit, header, line

torch.manual_seed(20261203)

header()

for name, b, tq, tk, d, e, causal, scale in [("plain", 2, 5, 7, 8, 6, 0, 0.3),
                                             ("causal_square", 2, 6, 6, 4, 5, 1, 0.5),
                                             ("causal_cache", 1, 3, 9, 16, 16, 1, 0.25),
                                             ("cache_no_mask", 1, 3, 9, 16, 16, 0, 0.25),
                                             ("long", 1, 4, 40, 32, 8, 0, 32 ** -0.5),
                                             ("long_causal", 2, 17, 40, 64, 24, 1, 0.125)]:
    q = torch.randn(b, tq, d).float()
    k = torch.randn(b, tk, d).float()
    v = torch.randn(b, tk, e).float()
    if causal and tq == tk:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    elif causal:
        mask = torch.ones(tq, tk, dtype=torch.bool).tril(diagonal=tk - tq)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    else:
        out = F.scaled_dot_product_attention(q, k, v, scale=scale)
    emit(f"case attention {name} {b} {tq} {tk} {d} {e} {causal}",
         line("scale", torch.tensor([scale], dtype=torch.float64)), line("q", q), line("k", k), line("v", v),
         line("out", out))
