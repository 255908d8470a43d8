#!/usr/bin/env python3
"""The pictures (scripts/plot.py) from the recorded files beside this one, checked as files.

ctest runs it (the `plot` test) with a Python that has matplotlib:

    python3 tests/plot/test_plot.py --script scripts/plot.py --fixtures tests/plot --out build/tests/plot

profile_gelu.json: the lecture's GeLU over 2^26 floats, fused (1 kernel) and
unfused (9 kernels), as the writer of `minijit compare --profile-json` writes
it (made by tests/unit/ProfileJsonTest.cpp with MINIJIT_WRITE_FIXTURE set;
times from a model of the H200, not a measurement). sweep_matmul.json and
sweep_softmax.json: sweeps as `scripts/plot.py merge` writes them from
minijit_bench --sweep and bench/torch_anchor.py --sweep (times from the
figures in docs/ and issue 21, some estimated).
"""
import argparse
import copy
import importlib.util
import json
import os
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

ARGS = None
SVG = "{http://www.w3.org/2000/svg}"


def run_plot(*args):
    """scripts/plot.py with `args`: (exit status, stdout, stderr)."""
    p = subprocess.run([sys.executable, ARGS.script, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def read_json(path):
    with open(path) as f:
        return json.load(f)


def write_json(doc, path):
    with open(path, "w") as f:
        json.dump(doc, f)


def fixture(name):
    return os.path.join(ARGS.fixtures, name)


def out(name):
    return os.path.join(ARGS.out, name)


def svg_ids(path):
    """{id: element} of every element of the SVG with an id."""
    root = ET.parse(path).getroot()
    return {e.get("id"): e for e in root.iter() if e.get("id")}


def text_of(element):
    return "".join(t.text or "" for t in element.iter(SVG + "text"))


class Pictures(unittest.TestCase):
    def draw(self, *args):
        rc, so, se = run_plot(*args)
        self.assertEqual(rc, 0, f"plot.py {' '.join(args)} failed:\n{so}\n{se}")
        return so

    def assertPictures(self, base):
        png, svg = base + ".png", base + ".svg"
        for path in (png, svg):
            self.assertTrue(os.path.isfile(path), f"{path} was not written")
            self.assertGreater(os.path.getsize(path), 1000, f"{path} is nearly empty")
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG")
        return svg_ids(svg)

    def test_roofline_has_one_labelled_point_per_kernel_and_both_roofs(self):
        doc = read_json(fixture("profile_gelu.json"))
        self.draw("roofline", fixture("profile_gelu.json"), "-o", out("roofline_gelu"))
        ids = self.assertPictures(out("roofline_gelu"))
        kernels = [(r, k) for r, run in enumerate(doc["runs"]) for k in run["kernels"]]
        points = sorted(i for i in ids if i.startswith("point-"))
        self.assertEqual(len(points), len(kernels), f"points drawn: {points}")
        self.assertEqual(len(kernels), 10)  # 1 fused + 9 unfused
        for r, k in kernels:
            point = f"point-f0r{r}-k{k['index']}"
            self.assertIn(point, ids)
            label = ids.get(f"label-f0r{r}-k{k['index']}")
            self.assertIsNotNone(label, f"no label for {point}")
            self.assertEqual(text_of(label), k["name"])
        self.assertIn("roof-memory", ids)
        self.assertIn("4199 GB/s", text_of(ids["roof-memory-label"]))
        for p in doc["device"]["peaks"]:
            self.assertIn(f"roof-compute-{p['unit']}-{p['dtype']}", ids)
        texts = " ".join(text_of(e) for e in ids.values())
        self.assertIn("NVIDIA H200", text_of(ids["corner"]))
        self.assertIn("2026-12-01", text_of(ids["corner"]))
        self.assertIn("arithmetic intensity (FLOP per byte", texts)
        self.assertIn("fused kernel", texts)
        self.assertIn("unfused kernel", texts)

    def test_roofline_of_a_suite_file(self):
        doc = read_json(fixture("profile_gelu.json"))
        suite = {k: doc[k] for k in ("schema", "tool", "date", "device")}
        suite.update(kind="suite", timed_runs=200, rows=[
            {"workload": "gelu n=2^26", "mode": r["label"], "us": r["total_us"], "kernels": r["kernels"]}
            for r in doc["runs"]])
        path = out("suite.json")
        write_json(suite, path)
        self.draw("roofline", path, "-o", out("roofline_suite"))
        ids = self.assertPictures(out("roofline_suite"))
        self.assertEqual(len([i for i in ids if i.startswith("point-")]), 10)

    def test_timeline_has_a_bar_per_kernel_fused_above_unfused(self):
        self.draw("timeline", fixture("profile_gelu.json"), "-o", out("timeline_gelu"))
        ids = self.assertPictures(out("timeline_gelu"))
        self.assertIn("bar-fused-k0", ids)
        self.assertEqual(len([i for i in ids if i.startswith("bar-unfused-")]), 9)
        # SVG y grows downwards: the fused row is above the unfused one
        fused = float(ids["bar-fused-k0"].find(SVG + "path").get("d").split()[2])
        unfused = float(ids["bar-unfused-k0"].find(SVG + "path").get("d").split()[2])
        self.assertLess(fused, unfused)

    def test_sweep_draws_every_series_and_the_copy_limit(self):
        doc = read_json(fixture("sweep_matmul.json"))
        self.draw("sweep", fixture("sweep_matmul.json"), "-o", out("sweep_matmul"))
        ids = self.assertPictures(out("sweep_matmul"))
        for s in doc["series"]:
            for g in doc["groups"]:
                self.assertIn(f"series-{s['impl']}-{s['mode']}-{g['name']}-time", ids)
                self.assertIn(f"series-{s['impl']}-{s['mode']}-{g['name']}-rate", ids)
        for g in doc["groups"]:
            self.assertIn(f"limit-copy-{g['name']}", ids)
            self.assertIn(f"limit-peak-{g['name']}-rate", ids)
        texts = " ".join(text_of(e) for e in ids.values())
        for label in ("minijit fused", "cuBLAS (torch.matmul)", "torch.compile", "copy-bandwidth limit"):
            self.assertIn(label, texts)

    def test_memory_bound_sweep_draws_bandwidth(self):
        self.draw("sweep", fixture("sweep_softmax.json"), "-o", out("sweep_softmax"))
        ids = self.assertPictures(out("sweep_softmax"))
        self.assertIn("limit-copy-f32-rate", ids)
        self.assertIn("series-triton-anchor-f32-time", ids)
        self.assertIn("GB/s", " ".join(text_of(e) for e in ids.values()))

    def test_merge_joins_minijits_and_the_anchors_series(self):
        doc = read_json(fixture("sweep_matmul.json"))
        mine, theirs = copy.deepcopy(doc), copy.deepcopy(doc)
        mine["series"] = [s for s in doc["series"] if s["impl"] == "minijit"]
        theirs["series"] = [s for s in doc["series"] if s["impl"] != "minijit"]
        del theirs["groups"]
        theirs["device"]["peaks"] = []
        theirs["tool"] = "bench/torch_anchor.py"
        write_json(mine, out("mine.json"))
        write_json(theirs, out("theirs.json"))
        self.draw("merge", out("theirs.json"), out("mine.json"), "-o", out("merged.json"))
        merged = read_json(out("merged.json"))
        self.assertEqual(len(merged["series"]), 3)
        self.assertEqual(len(merged["device"]["peaks"]), 3)  # from the file that has them
        self.assertEqual([g["name"] for g in merged["groups"]], ["f32", "bf16"])
        so = self.draw("validate", out("merged.json"))
        self.assertIn("3 series, 30 points", so)


class Refusals(unittest.TestCase):
    def refused(self, doc, *, command="roofline"):
        for ext in ("png", "svg"):
            if os.path.exists(out("bad." + ext)):
                os.remove(out("bad." + ext))
        path = out("bad.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        rc, so, se = run_plot(command, path, "-o", out("bad")) if command != "validate" else run_plot("validate", path)
        self.assertEqual(rc, 1, f"exit {rc}; stdout {so!r}; stderr {se!r}")
        self.assertFalse(os.path.exists(out("bad.png")), "a picture was drawn from a refused file")
        self.assertIn("plot.py: error:", se)
        self.assertIn("bad.json", se)
        return se

    def profile(self):
        return read_json(fixture("profile_gelu.json"))

    def test_unknown_schema_version(self):
        doc = self.profile()
        doc["schema"] = 2
        se = self.refused(doc)
        self.assertIn("unknown schema version 2", se)
        self.assertIn("this script reads schema 1", se)

    def test_no_schema(self):
        doc = self.profile()
        del doc["schema"]
        self.assertIn("missing field 'schema'", self.refused(doc, command="validate"))

    def test_missing_kernel_field(self):
        doc = self.profile()
        del doc["runs"][1]["kernels"][3]["time_us"]
        se = self.refused(doc, command="timeline")
        self.assertIn("runs[1].kernels[3]: missing field 'time_us'", se)

    def test_missing_device_field(self):
        doc = self.profile()
        del doc["device"]["copy_gbps"]
        self.assertIn("device: missing field 'copy_gbps'", self.refused(doc))

    def test_wrong_type(self):
        doc = self.profile()
        doc["runs"][0]["kernels"][0]["intensity"] = "high"
        self.assertIn("runs[0].kernels[0].intensity: expected a number", self.refused(doc))

    def test_missing_sweep_point_field(self):
        doc = read_json(fixture("sweep_matmul.json"))
        del doc["series"][1]["points"][4]["bytes"]
        self.assertIn("series[1].points[4]: missing field 'bytes'", self.refused(doc, command="sweep"))

    def test_a_sweep_is_no_roofline(self):
        doc = read_json(fixture("sweep_matmul.json"))
        self.assertIn("this picture needs profile or suite", self.refused(doc))

    def test_not_json(self):
        path = out("bad.json")
        with open(path, "w") as f:
            f.write("{ not json")
        rc, _, se = run_plot("validate", path)
        self.assertEqual(rc, 1)
        self.assertIn("not JSON", se)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--out", required=True)
    ARGS, rest = ap.parse_known_args()
    if importlib.util.find_spec("matplotlib") is None:  # plot.py would say so in every test
        print(f"error: matplotlib is not installed for {sys.executable}, so the pictures cannot be "
              "tested. Run scripts/install-deps.sh (it installs Debian's python3-matplotlib for "
              "/usr/bin/python3) and configure again, or configure with "
              "-DMINIJIT_PLOT_PYTHON=/path/to/a/python3/with/matplotlib", file=sys.stderr)
        sys.exit(1)
    os.makedirs(ARGS.out, exist_ok=True)
    for name in os.listdir(ARGS.out):
        if name.startswith("bad."):
            os.remove(os.path.join(ARGS.out, name))
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
