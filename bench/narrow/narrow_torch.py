#!/usr/bin/env python3
"""PyTorch on the graphs of bench/narrow/*.mj, timed as `minijit run FILE --bench` times
them (bench/matmul/torch_matmul.py's median_us): one line per graph, "NAME: eager N us,
torch.compile N us, copy N us" (the copy reads and writes the graph's largest input
once: the bound of a kernel that reads it once and writes as much).

    python3 bench/narrow/narrow_torch.py [FILE.mj ...]   # default: every graph of the folder

The work of each graph is written here by its file name, as PyTorch code writes it; f32,
TF32 off. NetVLAD is KernelBench's model (level 3, 46 and 47) in training mode, the batch
norm's statistics included, when a KernelBench checkout is named by KB_ROOT; else skipped.
"""
import glob
import importlib.util
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "matmul"))
from torch_matmul import median_us  # noqa: E402


def rand(*shape):
    return torch.rand(*shape, device="cuda") * 2 - 1


def batchnormStats(x):
    var, mean = torch.var_mean(x, 0, unbiased=False, keepdim=True)
    return mean, var


def work(name):
    """(function, inputs) of the graph named `name`, or None."""
    if name == "narrow_f32_204800x512x32":
        return (lambda x, w: x @ w), [rand(204800, 512), rand(512, 32)]
    if name == "narrow_f32_100003x256x17":
        return (lambda x, w, b: x @ w + b), [rand(100003, 256), rand(256, 17), rand(17)]
    if name == "bmm_f32_2048x32x100x512_at":
        return (lambda a, b: a.transpose(1, 2) @ b), [rand(2048, 100, 32), rand(2048, 100, 512)]
    if name == "rows32_f32_32x4096x50000":
        return (lambda x, w: x @ w), [rand(32, 4096), rand(4096, 50000)]
    if name == "colvar_f32_204800x32":
        return batchnormStats, [rand(204800, 32)]
    if name == "batchnorm_f32_500000x100":
        return (lambda x: F.batch_norm(x, None, None, training=True, eps=1e-5)), [rand(500000, 100)]
    if name == "colsoftmax_f32_65537x40":
        return (lambda x: torch.softmax(x, 0)), [rand(65537, 40)]
    if name.startswith("netvlad") and os.environ.get("KB_ROOT"):
        ghost = name.endswith("_g16")
        problem = "46_NetVladWithGhostClusters" if ghost else "47_NetVladNoGhostClusters"
        path = os.path.join(os.environ["KB_ROOT"], "KernelBench", "level3", problem + ".py")
        spec = importlib.util.spec_from_file_location(problem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        model = module.Model(*module.get_init_inputs()).cuda()
        return model, [t.cuda() for t in module.get_inputs()]
    return None


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    for path in sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "*.mj"))):
        name = os.path.splitext(os.path.basename(path))[0]
        found = work(name)
        if found is None:
            print(f"{name}: SKIPPED (no PyTorch form here; NetVLAD needs KB_ROOT)", flush=True)
            continue
        fn, inputs = found
        with torch.no_grad():
            eager = median_us(lambda: fn(*inputs))
            compiled = torch.compile(fn)
            inductor = median_us(lambda: compiled(*inputs))
            largest = max(inputs, key=lambda t: t.numel())
            copy = median_us(lambda: largest.clone())
        print(f"{name}: eager {eager:.2f} us, torch.compile {inductor:.2f} us, copy {copy:.2f} us",
              flush=True)
        del inputs, fn
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
