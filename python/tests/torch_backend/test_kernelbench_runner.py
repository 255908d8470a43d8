"""bench/kernelbench/run.py on small KernelBench-style problem files (CPU mode):
one problem checked over the seeds and timed, a failing one reported without
stopping the run, the conv filter, and the table's counts."""

import importlib.util
import math
import os
import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[3]

RUNNER = ROOT / "bench" / "kernelbench" / "run.py"

PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.softmax(torch.nn.functional.gelu(self.linear(x)), dim=1)

batch_size = 64
in_features = 12
out_features = 7

def get_inputs():
    return [torch.randn(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features]
'''

BROKEN = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        raise RuntimeError("this problem is broken on purpose")

def get_inputs():
    return [torch.randn(4, 4)]

def get_init_inputs():
    return []
'''

MATVEC = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)

M = 64
K = 48

def get_inputs():
    return [torch.rand(M, K), torch.rand(K, 1)]

def get_init_inputs():
    return []
'''

CONV = '''
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3)
'''


def runner():
    spec = importlib.util.spec_from_file_location("kernelbench_run", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_problem_checked_and_timed(tmp_path):
    run = runner()
    path = tmp_path / "99_Gemm_GELU_Softmax.py"
    path.write_text(PROBLEM)
    r = run.runProblem(str(path), 2, dev="cpu", batchCut=4, runs=2, warmup=1, inductor=False)
    assert r["error"] is None, r["error"]
    assert r["name"] == "99_Gemm_GELU_Softmax" and r["level"] == 2
    assert r["correct"] is True
    assert 0.0 <= r["max_abs_err"] < 1e-4
    assert r["islands"] >= 1 and r["kernels"] >= 1
    assert r["eager_us"] > 0 and r["minijit_us"] > 0 and r["inductor_us"] is None


def test_batch_cut_shrinks_the_inputs(tmp_path):
    run = runner()
    path = tmp_path / "1_P.py"
    path.write_text(PROBLEM)
    module = run.sample.load("cut_probe", path=str(path))
    assert run.cutBatch(module, 4) is False and module.batch_size == 16
    assert run.makeInputs(module, "cpu", False, 4)[0].shape[0] == 16
    assert run.cutBatch(module, 1000) is False and module.batch_size == 2
    assert [run.cutSize(n, 1000) for n in (1, 2, 3, 4000)] == [1, 2, 2, 4]


def test_input_budget_cuts_through_the_sizing_global(tmp_path):
    # No batch_size: M, the first input's first dim, is cut (B [K, 1] is left whole),
    # by the power of two that brings the inputs within the budget.
    run = runner()
    path = tmp_path / "4_MatVec.py"
    path.write_text(MATVEC)
    module = run.sample.load("matvec_probe", path=str(path))
    assert run.inputBytes(module) == (64 * 48 + 48) * 4
    assert run.memoryCut(module, 0) == 1
    assert run.memoryCut(module, (16 * 48 + 48) * 4) == 4
    assert run.leadingSize(module) == "M"
    assert run.cutBatch(module, 4) is False and module.M == 16 and module.K == 48
    record = run.runProblem(str(path), 1, dev="cpu", runs=1, warmup=0, inductor=False,
                            inputBudget=(16 * 48 + 48) * 4)
    assert record["error"] is None and record["correct"] is True
    assert record["batch_cut"] == 4


def test_float64_check_judges_what_the_tolerance_cannot():
    # Sums that cancel: eager's and any other order's results differ from the exact
    # value by rounding; the check compares each with a float64 run of the model.
    run = runner()

    class Sum(torch.nn.Module):
        def forward(self, x):
            return x.sum(dim=1)

    x = torch.randn(4, 100000) * 1e4
    eager = Sum()(x)
    other = x.flip(1).sum(dim=1)
    eagerErr, otherErr = run.float64Errors(Sum(), [x], eager, other)
    assert 0 < eagerErr and 0 < otherErr < 10 * eagerErr
    wrong = eager + 100.0  # far past the rounding of either order
    assert run.float64Errors(Sum(), [x], eager, wrong)[1] > 2 * eagerErr


def test_table_marks_random_and_float64_problems():
    run = runner()
    base = {"level": 2, "max_abs_err": 0.0, "islands": 1, "kernels": 1, "fallbacks": [], "error": None,
            "eager_us": 10.0, "inductor_us": 10.0, "minijit_us": 10.0, "direct_us": 10.0}
    table = run.markdown([dict(base, name="r", correct=None, random=True, batch_cut=1),
                          dict(base, name="f", correct=True, exact_err=(1e-3, 1.5e-3), batch_cut=8)])
    assert "| 2 | r | 1 |" in table and "| random |" in table
    assert "| 2 | f | 8 |" in table and "| yes (f64) |" in table
    assert "random (not comparable with eager) 1; batch cut to fit memory 1; correct by the float64 check 1" in table


def test_failing_problem_reported(tmp_path):
    run = runner()
    path = tmp_path / "3_Broken.py"
    path.write_text(BROKEN)
    r = run.runProblem(str(path), 1, dev="cpu", runs=1, warmup=0, inductor=False)
    assert r["error"] is not None and "broken on purpose" in r["error"]
    assert r["error"].startswith("eager:")
    assert r["minijit_us"] is None


def test_find_problems_skips_conv(tmp_path):
    run = runner()
    folder = tmp_path / "KernelBench" / "level1"
    folder.mkdir(parents=True)
    (folder / "10_Gemm.py").write_text(PROBLEM)
    (folder / "2_Gemm.py").write_text(PROBLEM)
    (folder / "5_Conv.py").write_text(CONV)
    names = [run.problemName(p) for _, p in run.findProblems(str(tmp_path), [1, 2])]
    assert names == ["2_Gemm", "10_Gemm"]
    withConv = [run.problemName(p) for _, p in run.findProblems(str(tmp_path), [1], skipConv=False)]
    assert withConv == ["2_Gemm", "5_Conv", "10_Gemm"]
    assert [run.problemName(p) for _, p in run.findProblems(str(tmp_path), [1], only=["10_"])] == ["10_Gemm"]


def test_table_counts_and_geomeans():
    run = runner()
    base = {"level": 1, "max_abs_err": 0.0, "islands": 1, "kernels": 1, "fallbacks": [], "error": None}
    records = [dict(base, name="a", eager_us=40.0, inductor_us=20.0, minijit_us=10.0, direct_us=9.0, correct=True),
               dict(base, name="b", eager_us=10.0, inductor_us=10.0, minijit_us=40.0, direct_us=40.0, correct=True),
               dict(base, name="c", eager_us=10.0, inductor_us=10.0, minijit_us=1.0, correct=False,
                    fallbacks=["aten.sort: no lowering"])]
    table = run.markdown(records)
    assert "correct 2 of 3; faster than eager 1; at least as fast as Inductor 1; no minijit subgraph 0" in table
    assert f"over eager {math.sqrt(4.0 * 0.25):.3f}" in table
    assert f"over Inductor {math.sqrt(2.0 * 0.25):.3f}" in table
    assert "| aten.sort: no lowering | 1 |" in table
    # c left an op to PyTorch and has no direct time: only a and b count, b within 5 %
    assert f"geomean {math.sqrt(10.0 / 9.0):.3f}, within 5 % on 1 of 2 problems" in table
    assert "| 9.0 | 1.111 |" in table


def test_compare_follows_kernelbench_tolerance():
    run = runner()
    x = torch.ones(3, 4)
    assert run.compare(x, x + 5e-5) == (True, run.compare(x, x + 5e-5)[1])
    close, worst = run.compare(x, x + 1e-3)
    assert close is False and abs(worst - 1e-3) < 1e-6
    assert run.compare(x, torch.ones(4, 3)) == (False, math.inf)
    assert run.compare((x, x), (x,)) == (False, math.inf)


def test_problem_on_gpu_beside_inductor(tmp_path):
    """The GPU path of the runner: CUDA-event timing, inputs made on the device, Inductor."""
    if not torch.cuda.is_available():
        pytest.skip("SKIPPED: no CUDA device")
    run = runner()
    path = tmp_path / "99_Gemm_GELU_Softmax.py"
    path.write_text(PROBLEM)
    r = run.runProblem(str(path), 2, dev="cuda", runs=5, warmup=2, inductor=True)
    assert r["error"] is None, r["error"]
    assert r["correct"] is True and r["max_abs_err"] < 1e-4
    assert r["islands"] >= 1
    assert r["eager_us"] > 0 and r["minijit_us"] > 0 and r["inductor_us"] > 0
    assert 0 < r["direct_us"] <= r["minijit_us"] * 1.5


HINGE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))

batch_size = 64
input_shape = (64,)
dim = 1

def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]

def get_init_inputs():
    return []
'''


def test_eager_refusing_the_cut_batch_cuts_the_sizes_tied_to_it(tmp_path):
    # The hinge loss broadcasts targets [batch] against predictions [batch, 64]:
    # only equal sizes agree. Cut alone, eager refuses; the retry cuts input_shape's
    # 64 with the batch (not dim = 1) and runs cut, not at the published sizes.
    run = runner()
    path = tmp_path / "100_HingeLoss.py"
    path.write_text(HINGE)
    module = run.sample.load("hinge_probe", path=str(path))
    assert run.cutBatch(module, 4, tied=True) is False
    assert (module.batch_size, module.input_shape, module.dim) == (16, (16,), 1)
    record = run.runWithRetry(str(path), 1, dev="cpu", batchCut=4, runs=1, warmup=0, inductor=False)
    assert record["error"] is None and record["correct"] is True
    assert record["batch_cut"] == 4 and record["tied"] is True
    assert record["first_try"].startswith("batch ÷ 4: eager: RuntimeError")
    assert "| 1 | 100_HingeLoss | 4 tied |" in run.markdown([record])


def test_find_problems_keeps_a_conversion(tmp_path):
    run = runner()
    folder = tmp_path / "KernelBench" / "level3"
    folder.mkdir(parents=True)
    (folder / "48_Mamba.py").write_text(PROBLEM + "\n# 4. Compute state-to-output conversion\n")
    (folder / "5_Conv.py").write_text(CONV)
    assert [run.problemName(p) for _, p in run.findProblems(str(tmp_path), [3])] == ["48_Mamba"]


def test_allow_rnn_lets_dynamo_trace_recurrent_layers(tmp_path, capsys):
    run = runner()
    folder = tmp_path / "KernelBench" / "level3"
    folder.mkdir(parents=True)
    (folder / "39_GRU.py").write_text(PROBLEM)
    try:
        assert run.main(["--root", str(tmp_path), "--levels", "3", "--device", "cpu", "--list", "--allow-rnn"]) == 0
        assert torch._dynamo.config.allow_rnn is True
        assert "3 39_GRU" in capsys.readouterr().out
        run.main(["--root", str(tmp_path), "--levels", "3", "--device", "cpu", "--list"])
        assert torch._dynamo.config.allow_rnn is False
    finally:
        torch._dynamo.config.allow_rnn = False


RANDOM_STATE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        h0 = torch.randn(x.shape[0], 4)  # level 3 #35 draws its LSTM's initial states so
        return torch.tanh(x * 2.0 + h0)

batch_size = 8

def get_inputs():
    return [torch.randn(batch_size, 4)]

def get_init_inputs():
    return []
'''


def test_random_ops_that_drew_alike_are_judged(tmp_path):
    # torch.randn left to PyTorch draws from the seed the runner sets before each call,
    # as eager's does: the outputs match, and the problem counts as correct.
    run = runner()
    path = tmp_path / "35_RandomState.py"
    path.write_text(RANDOM_STATE)
    record = run.runProblem(str(path), 3, dev="cpu", runs=1, warmup=0, inductor=False)
    assert record["error"] is None and record["random"] is True
    assert record["correct"] is True and record["islands"] >= 1
    assert "| yes |" in run.markdown([record])


def test_retry_oom_runs_again_only_what_ran_out_of_memory(tmp_path, capsys):
    # Two shards' logs: 10_Gemm ran out of memory on both tries, 2_Gemm on the first
    # only (its retry ran), 3_Broken failed otherwise. Only 10_Gemm runs again, and
    # --from-json keeps its new record, saved last.
    import json
    run = runner()
    folder = tmp_path / "KernelBench" / "level1"
    folder.mkdir(parents=True)
    for name in ("10_Gemm", "2_Gemm"):
        (folder / f"{name}.py").write_text(PROBLEM)
    (folder / "3_Broken.py").write_text(BROKEN)
    oom = "eager: OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"
    shard = tmp_path / "kb0.jsonl"
    base = {"level": 1, "eager_us": None, "inductor_us": None, "minijit_us": None, "direct_us": None,
            "correct": None, "max_abs_err": None, "islands": None, "kernels": None, "fallbacks": [],
            "batch_cut": 1}
    shard.write_text("\n".join(json.dumps(dict(base, **r)) for r in [
        {"name": "10_Gemm", "error": oom, "first_try": "batch ÷ 1: " + oom},
        {"name": "2_Gemm", "eager_us": 9.0, "minijit_us": 5.0, "direct_us": 5.0, "correct": True,
         "max_abs_err": 0.0, "islands": 1, "kernels": 1, "error": None, "first_try": "batch ÷ 1: " + oom},
        {"name": "3_Broken", "error": "eager: RuntimeError: broken"},
    ]) + "\n")
    assert run.outOfMemory([str(shard)]) == {(1, "10_Gemm")}
    assert run.main(["--root", str(tmp_path), "--levels", "1", "--device", "cpu", "--no-inductor",
                     "--runs", "1", "--warmup", "0", "--retry-oom", str(shard), "--list"]) == 0
    assert capsys.readouterr().out.split("\n")[0] == "1 10_Gemm"
    retry = tmp_path / "kb_retry.jsonl"
    assert run.main(["--root", str(tmp_path), "--levels", "1", "--device", "cpu", "--no-inductor",
                     "--runs", "1", "--warmup", "0", "--retry-oom", str(shard)]) == 0
    lines = [json.loads(l) for l in capsys.readouterr().out.splitlines() if l.startswith("{")]
    assert [r["name"] for r in lines] == ["10_Gemm"] and lines[0]["error"] is None
    retry.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    run.main(["--from-json", str(shard), str(retry)])
    table = capsys.readouterr().out
    assert "correct 2 of 3" in table
    # nothing left to retry: a message, exit 0
    assert run.main(["--root", str(tmp_path), "--levels", "1", "--device", "cpu", "--retry-oom", str(retry)]) == 0
    with pytest.raises(SystemExit):
        run.main(["--root", str(tmp_path), "--retry-oom", str(tmp_path / "missing.jsonl")])


def test_gpu_turn_raises_the_threads_priority_and_gives_it_back(tmp_path):
    run = runner()
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with run.gpuTurn(str(tmp_path / "lock")):
        inside = os.getpriority(os.PRIO_PROCESS, 0)
    after = os.getpriority(os.PRIO_PROCESS, 0)
    with run.gpuTurn(None):  # no shards: no lock, no change
        unlocked = os.getpriority(os.PRIO_PROCESS, 0)
    assert after == before and unlocked == before
    if os.geteuid() == 0:  # only root may lower a nice value
        assert inside == min(before, run.TURN_NICE)
    else:
        assert inside == before
