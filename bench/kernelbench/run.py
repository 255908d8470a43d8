#!/usr/bin/env python3
"""KernelBench's reference problems through torch.compile(backend="minijit"),
beside eager and Inductor (issues 44 and 45).

    PYTHONPATH=python MINIJIT_LIBRARY=build/lib/libminijit_c.so \\
        python3 bench/kernelbench/run.py --root KERNELBENCH_CHECKOUT [--levels 1,2] [--only SUBSTR,...]

--root is a KernelBench checkout (or its KernelBench/ folder): the problem files
of KernelBench/level1, level2, level3 are loaded unchanged. Per problem: the
model is built in f32 on the device (torch.manual_seed(42) before
Model(*get_init_inputs())), checked as KernelBench checks (5 seeds, fresh inputs
of get_inputs() each, no_grad, allclose with atol = rtol = 1e-4, TF32 off),
and where that fails, against the model run in float64: minijit's largest error
from it at most twice eager's (+ 1e-4) is "yes (f64)" (outputs near zero of long
sums, where any other order of the additions misses a fixed tolerance). A problem
with random ops left to PyTorch is "random" unless it matched: its draws may not match eager's.
--input-budget-mib cuts the batch of a problem whose inputs are larger (by powers
of two; the table's "batch ÷" column, "tied" where eager refused the batch cut
alone and the globals of its value were cut with it), for shards that share the
GPU's memory; --allow-rnn lets Dynamo trace recurrent layers (by default
torch.compile leaves nn.LSTM, nn.GRU and nn.RNN whole to PyTorch); then eager, minijit and Inductor are timed on one set of inputs (CUDA events,
warm-up, median of --runs calls). "direct us" is the time of the same minijit
graphs run alone through the C library, as `minijit run` runs them (each
island on the tensors it got in one call of the model, the medians summed):
"backend/direct" is what the backend and the ops left to PyTorch add. The inputs are made on the device directly
(torch.device as the default device around get_inputs), which changes their
values, not their distribution. What the backend left to PyTorch comes from its
compile reports (what minijit.torch.explain prints). One JSON line per problem
goes to stdout, then a markdown table with the geomeans; progress goes to
stderr. A failing problem (exception or --timeout) is reported with its error
and the run goes on; --isolate runs each problem in a child process, for a run
that must survive a CUDA fault. Exit status 0 when the run completed, 2 on bad
arguments.

A long run can go in shards side by side on one GPU: `--shard K/N` picks every
N-th problem, `--gpu-lock FILE` (the same file for all shards) makes them take
turns on the GPU (a shard holds it from its model's first call to the last
timing; Inductor compiles outside it, while another shard runs), and
`--from-json LOG...` prints the table of the shards' saved JSON lines.
"""

import argparse
import collections
import contextlib
import copy
import fcntl
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples", "python"))

import backend_common as common  # noqa: E402  (puts python/ on the path)
import kernelbench_model as sample  # noqa: E402  (load, TOLERANCE, SEEDS)
import torch  # noqa: E402

import minijit.torch  # noqa: E402,F401
from minijit.torch import compiler as backendModule  # noqa: E402
from minijit.torch.explain import summarize  # noqa: E402
from minijit.torch.island import Island  # noqa: E402

CONV = re.compile(r"conv(?!ersion)", re.IGNORECASE)  # not Mamba2's "state-to-output conversion"


class ProblemTimeout(Exception):
    pass


def problemFolder(root, level):
    for candidate in (os.path.join(root, "KernelBench", f"level{level}"), os.path.join(root, f"level{level}")):
        if os.path.isdir(candidate):
            return candidate
    return None


def findProblems(root, levels, only=(), skipConv=True):
    """(level, path) of the problem files chosen, in KernelBench's numeric order."""
    found = []
    for level in levels:
        folder = problemFolder(root, level)
        if folder is None:
            continue
        names = [n for n in os.listdir(folder) if n.endswith(".py") and not n.startswith("__")]
        names.sort(key=lambda n: (int(n.split("_")[0]) if n.split("_")[0].isdigit() else 1 << 30, n))
        for name in names:
            path = os.path.join(folder, name)
            if only and not any(s.lower() in name.lower() for s in only):
                continue
            if skipConv:
                with open(path, encoding="utf-8") as f:
                    if CONV.search(f.read()):
                        continue
            found.append((level, path))
    return found


def problemName(path):
    return os.path.splitext(os.path.basename(path))[0]


def cutSize(size, cut):
    """size // cut, but 2 at least where it was (BatchNorm in training mode refuses a batch of 1)."""
    return max(min(size, 2), size // cut)


def metaInputs(module):
    """The problem's inputs at its published sizes on the meta device (nothing
    allocated); None where get_inputs cannot run there."""
    try:
        with torch.device("meta"):
            return module.get_inputs()
    except Exception:  # a problem that builds its inputs otherwise
        return None


def leadingSize(module):
    """The name of the module's int global that sizes its first input's first
    dim (the first defined, where several have that value): get_inputs reads
    it at call time. None where none does (or get_inputs cannot run on meta)."""
    values = metaInputs(module) or []
    first = next((v for v in values if isinstance(v, torch.Tensor) and v.dim() > 0), None)
    if first is None:
        return None
    for name, value in vars(module).items():
        if not name.startswith("_") and type(value) is int and value == first.shape[0]:
            return name
    return None


def cutBatch(module, cut, tied=False):
    """Divides the problem's batch by `cut`: its batch_size global where it has
    one, else the global that sizes the first input's first dim (M of A [M, K]
    @ B [K, 1], b of an einsum's [b, i, j, l]); both read by get_inputs at call
    time. Else the first dim of each input is sliced (True). tied: every other
    global of the batch's published value is cut with it, an int or an int in
    a tuple or list (the hinge loss's input_shape = (32768,) beside a batch of
    32768, which broadcast against each other)."""
    if cut <= 1:
        return False
    name = "batch_size" if isinstance(getattr(module, "batch_size", None), int) else leadingSize(module)
    if name is None:
        return True
    published = getattr(module, name)
    setattr(module, name, cutSize(published, cut))
    for other, value in list(vars(module).items()) if tied else ():
        if other == name or other.startswith("_"):
            continue
        if type(value) is int and value == published:
            setattr(module, other, cutSize(value, cut))
        elif isinstance(value, (tuple, list)) and published in value and all(type(v) is int for v in value):
            setattr(module, other, type(value)(cutSize(v, cut) if v == published else v for v in value))
    return False


def inputBytes(module):
    """The bytes of the problem's inputs at its published sizes (metaInputs);
    None where get_inputs cannot run on the meta device."""
    values = metaInputs(module)
    if values is None:
        return None
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def memoryCut(module, budgetBytes):
    """The smallest power of two that brings the inputs within budgetBytes (1: they fit)."""
    size = inputBytes(module) if budgetBytes else None
    cut = 1
    while size is not None and size / cut > budgetBytes:
        cut *= 2
    return cut


def makeInputs(module, dev, sliceFirst, cut):
    # Inputs to slice are made on the CPU: made whole on the GPU, they would take
    # the memory the cut is there to save.
    with torch.device("cpu" if sliceFirst else dev):
        values = module.get_inputs()
    if sliceFirst:
        values = [v[:cutSize(v.shape[0], cut)].contiguous() if isinstance(v, torch.Tensor) and v.dim() > 0
                  else v for v in values]
    return [v.to(dev) if isinstance(v, torch.Tensor) else v for v in values]


def tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in tensors(o)]
    return []


def compare(expected, got):
    """(allclose at KernelBench's tolerance, max |difference|); a shape or count mismatch is not close."""
    e, g = tensors(expected), tensors(got)
    if len(e) != len(g) or any(a.shape != b.shape for a, b in zip(e, g)):
        return False, math.inf
    close, worst = True, 0.0
    for a, b in zip(e, g):
        a, b = a.double(), b.double()
        if a.numel():
            worst = max(worst, (a - b).abs().max().item())
        close = close and torch.allclose(b, a, atol=sample.TOLERANCE, rtol=sample.TOLERANCE, equal_nan=True)
    return close, worst


def float64Errors(model, inputs, expected, got):
    """(eager's, minijit's) largest |difference| from the model run in float64 on
    the same inputs: where KernelBench's fixed tolerance fails at outputs near
    zero of long sums, a result as close to the exact one as eager's is correct.
    The caller checks only outputs whose count and shapes agree with eager's."""
    try:
        exact = tensors(copy.deepcopy(model).double()(*[v.double() if isinstance(v, torch.Tensor)
                                                      and v.is_floating_point() else v for v in inputs]))
    except Exception:  # a model that makes f32 tensors of its own: no float64 run, not judged close
        return math.inf, math.inf

    def worst(outs):
        return max(((o.double() - e).abs().max().item() for o, e in zip(outs, exact) if e.numel()), default=0.0)
    return worst(tensors(expected)), worst(tensors(got))


def minijitOptions(dev):
    return {"device": "cpu"} if dev == "cpu" else {}


# The nice value of the thread holding the GPU turn: the shards that wait
# compile (Inductor's workers, NVRTC) on every core meanwhile, and a timed
# step's launches queue behind them on the CPU (KernelBench 84 timed 3774 us
# among the shards, 1917 us alone, 2026-12-07).
TURN_NICE = -10


def raisePriority():
    """Raises this thread's CPU priority to TURN_NICE; returns the value it
    had, or None where that is not permitted (only root may lower a nice)."""
    try:
        old = os.getpriority(os.PRIO_PROCESS, 0)  # on Linux: the calling thread's
        if old > TURN_NICE:
            os.setpriority(os.PRIO_PROCESS, 0, TURN_NICE)
        return old
    except OSError:
        return None


@contextlib.contextmanager
def gpuTurn(lockPath):
    """Holds an exclusive lock on lockPath (none: no lock), so that shards of one
    run started side by side (--shard, --gpu-lock) take turns on the GPU: each
    shard compiles while another runs, and no timing shares the GPU. The turn's
    thread runs at a higher CPU priority (raisePriority), given back after."""
    if not lockPath:
        yield
        return
    with open(lockPath, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        old = raisePriority()
        try:
            yield
        finally:
            if old is not None:
                os.setpriority(os.PRIO_PROCESS, 0, old)
            fcntl.flock(f, fcntl.LOCK_UN)


def runProblem(path, level, dev="cuda", batchCut=1, runs=20, warmup=3, inductor=True, seeds=sample.SEEDS,
               gpuLock=None, inputBudget=0, tied=False):
    """Runs one problem file; returns its record (never raises for the problem's own failures).
    Everything but Inductor's compile runs in the GPU turn, without autograd.
    inputBudget (bytes, 0: none) cuts the batch of a problem whose inputs are larger;
    tied cuts the globals of the batch's value with it (cutBatch)."""
    record = {"name": problemName(path), "level": level, "eager_us": None, "inductor_us": None,
              "minijit_us": None, "direct_us": None, "correct": None, "max_abs_err": None, "islands": None,
              "kernels": None, "fallbacks": [], "error": None, "batch_cut": batchCut, "exact_err": None,
              "random": False}
    phase = "load"
    cuda = dev == "cuda"
    try:
        torch._dynamo.reset()
        module = sample.load(f"kernelbench_l{level}_{record['name']}", path=path)
        batchCut = record["batch_cut"] = max(batchCut, memoryCut(module, inputBudget))
        sliceFirst = cutBatch(module, batchCut, tied)
        record["tied"] = tied and batchCut > 1
        phase = "build"
        torch.manual_seed(42)
        with torch.device(dev):
            model = module.Model(*module.get_init_inputs())
        model = model.to(dev)
        compiled = torch.compile(model, backend="minijit", options=minijitOptions(dev))
        start = backendModule.reportCount()
        correct, worst = True, 0.0
        # All of it in the GPU turn, the first (compiling) calls too: run outside,
        # their kernels would share the GPU with another shard's timings. And all
        # of it without autograd, as KernelBench checks and times: under grad mode
        # dynamo compiles another (training) graph.
        with torch.no_grad(), gpuTurn(gpuLock):
            torch.manual_seed(seeds)
            first = makeInputs(module, dev, sliceFirst, batchCut)
            phase = "eager"
            model(*first)
            phase = "minijit"
            compiled(*first)
            del first
            for seed in range(seeds):
                phase = "eager"
                torch.manual_seed(seed)
                inputs = makeInputs(module, dev, sliceFirst, batchCut)
                torch.manual_seed(seed)
                expected = model(*inputs)
                phase = "minijit"
                torch.manual_seed(seed)
                got = compiled(*inputs)
                close, diff = compare(expected, got)
                if not close and math.isfinite(diff):  # shapes and counts agree: worth the check
                    phase = "float64 check"
                    eagerErr, minijitErr = float64Errors(model, inputs, expected, got)
                    close = math.isfinite(eagerErr) and minijitErr <= 2 * eagerErr + sample.TOLERANCE
                    seen = record["exact_err"] or (0.0, 0.0)
                    record["exact_err"] = (max(seen[0], eagerErr), max(seen[1], minijitErr))
                correct, worst = correct and close, max(worst, diff)
                del expected, got
            reports = backendModule.reportsSince(start)
            summary = summarize(reports)
            fallbacks = summary["left"] + summary["failed"]
            # Random ops left to PyTorch may draw in another order than eager's fused kernels (a
            # decomposed dropout): a mismatch proves nothing. Where they drew alike (torch.randn
            # of initial states, left whole, from the same seed) the outputs matched: correct.
            record["random"] = any("random numbers" in f for f in fallbacks)
            record.update(correct=None if record["random"] and not correct else correct, max_abs_err=worst,
                          islands=summary["islands"], kernels=summary["kernels"], fallbacks=fallbacks)
            phase = "eager timing"
            record["eager_us"] = common.timeEvents(lambda: model(*inputs), cuda, warmup, runs)
            phase = "minijit timing"
            record["minijit_us"] = common.timeEvents(lambda: compiled(*inputs), cuda, warmup, runs)
            if cuda:
                phase = "direct timing"
                record["direct_us"] = directTime(reports, compiled, inputs, warmup, runs)
        if inductor:
            phase = "inductor"
            torch._dynamo.reset()
            viaInductor = torch.compile(model)
            with torch.no_grad():
                viaInductor(*inputs)  # compiles (outside the turn: one call's kernels)
                with gpuTurn(gpuLock):
                    record["inductor_us"] = common.timeEvents(lambda: viaInductor(*inputs), cuda, warmup, runs)
    except Exception as e:  # a failing problem is reported; the run goes on
        text = f"{type(e).__name__}: {e}".strip()
        record["error"] = f"{phase}: {text[:600]}"
        if phase == "minijit":
            record["correct"] = False
    finally:
        torch._dynamo.reset()
        if cuda:
            torch.cuda.empty_cache()
    return record


def eagerRefused(record):
    return record["batch_cut"] > 1 and (record["error"] or "").startswith("eager: RuntimeError")


def runWithRetry(path, level, **options):
    """runProblem, run again where the first try failed for want of memory
    (with four times the batch cut: other shards hold memory too) or where
    eager itself refused the cut sizes (a problem whose shapes only agree at
    the published sizes, such as a batch equal to a feature size): then with
    the globals of the batch's value cut alike (tied), and where eager refuses
    those too, at the published sizes. The record says what the first try met."""
    record = runProblem(path, level, **options)
    error = record["error"] or ""
    if "OutOfMemoryError" in error:
        retried = runProblem(path, level, **dict(options, batchCut=record["batch_cut"] * 4))
    elif eagerRefused(record):
        retried = runProblem(path, level, **dict(options, tied=True))
        if eagerRefused(retried):
            retried = runProblem(path, level, **dict(options, batchCut=1, inputBudget=0))
    else:
        return record
    retried["first_try"] = f"batch ÷ {record['batch_cut']}: {error[:200]}"
    return retried


def directTime(reports, compiled, inputs, warmup, runs):
    """The summed medians of the problem's islands run alone on the GPU (the
    tensors each got in one more call of the compiled model); None without islands."""
    islands = [island for report in reports for island in report.islands]
    Island.keepInputs = True
    try:
        with torch.no_grad():
            compiled(*inputs)
    finally:
        Island.keepInputs = False
    ran = [island for island in islands if island.lastInputs is not None]
    if not ran:
        return None
    total = 0.0
    for island in ran:
        args, dims = island.lastInputs, island.lastDims
        total += common.timeEvents(lambda: island.compiled.run(*args, dims=dims), True, warmup, runs)
        island.lastInputs = None
    return total


def withTimeout(seconds, fn, *args, **kwargs):
    """fn(*args) stopped by SIGALRM after `seconds` (0: no limit); the timeout raises
    ProblemTimeout once control is back in Python (a long call into C++ or CUDA
    runs to its end; --isolate kills the child instead)."""
    if seconds <= 0 or not hasattr(signal, "SIGALRM"):
        return fn(*args, **kwargs)

    def onAlarm(signum, frame):
        raise ProblemTimeout(f"over the timeout of {seconds} s")
    previous = signal.signal(signal.SIGALRM, onAlarm)
    signal.alarm(seconds)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def runIsolated(path, level, a):
    """runProblem in a child process (a CUDA fault or a hang cannot stop the run)."""
    argv = [sys.executable, os.path.abspath(__file__), "--one", path, "--one-level", str(level),
            "--device", a.device, "--batch-cut", str(a.batch_cut), "--runs", str(a.runs),
            "--warmup", str(a.warmup), "--timeout", str(a.timeout), "--input-budget-mib", str(a.input_budget_mib)]
    if a.no_inductor:
        argv.append("--no-inductor")
    if a.allow_rnn:
        argv.append("--allow-rnn")
    if a.gpu_lock:
        argv += ["--gpu-lock", a.gpu_lock]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout + 120 if a.timeout else None)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if lines:
            return json.loads(lines[-1])
        error = f"child exited with {done.returncode}: {done.stderr.strip()[-600:]}"
    except subprocess.TimeoutExpired:
        error = f"child killed after {a.timeout + 120} s"
    return {"name": problemName(path), "level": level, "eager_us": None, "inductor_us": None,
            "minijit_us": None, "direct_us": None, "correct": None, "max_abs_err": None, "islands": None,
            "kernels": None, "fallbacks": [], "error": error}


def geomean(values):
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def markdown(records):
    """The table of the run: times, speed-ups, correctness, then geomeans, counts and the fallbacks."""
    lines = ["| level | problem | batch ÷ | eager us | Inductor us | minijit us | vs eager | vs Inductor | direct us "
             "| backend/direct | correct | max abs err | islands | kernels | error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    vsEager, vsInductor, overDirect = [], [], []
    faster = atLeastInductor = correct = 0
    for r in records:
        se = r["eager_us"] / r["minijit_us"] if r["eager_us"] and r["minijit_us"] else None
        si = r["inductor_us"] / r["minijit_us"] if r["inductor_us"] and r["minijit_us"] else None
        if r["correct"]:
            correct += 1
            if se is not None:
                vsEager.append(se)
                faster += se > 1
            if si is not None:
                vsInductor.append(si)
                atLeastInductor += si >= 1
        direct = r.get("direct_us")
        sd = r["minijit_us"] / direct if r["minijit_us"] and direct else None
        if r["correct"] and sd is not None and not r["fallbacks"]:
            overDirect.append(sd)
        ok = {True: "yes", False: "NO", None: "-"}[r["correct"]]
        if r.get("random") and not r["correct"]:
            ok = "random"
        elif r["correct"] and r.get("exact_err"):
            ok = "yes (f64)"
        error = r["error"] or (f"retried; the first try, {r['first_try']}" if r.get("first_try") else "")
        error = error.replace("|", "/").replace("\n", " ")[:80]
        cut = f"{r.get('batch_cut', 1)}{' tied' if r.get('tied') else ''}"
        lines.append(f"| {r['level']} | {r['name']} | {cut} | {fmt(r['eager_us'])} "
                     f"| {fmt(r['inductor_us'])} "
                     f"| {fmt(r['minijit_us'])} | {fmt(se, '.2f')} | {fmt(si, '.2f')} | {fmt(direct)} "
                     f"| {fmt(sd, '.3f')} | {ok} "
                     f"| {fmt(r['max_abs_err'], '.1e')} | {fmt(r['islands'], 'd')} | {fmt(r['kernels'], 'd')} "
                     f"| {error} |")
    n = len(records)
    ge, gi = geomean(vsEager), geomean(vsInductor)
    lines += ["",
              f"{n} problems; correct {correct} of {n}; faster than eager {faster}; at least as fast as "
              f"Inductor {atLeastInductor}; no minijit subgraph {sum(1 for r in records if r['islands'] == 0)}; "
              f"errors {sum(1 for r in records if r['error'])}; random (not comparable with eager) "
              f"{sum(1 for r in records if r.get('random') and not r['correct'])}; batch cut to fit memory "
              f"{sum(1 for r in records if r.get('batch_cut', 1) > 1)}; correct by the float64 check "
              f"{sum(1 for r in records if r['correct'] and r.get('exact_err'))}",
              f"geomean speed-up of minijit over eager {fmt(ge, '.3f')} ({len(vsEager)} correct problems), "
              f"over Inductor {fmt(gi, '.3f')} ({len(vsInductor)} correct problems)",
              f"the backend over the same graphs run directly, where nothing was left to PyTorch: geomean "
              f"{fmt(geomean(overDirect), '.3f')}, within 5 % on {sum(1 for v in overDirect if v <= 1.05)} "
              f"of {len(overDirect)} problems"]
    left = collections.Counter(re.sub(r" x\d+$", "", f) for r in records for f in r["fallbacks"])
    if left:
        lines += ["", "| left to PyTorch (op: reason) | problems |", "|---|---|"]
        lines += [f"| {item.replace('|', '/')[:160]} | {count} |" for item, count in left.most_common()]
    return "\n".join(lines)


def savedRecords(logs):
    """The records saved as JSON lines in logs (one per shard), by (level,
    name); a problem saved twice keeps its last record."""
    byName = {}
    for log in logs:
        with open(log, encoding="utf-8") as f:
            for line in f:
                if line.startswith("{"):
                    r = json.loads(line)
                    byName[(r["level"], r["name"])] = r
    return byName


def printSaved(logs, markdownPath):
    """The table of the records saved in logs (savedRecords), in level and
    KernelBench order."""
    byName = savedRecords(logs)
    order = lambda key: (key[0], int(key[1].split("_")[0]) if key[1].split("_")[0].isdigit() else 1 << 30, key[1])
    table = markdown([byName[k] for k in sorted(byName, key=order)])
    print(table)
    if markdownPath:
        with open(markdownPath, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    return 0


def outOfMemory(logs):
    """(level, name) of the problems whose last saved record in logs met CUDA's
    out of memory (an input too large for a shard's share of the GPU), on the
    first try or on the retry with a larger batch cut."""
    return {key for key, r in savedRecords(logs).items()
            if "OutOfMemoryError" in (r.get("error") or "") + (r.get("first_try") or "") and r.get("minijit_us") is None}


def parseArgs(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", help="a KernelBench checkout (holding KernelBench/level1 ...)")
    ap.add_argument("--levels", default="1,2", help="comma-separated levels (default 1,2)")
    ap.add_argument("--only", default="", help="comma-separated substrings of the file names to keep")
    ap.add_argument("--shard", default="", help="K/N: the K-th (from 0) of N interleaved parts of the list")
    ap.add_argument("--with-conv", action="store_true", help="keep problems whose source mentions conv")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: models on the CPU and the backend in its CPU mode (minijit's reference)")
    ap.add_argument("--batch-cut", type=int, default=1, help="divide each problem's batch by N")
    ap.add_argument("--input-budget-mib", type=int, default=0,
                    help="cut the batch (by powers of two) of a problem whose inputs pass this many MiB "
                         "(shards side by side share the GPU's memory); 0: published sizes")
    ap.add_argument("--runs", type=int, default=20, help="timed calls per variant (median)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per problem, 0 for none")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--allow-rnn", action="store_true",
                    help="Dynamo traces nn.LSTM, nn.GRU and nn.RNN into the graph (torch._dynamo.config.allow_rnn, "
                         "for minijit and Inductor alike); without it they stay whole in PyTorch")
    ap.add_argument("--isolate", action="store_true", help="each problem in a child process")
    ap.add_argument("--markdown", help="also write the markdown table to this file")
    ap.add_argument("--list", action="store_true", help="print the problems chosen and stop")
    ap.add_argument("--gpu-lock", help="a lock file shared by shards run side by side: they take turns on the GPU")
    ap.add_argument("--from-json", nargs="+", metavar="LOG",
                    help="print the table of the JSON lines saved in these logs (a sharded run) and stop")
    ap.add_argument("--retry-oom", nargs="+", metavar="LOG",
                    help="run again, alone, the problems these logs (a sharded run's JSON lines) saved as out of "
                         "memory (after the shards, when the whole GPU is free); print their new records")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--one-level", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.batch_cut < 1 or a.runs < 1 or a.warmup < 0 or a.input_budget_mib < 0:
        ap.error("--batch-cut and --runs must be at least 1, --warmup and --input-budget-mib at least 0")
    try:
        a.levels = [int(x) for x in a.levels.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--levels: not a list of numbers: {a.levels!r}")
    if a.shard:
        m = re.fullmatch(r"(\d+)/(\d+)", a.shard)
        if not m or int(m.group(1)) >= int(m.group(2)):
            ap.error(f"--shard: expected K/N with K < N, not {a.shard!r}")
        a.shard = (int(m.group(1)), int(m.group(2)))
    for log in (a.from_json or []) + (a.retry_oom or []):
        if not os.path.isfile(log):
            ap.error(f"no such log: {log}")
    if a.from_json:
        return a
    if a.one is None and not a.root:
        ap.error("--root is required")
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here (use --device cpu)")
    return a


def main(argv=None):
    a = parseArgs(sys.argv[1:] if argv is None else argv)
    if a.from_json:
        return printSaved(a.from_json, a.markdown)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch._dynamo.config.allow_rnn = a.allow_rnn
    options = dict(dev=a.device, batchCut=a.batch_cut, runs=a.runs, warmup=a.warmup, inductor=not a.no_inductor,
                   gpuLock=a.gpu_lock, inputBudget=a.input_budget_mib << 20)
    if a.one is not None:  # the child of --isolate
        print(json.dumps(withTimeout(a.timeout, runWithRetry, a.one, a.one_level, **options)), flush=True)
        return 0
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    problems = findProblems(a.root, a.levels, only, skipConv=not a.with_conv)
    if a.shard:
        problems = problems[a.shard[0]::a.shard[1]]
    if a.retry_oom:
        failed = outOfMemory(a.retry_oom)
        problems = [(level, path) for level, path in problems if (level, problemName(path)) in failed]
        if not problems:
            print(f"retry-oom: no problem ran out of memory in {' '.join(a.retry_oom)}", file=sys.stderr)
            return 0
    if a.list:
        for level, path in problems:
            print(f"{level} {problemName(path)}")
        return 0
    if not problems:
        print(f"no problems found under {a.root} for levels {a.levels}", file=sys.stderr)
        return 2
    records = []
    for i, (level, path) in enumerate(problems):
        t0 = time.time()
        print(f"[{i + 1}/{len(problems)}] level {level} {problemName(path)}", file=sys.stderr, flush=True)
        if a.isolate:
            record = runIsolated(path, level, a)
        else:
            try:
                record = withTimeout(a.timeout, runWithRetry, path, level, **options)
            except ProblemTimeout as e:  # raised outside runProblem's own handler
                record = {"name": problemName(path), "level": level, "eager_us": None, "inductor_us": None,
                          "minijit_us": None, "direct_us": None, "correct": None, "max_abs_err": None, "islands": None,
                          "kernels": None, "fallbacks": [], "error": f"timeout: {e}"}
        record["seconds"] = round(time.time() - t0, 1)
        records.append(record)
        print(json.dumps(record), flush=True)
    table = markdown(records)
    print(table)
    if a.markdown:
        with open(a.markdown, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
