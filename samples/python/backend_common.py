"""Helpers the backend samples share: finding the package, timing, counting kernels."""

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402


def device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timeStep(step, warmup=5, runs=50):
    """(median wall time of a step, synchronized; median host time of the call alone), in us."""
    for _ in range(warmup):
        step()
    sync()
    walls, hosts = [], []
    for _ in range(runs):
        sync()
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        hosts.append((t1 - t0) * 1e6)
        walls.append((t2 - t0) * 1e6)
    return statistics.median(walls), statistics.median(hosts)


def timeEvents(step, cuda=None, warmup=3, runs=20):
    """Median time of a step in us, taken with CUDA events around each run
    (on the GPU's clock, host time between launches included); with
    cuda=False (the default without a GPU) the wall time of each run."""
    if cuda is None:
        cuda = torch.cuda.is_available()
    with torch.no_grad():
        for _ in range(warmup):
            step()
        sync()
        if not cuda:
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                step()
                times.append((time.perf_counter() - t0) * 1e6)
            return statistics.median(times)
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(runs)]
        for start, end in pairs:
            start.record()
            step()
            end.record()
        torch.cuda.synchronize()
        return statistics.median(start.elapsed_time(end) * 1e3 for start, end in pairs)


def kernelsPerStep(step):
    """CUDA kernels one call of `step` launches (torch.profiler, CUPTI: it sees
    minijit's driver launches as well as PyTorch's)."""
    if not torch.cuda.is_available():
        return None
    from torch.profiler import ProfilerActivity, profile
    step()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        sync()
    return sum(1 for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA and "memcpy" not in e.name.lower()
               and "memset" not in e.name.lower())


def maxDiff(a, b):
    return (a.float() - b.float()).abs().max().item()
