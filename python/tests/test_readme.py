"""The README's Python quick start runs as written: its NumPy block always, its PyTorch block where
torch is installed."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def quick_start_blocks():
    text = README.read_text()
    section = text.split("## From Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_has_both_blocks():
    blocks = quick_start_blocks()
    assert len(blocks) == 2 and "import torch" not in blocks[0] and "import torch" in blocks[1]


def test_readme_numpy_block(capsys):
    exec(compile(quick_start_blocks()[0], "README.md (NumPy)", "exec"), {})
    assert "gizml::netops::layerNorm: weight: expected shape [256], got [255]" in capsys.readouterr().out


def test_readme_torch_block():
    torch = pytest.importorskip("torch", reason="torch is not installed (CI does not install it)")
    scope = {}
    exec(compile(quick_start_blocks()[1], "README.md (PyTorch)", "exec"), scope)
    assert scope["loss"].item() > 0
    assert all(p.grad is not None for p in scope["model"].parameters())
    assert scope["h"].shape == (2, 64, 16, 16) and bool(scope["h"].isfinite().all())
    assert scope["q"].dtype == torch.int8 and scope["out"].shape == (2, 6, 64)
    assert bool(scope["out"].isfinite().all()) and bool(scope["out"].abs().max() > 0)
