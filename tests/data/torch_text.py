"""The text format of the PyTorch values the tests read (tests/support/torch_data.hpp), shared by
the make_torch_*_values.py scripts: blocks of "case <op> <name> <ints...>" followed by
"<field> <hex floats...>" lines; hex floats lose nothing."""
import torch


def line(name, t):
    """A field line: the tensor's values, flattened, as float64 hex floats."""
    flat = t.detach().to(torch.float64).flatten().tolist()
    return name + " " + " ".join(float(v).hex() for v in flat)


def emit(*lines):
    for l in lines:
        print(l)


def header():
    print(f"# PyTorch {torch.__version__}, float32 on the CPU")
