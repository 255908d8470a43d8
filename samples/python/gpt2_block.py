#!/usr/bin/env python3
"""A GPT-2 block (transformers.GPT2Config, random weights: nothing downloaded)
through torch.compile(backend="minijit"), forward and backward, against eager.

    PYTHONPATH=python MINIJIT_LIBRARY=build/lib/libminijit_c.so python3 samples/python/gpt2_block.py

Prints what went to minijit and what stayed in PyTorch (explain), the largest
differences of the output and of every parameter's gradient against eager,
and, on a GPU, the time of a forward+backward step for eager, minijit and
Inductor. Exit status 0 when within tolerance (fp32, TF32 off: 1e-4 relative
to the largest value), 1 when not; SKIPPED (exit 0) without transformers.
Dropout is off (eval mode for dropout only: its random numbers would differ).
"""

import argparse
import copy
import sys

import backend_common as common
import torch

import minijit.torch  # noqa: F401

TOLERANCE = 1e-4


def makeBlock(size):
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    config = GPT2Config(n_embd=size["embd"], n_head=size["heads"], n_layer=1, n_positions=size["seq"],
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    config._attn_implementation = "eager"
    return GPT2Block(config, layer_idx=0)


class Wrapped(torch.nn.Module):
    """The block's hidden-state output alone (it returns a tuple in some versions)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, h):
        out = self.block(h)
        return out[0] if isinstance(out, (tuple, list)) else out


def step(model, h):
    for p in model.parameters():
        p.grad = None
    out = model(h)
    out.square().mean().backward()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="a small block (the CPU reference's size)")
    ap.add_argument("--no-inductor", action="store_true")
    a = ap.parse_args()
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("SKIPPED: transformers is not installed (pip install transformers)")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = common.device()
    small = a.small or dev == "cpu"
    size = dict(embd=64, heads=4, seq=16, batch=2) if small else dict(embd=768, heads=12, seq=1024, batch=4)
    torch.manual_seed(0)
    base = Wrapped(makeBlock(size)).to(dev)
    h = torch.randn(size["batch"], size["seq"], size["embd"], device=dev)
    print(f"GPT-2 block {size} on {dev}")
    minijit.torch.explain(copy.deepcopy(base), h, backward=True)
    torch._dynamo.reset()

    eager = copy.deepcopy(base)
    ref = step(eager, h).detach()
    refGrads = {n: p.grad.clone() for n, p in eager.named_parameters()}
    model = copy.deepcopy(base)
    run = torch.compile(model, backend="minijit")
    out = step(run, h).detach()
    outScale = ref.abs().max().item()
    worstOut = common.maxDiff(out, ref) / outScale
    worstGrad, worstName = 0.0, ""
    for n, p in model.named_parameters():
        d = common.maxDiff(p.grad, refGrads[n]) / max(refGrads[n].abs().max().item(), 1e-12)
        if d > worstGrad:
            worstGrad, worstName = d, n
    ok = worstOut <= TOLERANCE and worstGrad <= TOLERANCE
    print(f"output: max |diff| / max |eager| = {worstOut:.2e}")
    print(f"gradients: worst max |diff| / max |eager| = {worstGrad:.2e} ({worstName})")
    if dev == "cuda":
        variants = [("eager", eager), ("minijit", run)]
        if not a.no_inductor:
            variants.append(("inductor", torch.compile(copy.deepcopy(base))))
        print(f"{'variant':<10} {'step us':>10} {'host us':>10} {'kernels':>8}")
        for name, m in variants:
            wall, host = common.timeStep(lambda: step(m, h), runs=20)
            print(f"{name:<10} {wall:>10.1f} {host:>10.1f} {common.kernelsPerStep(lambda: step(m, h)):>8}")
    print(f"GPT-2 block forward and backward {'match' if ok else 'DO NOT match'} eager "
          f"(relative tolerance {TOLERANCE:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
