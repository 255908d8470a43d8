#!/usr/bin/env python3
"""Pictures of where the time goes, from minijit's profile JSON (docs/PROFILE_JSON.md).

    scripts/plot.py validate FILE...                  check files against the schema, say what they hold
    scripts/plot.py roofline FILE... -o OUT [--graph NAME]... [--title T]
                                                      every kernel on a roofline (profiles, the suite)
    scripts/plot.py timeline FILE -o OUT [--graph NAME] one run as a timeline, fused above unfused
    scripts/plot.py sweep FILE... -o OUT [--title T]  time and throughput against size (sweeps)
    scripts/plot.py merge FILE... -o OUT.json         one sweep file from minijit's and the anchors'

OUT is a path without extension: OUT.png and OUT.svg are written (--formats).
The files come from `minijit run|compare --profile-json`, `minijit_bench --json`,
`minijit_bench --sweep NAME --json` and `bench/torch_anchor.py --sweep NAME --json`.
A file of another schema version, or one that lacks a field, is refused with
a message that names the file and the field, and exit status 1. `validate`
and `merge` need only Python 3; the pictures need matplotlib
(scripts/install-deps.sh installs it; Debian: python3-matplotlib).
"""
import argparse
import json
import math
import os
import re
import sys
import textwrap

SCHEMA = 1
KINDS = ("profile", "suite", "sweep")

# ---- the schema: the fields each object must have, and their types

NUM, INT, STR, BOOL, LIST, OBJ = "number", "integer", "string", "boolean", "list", "object"

HEADER_FIELDS = {"schema": INT, "kind": STR, "tool": STR, "date": STR, "device": OBJ}
DEVICE_FIELDS = {"name": STR, "copy_gbps": NUM, "peaks": LIST}
PEAK_FIELDS = {"unit": STR, "dtype": STR, "flops_per_s": NUM}
TIME_FIELDS = {"min": NUM, "median": NUM, "max": NUM}
KERNEL_FIELDS = {
    "index": INT, "name": STR, "kind": STR, "schedule": STR, "time_us": OBJ, "start_us": NUM,
    "bytes": INT, "flops": INT, "flops_by_dtype": LIST, "intensity": NUM, "gbps": NUM,
    "copy_fraction": NUM, "flops_per_s": NUM, "grid": INT, "block": INT, "blocks_per_sm": INT,
    "waves": NUM, "last_wave_fill": NUM, "registers": INT, "spill_bytes": INT,
    "shared_bytes": INT, "fusion_reasons": LIST,
}
FLOP_FIELDS = {"unit": STR, "dtype": STR, "flops": INT}
RUN_FIELDS = {"graph": STR, "label": STR, "fusion": BOOL, "timed_runs": INT, "total_us": NUM,
              "bytes": INT, "flops": INT, "kernels": LIST}
ROW_FIELDS = {"workload": STR, "mode": STR, "us": NUM, "kernels": LIST}
SERIES_FIELDS = {"impl": STR, "mode": STR, "label": STR, "points": LIST}
POINT_FIELDS = {"group": STR, "x": NUM, "workload": STR, "time_us": OBJ, "timed_runs": INT,
                "bytes": NUM, "flops": NUM}
GROUP_FIELDS = {"name": STR, "x_label": STR, "throughput": STR}


class SchemaError(Exception):
    """A file that is not what this script reads; the message says where and why."""


def type_ok(value, kind):
    if kind == NUM:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, {STR: str, BOOL: bool, LIST: list, OBJ: dict}[kind])


def need(obj, fields, where):
    if not isinstance(obj, dict):
        raise SchemaError(f"{where}: expected an object, got {type(obj).__name__}")
    for key, kind in fields.items():
        if key not in obj:
            raise SchemaError(f"{where}: missing field '{key}'")
        if not type_ok(obj[key], kind):
            raise SchemaError(f"{where}.{key}: expected {'an' if kind[0] in 'aeiou' else 'a'} {kind}, "
                              f"got {json.dumps(obj[key])[:60]}")


def check_kernel(k, where):
    need(k, KERNEL_FIELDS, where)
    need(k["time_us"], TIME_FIELDS, where + ".time_us")
    for j, f in enumerate(k["flops_by_dtype"]):
        need(f, FLOP_FIELDS, f"{where}.flops_by_dtype[{j}]")
    for j, r in enumerate(k["fusion_reasons"]):
        if not isinstance(r, str):
            raise SchemaError(f"{where}.fusion_reasons[{j}]: expected a string")


def check_doc(doc):
    """Raises SchemaError unless `doc` is a file of this schema version."""
    if not isinstance(doc, dict):
        raise SchemaError("expected a JSON object at the top")
    if "schema" not in doc:
        raise SchemaError("missing field 'schema' (not a minijit profile file, or one written "
                          f"before the schema existed; this script reads schema {SCHEMA})")
    if doc["schema"] != SCHEMA:
        raise SchemaError(f"unknown schema version {json.dumps(doc['schema'])} (this script reads "
                          f"schema {SCHEMA}; see docs/PROFILE_JSON.md)")
    need(doc, HEADER_FIELDS, "top")
    if doc["kind"] not in KINDS:
        raise SchemaError(f"top.kind: unknown kind '{doc['kind']}' (expected one of {', '.join(KINDS)})")
    need(doc["device"], DEVICE_FIELDS, "device")
    for i, p in enumerate(doc["device"]["peaks"]):
        need(p, PEAK_FIELDS, f"device.peaks[{i}]")
    kind = doc["kind"]
    if kind == "profile":
        need(doc, {"runs": LIST}, "top")
        if not doc["runs"]:
            raise SchemaError("runs: empty (nothing was profiled)")
        for i, r in enumerate(doc["runs"]):
            need(r, RUN_FIELDS, f"runs[{i}]")
            for j, k in enumerate(r["kernels"]):
                check_kernel(k, f"runs[{i}].kernels[{j}]")
    elif kind == "suite":
        need(doc, {"timed_runs": INT, "rows": LIST}, "top")
        for i, r in enumerate(doc["rows"]):
            need(r, ROW_FIELDS, f"rows[{i}]")
            for j, k in enumerate(r["kernels"]):
                check_kernel(k, f"rows[{i}].kernels[{j}]")
    else:
        need(doc, {"sweep": STR, "series": LIST}, "top")
        for i, g in enumerate(doc.get("groups", [])):
            need(g, GROUP_FIELDS, f"groups[{i}]")
            if g["throughput"] not in ("flops", "bytes"):
                raise SchemaError(f"groups[{i}].throughput: expected 'flops' or 'bytes', got '{g['throughput']}'")
        for i, s in enumerate(doc["series"]):
            need(s, SERIES_FIELDS, f"series[{i}]")
            for j, p in enumerate(s["points"]):
                where = f"series[{i}].points[{j}]"
                need(p, POINT_FIELDS, where)
                need(p["time_us"], TIME_FIELDS, where + ".time_us")
                for k, kr in enumerate(p.get("kernels", [])):
                    check_kernel(kr, f"{where}.kernels[{k}]")


def load(path, kinds=KINDS):
    """The file at `path`, checked; exits with status 1 and a message when it is not usable."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}: not JSON: {e}")
    try:
        check_doc(doc)
    except SchemaError as e:
        fail(f"{path}: {e}")
    if doc["kind"] not in kinds:
        fail(f"{path}: a file of kind '{doc['kind']}'; this picture needs {' or '.join(kinds)}")
    return doc


def fail(msg):
    print(f"plot.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


# ---- what the pictures draw, independent of matplotlib

def runs_of(doc):
    """(graph, label, fused, kernels) per run of a profile or suite file."""
    if doc["kind"] == "profile":
        return [(r["graph"], r["label"], r["fusion"], r["kernels"]) for r in doc["runs"]]
    return [(r["workload"], r["mode"], r["mode"] == "fused", r["kernels"]) for r in doc["rows"]
            if r["kernels"]]


def pretty_rate(flops_per_s):
    for unit, scale in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
        if flops_per_s >= scale:
            return f"{flops_per_s / scale:.3g} {unit}"
    return f"{flops_per_s / 1e6:.3g} MFLOP/s"


UNIT_NAMES = {"cuda_cores": "CUDA cores", "tensor_cores": "tensor cores"}


def footer(doc):
    d = doc["device"]
    return f"{d['name']}  ·  {doc['date'][:10]}"


def safe_id(text):
    return re.sub(r"[^A-Za-z0-9_.-]", "-", text)


def summary(doc):
    kind = doc["kind"]
    d = doc["device"]
    head = (f"schema {doc['schema']}, {kind}, {d['name']}, copy {d['copy_gbps']:.0f} GB/s, "
            f"{len(d['peaks'])} peak{'s' if len(d['peaks']) != 1 else ''}")
    if kind in ("profile", "suite"):
        runs = runs_of(doc)
        kernels = sum(len(r[3]) for r in runs)
        return f"{head}; {len(runs)} run{'s' if len(runs) != 1 else ''}, {kernels} kernel{'s' if kernels != 1 else ''}"
    points = sum(len(s["points"]) for s in doc["series"])
    return f"{head}; sweep {doc['sweep']}: {len(doc['series'])} series, {points} points"


# ---- matplotlib

def pyplot():
    try:
        import matplotlib
    except ImportError:
        fail(f"matplotlib is not installed for {sys.executable}; install it with "
             "scripts/install-deps.sh (Debian: apt-get install python3-matplotlib) "
             "or pip install matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({
        "svg.fonttype": "none",      # text stays text in the SVG: labels can be found
        "svg.hashsalt": "minijit",   # the same ids from run to run
        "font.size": 9,
        "axes.titlesize": 10,
    })
    return plt


DPI = 110  # --dpi: 110 gives PNGs of 50-150 KB, small enough for docs/


def save(fig, out, formats):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    written = []
    for fmt in formats:
        path = f"{out}.{fmt}"
        meta = {"Date": None} if fmt == "svg" else {}
        fig.savefig(path, format=fmt, dpi=DPI, metadata=meta)
        written.append(path)
    print("wrote " + ", ".join(written))


def corner(fig, doc, extra=""):
    """The GPU and the date in the bottom right corner, the tools that measured above them."""
    tool = doc["tool"] if len(doc["tool"]) <= 120 else doc["tool"][:117] + "..."
    fig.text(0.995, 0.005, footer(doc) + extra, ha="right", va="bottom", fontsize=8, color="0.2",
             gid="corner")
    fig.text(0.995, 0.005 + 11 / (fig.get_figheight() * 72), tool, ha="right", va="bottom",
             fontsize=6, color="0.45")


def place_labels(ax, items, fontsize=6.5):
    """Labels right of their points, moved down past the ones already placed (display space)."""
    fig = ax.figure
    fig.canvas.draw()
    trans = ax.transData
    placed = []
    height = fontsize * 1.35 * fig.dpi / 72
    order = sorted(items, key=lambda it: -trans.transform((it[0], it[1]))[1])
    box = ax.get_window_extent()
    for x, y, text, gid, color in order:
        px, py = trans.transform((x, y))
        width = len(text) * fontsize * 0.62 * fig.dpi / 72
        lx, home = px + 7, py - height / 3
        if lx + width > box.x1 - 2:  # no room on the right: on the left of the point
            lx = px - 7 - width
        ly = home
        for step in range(80):  # 0, +1, -1, +2, -2 ... lines away from the point
            ly = home + height * ((step + 1) // 2) * (1 if step % 2 else -1)
            if ly < box.y0 + 2 or ly + height > box.y1 - 2:
                continue
            if all(lx + width < bx or lx > bx + bw or ly + height < by or ly > by + bh
                   for bx, by, bw, bh in placed):
                break
        else:
            ly = home  # no room left: on top of another rather than outside the axes
        placed.append((lx, ly, width, height))
        dx, dy = (lx - px) * 72 / fig.dpi, (ly - py) * 72 / fig.dpi
        arrow = dict(arrowstyle="-", color=color, lw=0.4, alpha=0.6) if abs(ly - py + height / 3) > 2 else None
        ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                    color=color, va="bottom", ha="left", gid=gid, arrowprops=arrow,
                    annotation_clip=False)


MAX_LABELS = 24  # more points than this: one label per cluster of points that touch


def group_labels(ax, labels, radius=7):
    """One label per cluster of points within `radius` pixels: "poi_mul x12, poi_add x3"."""
    trans = ax.transData
    clusters = []  # [(px, py), [label items]]
    for item in sorted(labels, key=lambda it: (it[0], it[1])):
        px, py = trans.transform((item[0], item[1]))
        for (cx, cy), members in clusters:
            if abs(px - cx) <= radius and abs(py - cy) <= radius:
                members.append(item)
                break
        else:
            clusters.append(((px, py), [item]))
    out = []
    for _, members in clusters:
        if len(members) == 1:
            out.append(members[0])
            continue
        counts = {}
        for m in members:
            base = re.sub(r"_k[0-9]+$", "", m[2])
            counts[base] = counts.get(base, 0) + 1
        parts = [f"{b} x{n}" if n > 1 else b for b, n in counts.items()]
        text = ", ".join(parts[:3]) + (f" +{len(parts) - 3} more" if len(parts) > 3 else "")
        colors = {m[4] for m in members}
        x, y, _, gid, color = members[0]
        out.append((x, y, text, gid, color if len(colors) == 1 else "0.25"))
    return out


def cmd_roofline(a):
    docs = [load(p, ("profile", "suite")) for p in a.files]
    plt = pyplot()
    base = docs[0]
    bw = base["device"]["copy_gbps"] * 1e9
    peaks = base["device"]["peaks"]
    points = []  # (intensity, flop/s, run, kernel, graph, label, fused)
    graphs = []
    for d, doc in enumerate(docs):
        for r, (graph, label, fused, kernels) in enumerate(runs_of(doc)):
            if a.graph and graph not in a.graph:
                continue
            if graph not in graphs:
                graphs.append(graph)
            for k in kernels:
                points.append((k["intensity"], k["flops_per_s"], f"f{d}r{r}", k, graph, label, fused))
    if not points:
        fail("no kernels to draw" + (f" for --graph {', '.join(a.graph)}" if a.graph else ""))
    drawn = [(i, f) for i, f, *_ in points if i > 0 and f > 0]
    xs = [i for i, _ in drawn] or [1.0]
    ys = [f for _, f in drawn] or [1e12]
    top = max([p["flops_per_s"] for p in peaks] + ys)
    xmin = min(xs + [top / bw / 100 if bw > 0 else 1]) / 4
    xmax = max(xs + ([max(p["flops_per_s"] for p in peaks) / bw] if peaks and bw > 0 else [])) * 8
    ymin = min(ys) / 6
    ymax = top * 3
    fig, ax = plt.subplots(figsize=(9, 6))
    fig.subplots_adjust(left=0.09, right=0.97, top=0.92, bottom=0.12)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin / 1e12, ymax / 1e12)
    # The roofs: bandwidth x intensity up to each peak, then the peak.
    if bw > 0:
        xr = [xmin, min(xmax, top / bw)]
        ax.plot(xr, [bw * x / 1e12 for x in xr], color="0.2", lw=1.6, gid="roof-memory")
        # the label along the line, a third of the way from the left edge to the ridge
        lx = xmin * (xr[1] / xmin) ** 0.3
        (x0, y0), (x1, y1) = ax.transData.transform([(xr[0], bw * xr[0] / 1e12), (xr[1], bw * xr[1] / 1e12)])
        angle = math.degrees(math.atan2(y1 - y0, x1 - x0))
        ax.annotate(f"memory roof: {base['device']['copy_gbps']:.0f} GB/s (measured device-to-device copy)",
                    (lx, bw * lx / 1e12), xytext=(-4, 5), textcoords="offset points", rotation=angle,
                    rotation_mode="anchor", fontsize=7.5, color="0.2", gid="roof-memory-label")
    styles = ["-", "--", "-.", ":"]
    by_rate = {}
    for p in peaks:
        by_rate.setdefault((p["unit"], p["flops_per_s"]), []).append(p)
    for n, ((unit, rate), same) in enumerate(sorted(by_rate.items(), key=lambda kv: -kv[0][1])):
        ridge = rate / bw if bw > 0 else xmin
        for p in same:  # one roof per unit and dtype; equal ones share a label
            ax.plot([max(ridge, xmin), xmax], [rate / 1e12] * 2, color="0.35", lw=1.2,
                    ls=styles[n % len(styles)], gid=safe_id(f"roof-compute-{unit}-{p['dtype']}"))
        dtypes = ", ".join(p["dtype"] for p in same)
        ax.annotate(f"{UNIT_NAMES.get(unit, unit)} {dtypes}: {pretty_rate(rate)} (peak)",
                    (xmax, rate / 1e12), xytext=(-4, 3), textcoords="offset points", ha="right",
                    fontsize=7.5, color="0.3", gid=safe_id(f"roof-compute-{unit}-{same[0]['dtype']}-label"))
    # The kernels: fused filled, unfused hollow; one colour per graph.
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    labels = []
    for i, f, run, k, graph, label, fused in points:
        color = palette[graphs.index(graph) % len(palette)] if len(graphs) > 1 else (
            palette[0] if fused else palette[3])
        x = i if i > 0 else xmin * 1.5
        y = f / 1e12 if f > 0 else ymin * 1.5 / 1e12
        marker = "o" if fused else "s"
        if i <= 0 or f <= 0:
            marker = "v"
        gid = safe_id(f"point-{run}-k{k['index']}")
        ax.plot([x], [y], marker=marker, ms=8 if fused else 6.5, mew=1.3, color=color,
                mfc=color if fused else "none", ls="none", gid=gid)
        text = k["name"] + (" (no FLOPs)" if f <= 0 else "")
        labels.append((x, y, text, safe_id(f"label-{run}-k{k['index']}"), color))
    if len(labels) > MAX_LABELS:
        labels = group_labels(ax, labels)
    place_labels(ax, labels)
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], marker="o", color="0.3", mfc="0.3", ls="none", label="fused kernel"),
               Line2D([], [], marker="s", color="0.3", mfc="none", ls="none", label="unfused kernel (one per op)")]
    if len(graphs) > 1:
        handles += [Line2D([], [], marker="o", color=palette[n % len(palette)], ls="none", label=g)
                    for n, g in enumerate(graphs)]
    else:
        handles = [Line2D([], [], marker="o", color=palette[0], ls="none", label="fused kernel"),
                   Line2D([], [], marker="s", color=palette[3], mfc="none", ls="none",
                          label="unfused kernel (one per op)")]
    ax.legend(handles=handles, loc="upper left", fontsize=8, framealpha=0.9)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved through DRAM)")
    ax.set_ylabel("achieved throughput (TFLOP/s)")
    ax.grid(True, which="major", alpha=0.3)
    counts = {}
    for *_, graph, label, fused in points:
        counts[label] = counts.get(label, 0) + 1
    what = ", ".join(graphs) if len(graphs) <= 2 else f"{len(graphs)} graphs"
    title = a.title or (f"Roofline of {what}: " +
                        ", ".join(f"{n} {label} kernel{'s' if n != 1 else ''}" for label, n in counts.items()))
    ax.set_title(textwrap.fill(title, 100))
    corner(fig, base)
    save(fig, a.out, a.formats)


def cmd_timeline(a):
    doc = load(a.files[0], ("profile", "suite"))
    plt = pyplot()
    runs = runs_of(doc)
    graph = a.graph[0] if a.graph else runs[0][0]
    mine = [r for r in runs if r[0] == graph]
    if not mine:
        fail(f"{a.files[0]}: no run of graph '{graph}' (it has: {', '.join(sorted({r[0] for r in runs}))})")
    mine.sort(key=lambda r: not r[2])  # fused first: drawn on top
    kinds = sorted({k["kind"] or "unknown" for r in mine for k in r[3]})
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {kd: palette[n % len(palette)] for n, kd in enumerate(kinds)}
    fig, ax = plt.subplots(figsize=(10, 1.9 + 1.1 * len(mine)))
    fig.subplots_adjust(left=0.1, right=0.98, top=0.86, bottom=0.33 if len(mine) < 3 else 0.22)
    totals = [sum(k["time_us"]["median"] for k in r[3]) for r in mine]
    longest = max(totals)
    ax.set_xlim(0, longest * 1.25)
    fig.canvas.draw()
    px_per_us = ax.get_window_extent().width / (longest * 1.25)
    slowest = max(totals)
    for row, (g, label, fused, kernels) in enumerate(mine):
        y = len(mine) - 1 - row
        start = 0.0
        free = [0.0, 0.0]  # per level of labels above the bars: the first pixel still free
        for k in kernels:
            w = k["time_us"]["median"]
            ax.barh(y, w, left=start, height=0.6, color=color[k["kind"] or "unknown"],
                    edgecolor="white", lw=0.8, gid=safe_id(f"bar-{label}-k{k['index']}"))
            text_px = len(k["name"]) * 6.5 * 0.6 * fig.dpi / 72
            if w * px_per_us > text_px + 4:
                ax.text(start + w / 2, y, k["name"], ha="center", va="center", fontsize=6.5,
                        color="white", gid=safe_id(f"barlabel-{label}-k{k['index']}"))
            else:  # too narrow: the name above the bar, on the first level with room
                at = start * px_per_us
                level = next((n for n in range(2) if free[n] <= at), None)
                if level is not None:
                    ax.text(start, y + 0.34 + 0.17 * level, k["name"], ha="left", va="bottom",
                            fontsize=6.5, color="0.15", gid=safe_id(f"barlabel-{label}-k{k['index']}"))
                    free[level] = at + text_px + 4
            start += w
        faster = f", {slowest / start:.2f}x faster" if start < slowest else ""
        ax.text(start + longest * 0.01, y, f"{len(kernels)} kernel{'s' if len(kernels) != 1 else ''}, "
                f"{start:.1f} µs{faster}", va="center", fontsize=8)
    ax.set_yticks(range(len(mine)))
    ax.set_yticklabels([r[1] for r in reversed(mine)])
    ax.set_ylim(-0.6, len(mine) - 0.2)
    ax.set_xlabel("time within one run (µs); kernels end to end at their median times, launch gaps not drawn")
    ax.set_title(a.title or f"One run of graph {graph}: kernels in launch order, width = time")
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(color=color[kd], label=f"{kd} kernel") for kd in kinds], loc="lower left",
               bbox_to_anchor=(0.1, 0.0), ncol=len(kinds), fontsize=7.5, frameon=False)
    corner(fig, doc)
    save(fig, a.out, a.formats)


SERIES_STYLE = {  # impl, mode -> colour, marker, line style, width
    ("minijit", "fused"): ("#1f77b4", "o", "-", 2.2),
    ("minijit", "unfused"): ("#1f77b4", "s", "--", 1.2),
    ("cublas", "anchor"): ("black", "^", "-", 1.4),
    ("torch_library", "anchor"): ("#ff7f0e", "^", "-", 1.4),
    ("torch_eager", "anchor"): ("0.5", "v", ":", 1.2),
    ("torch_compile", "anchor"): ("#2ca02c", "D", "-", 1.2),
    ("triton", "anchor"): ("#d62728", "P", "-", 1.4),
}


def merge_sweeps(docs, paths):
    names = {d["sweep"] for d in docs}
    if len(names) != 1:
        fail("these files hold different sweeps: " + ", ".join(f"{p} ({d['sweep']})" for p, d in zip(paths, docs)))
    devices = {d["device"]["name"] for d in docs}
    if len(devices) != 1:
        print("plot.py: warning: the files come from different devices: " + ", ".join(sorted(devices)),
              file=sys.stderr)
    base = max(docs, key=lambda d: len(d["device"]["peaks"]))  # the one that knows the roofs
    out = {k: v for k, v in base.items() if k not in ("series", "groups", "notes", "sources")}
    out["tool"] = "; ".join(d["tool"] for d in docs)
    out["sources"] = [{"tool": d["tool"], "date": d["date"], "device": d["device"]["name"],
                       "copy_gbps": d["device"]["copy_gbps"], "method": d.get("method", "")} for d in docs]
    groups, seen = [], set()
    for d in docs:
        for g in d.get("groups", []):
            if g["name"] not in seen:
                seen.add(g["name"])
                groups.append(g)
    out["groups"] = groups
    out["notes"] = [n for d in docs for n in d.get("notes", [])]
    out["series"] = [s for d in docs for s in d["series"]]
    return out


def cmd_merge(a):
    docs = [load(p, ("sweep",)) for p in a.files]
    out = merge_sweeps(docs, a.files)
    check_doc(out)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {a.out}: {summary(out)}")


def peak_for(doc, dtype):
    """The roof a group of this dtype is held to: tensor cores for f16/bf16, CUDA cores for f32."""
    unit = "cuda_cores" if dtype == "f32" else "tensor_cores"
    for p in doc["device"]["peaks"]:
        if p["unit"] == unit and p["dtype"] == dtype:
            return p
    return None


def cmd_sweep(a):
    docs = [load(p, ("sweep",)) for p in a.files]
    doc = merge_sweeps(docs, a.files) if len(docs) > 1 else docs[0]
    plt = pyplot()
    groups = list(doc.get("groups", []))
    known = {g["name"] for g in groups}
    for s in doc["series"]:
        for p in s["points"]:
            if p["group"] not in known:
                known.add(p["group"])
                groups.append({"name": p["group"], "x_label": "size", "throughput": "flops" if p["flops"] > 0 else "bytes"})
    groups = [g for g in groups if any(p["group"] == g["name"] for s in doc["series"] for p in s["points"])]
    if not groups:
        fail("the sweep has no points")
    bw = doc["device"]["copy_gbps"]
    width = max(8.0, 4.6 * len(groups) + 1.2)
    fig, axes = plt.subplots(2, len(groups), figsize=(width, 8.4), squeeze=False)
    fig.subplots_adjust(left=0.8 / width, right=0.98, top=0.9, bottom=0.22, wspace=0.28, hspace=0.32)
    handles = {}
    for c, g in enumerate(groups):
        at, ar = axes[0][c], axes[1][c]
        flops = g["throughput"] == "flops"
        xs_all = set()
        limit = {}  # x -> (bytes, flops)
        for s in doc["series"]:
            pts = sorted((p for p in s["points"] if p["group"] == g["name"]), key=lambda p: p["x"])
            if not pts:
                continue
            color, marker, ls, lw = SERIES_STYLE.get((s["impl"], s["mode"]), ("0.4", "x", "-", 1.0))
            xs = [p["x"] for p in pts]
            ts = [p["time_us"]["median"] for p in pts]
            rate = [(p["flops"] / (p["time_us"]["median"] * 1e6)) if flops else
                    (p["bytes"] / (p["time_us"]["median"] * 1e3)) for p in pts]
            gid = safe_id(f"series-{s['impl']}-{s['mode']}-{g['name']}")
            h, = at.plot(xs, ts, color=color, marker=marker, ls=ls, lw=lw, ms=5, label=s["label"], gid=gid + "-time")
            ar.plot(xs, rate, color=color, marker=marker, ls=ls, lw=lw, ms=5, gid=gid + "-rate")
            handles.setdefault(s["label"], h)
            for p in pts:
                xs_all.add(p["x"])
                limit.setdefault(p["x"], (p["bytes"], p["flops"]))
        xs = sorted(xs_all)
        peak = peak_for(doc, g.get("dtype", g["name"] if g["name"] in ("f32", "f16", "bf16") else "f32"))
        if bw > 0:
            h, = at.plot(xs, [limit[x][0] / (bw * 1e3) for x in xs], color="0.15", ls=(0, (1, 2)), lw=1.2,
                         label=f"copy-bandwidth limit (bytes / {bw:.0f} GB/s)", gid=safe_id(f"limit-copy-{g['name']}"))
            handles.setdefault(h.get_label(), h)
        if flops and peak:
            h, = at.plot(xs, [limit[x][1] / peak["flops_per_s"] * 1e6 for x in xs], color="0.45",
                         ls="-.", lw=1.0, label="compute limit (FLOPs / peak of the dtype's units)",
                         gid=safe_id(f"limit-peak-{g['name']}"))
            handles.setdefault(h.get_label(), h)
            ar.axhline(peak["flops_per_s"] / 1e12, color="0.45", ls="-.", lw=1.0, gid=safe_id(f"limit-peak-{g['name']}-rate"))
            ar.annotate(f"peak, {UNIT_NAMES.get(peak['unit'], peak['unit'])} {peak['dtype']}: "
                        f"{pretty_rate(peak['flops_per_s'])}", (xs[0], peak["flops_per_s"] / 1e12),
                        xytext=(2, -10), textcoords="offset points", fontsize=7, color="0.35")
        if not flops and bw > 0:
            ar.axhline(bw, color="0.15", ls=(0, (1, 2)), lw=1.2, gid=safe_id(f"limit-copy-{g['name']}-rate"))
            ar.annotate(f"copy bandwidth: {bw:.0f} GB/s", (xs[0], bw), xytext=(2, 3), textcoords="offset points",
                        fontsize=7, color="0.25")
        for ax in (at, ar):
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs)
            ax.set_xticklabels([str(int(x)) if float(x).is_integer() else str(x) for x in xs],
                               rotation=45 if len(xs) > 6 else 0, fontsize=7.5)
            ax.minorticks_off()
            ax.grid(True, which="major", alpha=0.3)
            ax.set_xlabel(g["x_label"])
        at.set_yscale("log")
        plain_log_ticks(at.yaxis, *at.get_ylim())
        ar.set_yscale("log" if not flops else "linear")
        if flops:
            ar.set_ylim(bottom=0)
        else:
            plain_log_ticks(ar.yaxis, *ar.get_ylim())
        at.set_title(f"{g['name']}: time", fontsize=9.5)
        ar.set_title(f"{g['name']}: throughput", fontsize=9.5)
        at.set_ylabel("time per call (µs, median)")
        ar.set_ylabel("TFLOP/s (useful matmul FLOPs)" if flops else "GB/s (inputs read + outputs written once)")
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", bbox_to_anchor=(0.5, 0.035),
               ncol=min(3, len(handles)), fontsize=7.5, frameon=False)
    title = a.title or f"Sweep: {doc.get('title', doc['sweep'])}"
    fig.suptitle(title, fontsize=11)
    notes = doc.get("notes", [])
    for n in notes:
        print(f"plot.py: note: {n}", file=sys.stderr)
    corner(fig, doc, f"  ·  {len(notes)} note{'s' if len(notes) != 1 else ''} in the data" if notes else "")
    save(fig, a.out, a.formats)


def plain_log_ticks(axis, lo, hi):
    """Ticks at 1, 2, 5 x 10^k (1 x 10^k only over more than four decades), written plainly."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator
    decades = math.log10(max(hi, lo * 1.0001) / lo) if lo > 0 else 10
    axis.set_major_locator(LogLocator(base=10, subs=(1.0,) if decades > 4 else (1.0, 2.0, 5.0)))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def cmd_validate(a):
    for p in a.files:
        doc = load(p)
        print(f"{p}: ok ({summary(doc)})")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="plot.py", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fn in (("validate", cmd_validate), ("roofline", cmd_roofline), ("timeline", cmd_timeline),
                     ("sweep", cmd_sweep), ("merge", cmd_merge)):
        p = sub.add_parser(name)
        p.add_argument("files", nargs="+", metavar="FILE")
        p.set_defaults(fn=fn)
        if name == "validate":
            continue
        p.add_argument("-o", "--out", required=True,
                       help="output path without extension" if name != "merge" else "the merged JSON file")
        if name == "merge":
            continue
        p.add_argument("--formats", type=lambda s: [f for f in s.split(",") if f], default=["png", "svg"])
        p.add_argument("--title", default="")
        p.add_argument("--dpi", type=int, default=110, help="pixels per inch of the PNG (default 110)")
        if name in ("roofline", "timeline"):
            p.add_argument("--graph", action="append", default=[], help="only this graph (repeatable)")
    a = ap.parse_args(argv)
    global DPI
    DPI = getattr(a, "dpi", 110)
    if a.cmd == "timeline" and len(a.files) != 1:
        ap.error("timeline takes one file")
    a.fn(a)


if __name__ == "__main__":
    main()
