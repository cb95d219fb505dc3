#!/usr/bin/python3
"""ringsim-plot: turn a ringsim trace into pictures and a Perfetto trace.

    ringsim-plot timeline ringsim-trace.db -o timeline.png
    ringsim-plot chunks   ringsim-trace.db --run 3 -o chunks.png
    ringsim-plot links    ringsim-trace.db -o links.svg
    ringsim-plot compare  ringsim-trace.db --runs 1,2,3 -o compare.png
    ringsim-plot compare  --bench bench.jsonl --model model.json -o algos.png
    ringsim-plot animate  ringsim-trace.db -o ring.gif
    ringsim-plot export   ringsim-trace.db -o trace.json   # ui.perfetto.dev
    ringsim-plot html     ringsim-trace.db -o run.html     # a page to step through

Each subcommand reads the trace with the standard sqlite3 module (the schema
is docs/trace-schema.md), takes --run ID (default: the latest run) and -o FILE
(PNG, or SVG/PDF by extension), and aggregates in SQL so traces of millions of
transfers fit in memory. Errors are one line on stderr and exit status 2.
Runs under the Python that has matplotlib (Debian: /usr/bin/python3).
"""
import argparse
import contextlib
import json
import math
import os
import shutil
import sqlite3
import stat
import sys
import tempfile

APPLICATION_ID = 0x5253696D  # "RSim", as src/io/trace.h
SCHEMA_VERSION = 1
PHASES = ("reduce_scatter", "all_gather")  # the ring's, in order
# A colour per phase of every algorithm (docs/trace-schema.md): the ring's
# two first, then recursive doubling's exchange and the reduce (linear's and
# the tree's gathering, the fold-in of rd and rhd) and broadcast phases.
PHASE_COLOURS = {"reduce_scatter": "#1f77b4", "all_gather": "#ff7f0e", "exchange": "#2ca02c",
                 "reduce": "#9467bd", "broadcast": "#17becf"}
# Short names for step labels (RS0, AG2, EX1, RED0, BC3)
PHASE_ABBREV = {"reduce_scatter": "RS", "all_gather": "AG", "exchange": "EX", "reduce": "RED",
                "broadcast": "BC"}
# What a receiver does with a payload of the phase: adds it in, or copies it
PHASE_WORK = {"reduce_scatter": "reduce", "all_gather": "copy", "exchange": "reduce",
              "reduce": "reduce", "broadcast": "copy"}
ALGO_NAMES = {"ring": "ring", "rd": "recursive-doubling (rd)", "rhd": "Rabenseifner (rhd)",
              "linear": "linear", "tree": "double-binary-tree",
              "gloo-ring": "gloo's ring (gloo-ring)",
              "auto": "auto (an algorithm per bucket: table bucket_algo)"}
# Above this many transfers, the timeline draws one bar per worker and step
# (aggregated in SQL) instead of one bar per transfer.
TIMELINE_DETAIL_LIMIT = 20000
CHUNKS_MAX_WORKERS = 16  # the ring's chunk diagram
CHUNKS_MAX_WORKERS_OTHER = 8  # every other algorithm's, as --explain


class ToolError(Exception):
    """A problem with the user's input: reported as one line, exit 2."""


# C0 controls, DEL and C1 controls (ESC starts a terminal's escape
# sequences; none is legal in XML 1.0 but tab, newline and return), and
# lone surrogates (the bytes of a file name that are not UTF-8)
_CONTROLS = {c: "?" for c in [*range(0x20), *range(0x7f, 0xa0)]}


def clean(text):
    """text as ringsim prints a name: every control character a '?' (as its
    rs_one_line), and so a surrogate; None stays None."""
    if text is None:
        return None
    text = str(text).translate(_CONTROLS)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = "".join("?" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


def progress(message):
    print(f"ringsim-plot: {clean(message)}", file=sys.stderr, flush=True)


# ---- reading the trace ---------------------------------------------------


def open_trace(path):
    """Open path read-only, refusing anything that is not a ringsim trace."""
    if not os.path.exists(path):
        raise ToolError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ToolError(f"{path}: is a directory, not a trace")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:
        raise ToolError(f"{path}: not a ringsim trace ({e})") from None
    if app_id != APPLICATION_ID:
        con.close()
        raise ToolError(f"{path}: not a ringsim trace")
    if version != SCHEMA_VERSION:
        con.close()
        raise ToolError(f"{path}: trace schema version {version}, this tool reads {SCHEMA_VERSION}")
    return con


def pick_run(con, path, run_id):
    """The run's row as a dict: the given run, or the latest."""
    con.row_factory = sqlite3.Row
    if run_id is None:
        row = con.execute("SELECT * FROM run ORDER BY run_id DESC LIMIT 1").fetchone()
        if row is None:
            raise ToolError(f"{path}: the trace holds no runs")
    else:
        row = con.execute("SELECT * FROM run WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise ToolError(f"{path}: no run {run_id}")
    con.row_factory = None
    run = dict(row)
    check_run(con, path, run)
    # the texts a picture, a title, a page or an error shows, as ringsim
    # prints them: control characters as '?' (the JSON columns are parsed)
    for key, value in run.items():
        if isinstance(value, str) and not key.endswith("_json") and key != "net_model":
            run[key] = clean(value)
    return run


# ringsim's largest -w (RS_MAX_WORKERS in include/ringsim/ringsim.h)
MAX_WORKERS = 4096
# A transfer's integer columns, and those NULL where it was never received
# or the run had no simulated network
TRANSFER_INTS = ("iter", "bucket", "step", "src", "dst", "chunk", "segment", "elem_offset", "elems",
                 "bytes", "seq", "send_begin_ns", "send_end_ns", "contrib_first", "contrib_count")
TRANSFER_NULLABLE = ("recv_begin_ns", "recv_end_ns", "wait_ns", "sim_send_ns", "sim_recv_ns")


def check_run(con, path, run):
    """Refuse a run whose row disagrees with its own rows (a trace edited or
    damaged by hand: workers=1000000000 would have the tools draw, or
    export, a billion workers): W against the worker table, the counts
    against the transfers, every transfer's workers, chunk and contributors
    within W, and the types the tools compute with. Every command's
    loading goes through here (pick_run)."""
    rid = run["run_id"]

    def bad(what):
        return ToolError(f"{path}: run {rid} is inconsistent: {what} (a damaged or edited trace)")
    for key in ("workers", "buckets", "elems", "bytes"):
        if not isinstance(run.get(key), int) or isinstance(run.get(key), bool) or run[key] < 0:
            raise bad(f"{key} is {run.get(key)!r}, not a count")
    for key in ("wall_ns", "sim_ns", "transfers"):
        if run.get(key) is not None and not isinstance(run[key], int):
            raise bad(f"{key} is {run[key]!r}, not a number of {'ns' if key != 'transfers' else 'transfers'}")
    for key in ("model", "status", "dtype", "op"):
        if not isinstance(run.get(key), str):
            raise bad(f"{key} is {run.get(key)!r}, not text")
    for key in ("error", "algo"):
        if run.get(key) is not None and not isinstance(run[key], str):
            raise bad(f"{key} is {run[key]!r}, not text")
    W = run["workers"]
    if not 1 <= W <= MAX_WORKERS:
        raise bad(f"workers is {W}, not 1..{MAX_WORKERS}")
    workers = con.execute(
        "SELECT count(*), min(worker), max(worker), sum(transfers_sent), "
        "count(*) FILTER (WHERE typeof(worker) || typeof(transfers_sent) || typeof(state) "
        "!= 'integerintegertext') FROM worker WHERE run_id = ?", (rid,)).fetchone()
    rows, first, last, sent_total, mistyped = workers
    if mistyped:
        raise bad(f"{mistyped} of its worker rows hold values of the wrong type")
    if rows and (rows != W or first != 0 or last != W - 1):
        raise bad(f"workers is {W} but the worker table has {rows} rows (workers {first}..{last})")
    # sum() is an integer only if every value it adds is one (a real or a
    # text makes it a real): a column's type in one pass, at the cost of
    # min and max (about 1.5 s for a million transfers, with the ranges)
    sums = ", ".join(f"typeof(sum({c}))" for c in TRANSFER_INTS + TRANSFER_NULLABLE)
    agg = con.execute(
        "SELECT count(*), min(src), max(src), min(dst), max(dst), min(chunk), max(chunk), "
        "min(step), max(step), min(contrib_first), max(contrib_first), min(contrib_count), "
        "max(contrib_count), min(bucket), max(bucket), min(min(segment), min(elems), min(bytes), "
        f"min(iter), min(elem_offset)), count(*) FILTER (WHERE typeof(phase) != 'text'), {sums} "
        "FROM transfer WHERE run_id = ?", (rid,)).fetchone()
    (n, src0, src1, dst0, dst1, chunk0, chunk1, step0, step1, cf0, cf1, cc0, cc1, b0, b1, low,
     bad_phase) = agg[:17]
    mistyped = [c for c, t in zip(TRANSFER_INTS + TRANSFER_NULLABLE, agg[17:])
                if t not in ("integer", "null")] + (["phase"] if bad_phase else [])
    if mistyped:
        raise bad(f"its transfer rows hold values of the wrong type in {', '.join(mistyped)}")
    if not n:
        return
    for name, lo, hi, most in (("src", src0, src1, W - 1), ("dst", dst0, dst1, W - 1),
                               ("chunk", chunk0, chunk1, 2 * W - 1), ("step", step0, step1, W - 1),
                               ("contrib_first", cf0, cf1, W - 1), ("contrib_count", cc0, cc1, W),
                               ("bucket", b0, b1, max(run["buckets"], 1) - 1)):
        if lo < (1 if name == "contrib_count" else 0) or hi > most:
            raise bad(f"a transfer's {name} is {lo if lo < 0 else hi}, out of range for "
                      f"{W} workers and {run['buckets']} buckets")
    if low < 0:
        raise bad("a transfer's iter, segment, elem_offset, elems or bytes is negative")
    if rows:
        # a worker's messages as its table counts them; an injected drop or
        # dup fault sends one the transfer table lacks or repeats
        slack = len(injected_faults(run))
        if run.get("transfers") is not None and run["transfers"] != sent_total:
            raise bad(f"transfers is {run['transfers']} but its workers sent {sent_total}")
        # one pass over the transfers (a join would scan them once a worker)
        traced_by = dict(con.execute("SELECT src, count(*) FROM transfer WHERE run_id = ? "
                                     "GROUP BY src", (rid,)))
        for w, sent in con.execute("SELECT worker, transfers_sent FROM worker WHERE run_id = ? "
                                   "ORDER BY worker", (rid,)):
            traced = traced_by.get(w, 0)
            if abs(sent - traced) > slack:
                raise bad(f"worker {w} sent {sent} transfers but the transfer table has {traced}")


def transfer_count(con, run_id):
    return con.execute("SELECT count(*) FROM transfer WHERE run_id = ?", (run_id,)).fetchone()[0]


def contributors(first, count, workers):
    return {(first + k) % workers for k in range(count)}


def ring_ranges(held, workers):
    """A set of workers as ranges round the ring: {0..6} -> '0-6',
    {14, 15, 0, 1} -> '14-1' (14, 15, 0, 1), {2} -> '2', {1, 3} -> '1,3'."""
    if not held:
        return "-"
    if len(held) == workers:
        return "all"
    # start each run at a member whose predecessor is missing
    parts = []
    for w in sorted(held):
        if (w - 1) % workers in held:
            continue
        last = w
        while (last + 1) % workers in held:
            last = (last + 1) % workers
        parts.append(str(w) if last == w else f"{w}-{last}")
    return ",".join(parts)


def run_config(run):
    """The run's config_json as a dict ({} if it is not one)."""
    try:
        config = json.loads(run.get("config_json") or "{}")
    except (TypeError, ValueError):
        return {}
    if not isinstance(config, dict):
        return {}
    if not isinstance(config.get("argv"), list):
        config["argv"] = []
    return config


def run_failed(run):
    return run["status"] not in ("ok", "running")


def status_line(run):
    """'' for a run that completed; otherwise the line a title adds."""
    if run["status"] == "ok":
        return ""
    if run["status"] == "running":
        return "INCOMPLETE: the run is still running or was killed"
    if run["status"] == "failed":
        return f"FAILED: {run['error'] or 'no error recorded'}"
    # an error that opens with its status ("abandoned: its process ...")
    # says it once: "ABANDONED: its process ..."
    status = run["status"].replace("_", " ")
    error = run["error"] or ""
    if error.startswith(status + ": "):
        error = error[len(status) + 2:]
    return f"{status.upper()}: {error}".rstrip(": ")


def titled(text, run, width=None):
    """text, with the run's failure on a second line (wrapped at width
    characters when given)."""
    line = status_line(run)
    if line and width:
        import textwrap
        line = "\n".join(textwrap.wrap(line, width))
    return f"{text}\n{line}" if line else text


def run_algo(run):
    """The run's --algo ('ring' for a trace written before the column)."""
    return run.get("algo") or "ring"


def algo_name(run):
    algo = run_algo(run)
    return ALGO_NAMES.get(algo, algo)


def phase_colour(phase):
    """The phase's colour; grey for a phase this tool does not know."""
    return PHASE_COLOURS.get(phase, "#7f7f7f")


def phase_label(phase):
    """The trace's phase name as prose: 'reduce_scatter' -> 'reduce-scatter'."""
    return clean(phase).replace("_", "-")


def phase_abbrev(phase):
    return PHASE_ABBREV.get(phase) or clean(phase)


def phases_present(con, run_id):
    """The phases of the run's transfers, in the order they first began."""
    return [r[0] for r in con.execute(
        "SELECT phase FROM transfer WHERE run_id = ? GROUP BY phase ORDER BY min(send_begin_ns)",
        (run_id,))]


def algo_steps(run):
    """The algorithm's steps in the order --inject numbers them (its global
    steps, docs/reliability.md): a list of (phase, step in the phase)."""
    W, algo = run["workers"], run_algo(run)
    P = 1 << (max(W, 1).bit_length() - 1)  # the largest power of two <= W
    L = P.bit_length() - 1
    fold = W > P

    def phase(name, n):
        return [(name, s) for s in range(n)]
    if algo == "rd":
        return phase("reduce", fold) + phase("exchange", L) + phase("broadcast", fold)
    if algo == "rhd":
        return (phase("reduce", 2 * fold) + phase("reduce_scatter", L) + phase("all_gather", L)
                + phase("broadcast", fold))
    if algo == "linear":
        return phase("reduce", W - 1) + phase("broadcast", W - 1)
    if algo == "tree":
        return phase("reduce", 1) + phase("broadcast", 1)
    return phase("reduce_scatter", W - 1) + phase("all_gather", W - 1)


def phase_step(global_step, run):
    """--inject counts steps globally, in the order the algorithm runs them
    (the ring: 0 .. W-2 reduce-scatter, then all-gather): (phase, step), or
    (None, None) for a step the algorithm does not have."""
    steps = algo_steps(run)
    if 0 <= global_step < len(steps):
        return steps[global_step]
    return None, None


def injected_faults(run):
    """The --inject specs of the run's command line, as dicts (kind, worker,
    step, ms, phase, phase_step, spec)."""
    argv = run_config(run).get("argv") or []
    specs = []
    for i, arg in enumerate(argv):
        if arg == "--inject" and i + 1 < len(argv) and isinstance(argv[i + 1], str):
            specs.append(clean(argv[i + 1]))
        elif isinstance(arg, str) and arg.startswith("--inject="):
            specs.append(clean(arg[len("--inject="):]))
    faults = []
    for spec in specs:
        kind, _, rest = spec.partition(":")
        fields = dict(kv.partition("=")[::2] for kv in rest.split(",") if kv)
        try:
            fault = {"spec": spec, "kind": kind, "worker": int(fields.get("worker", 0)),
                     "step": int(fields.get("step", 0))}
        except ValueError:
            continue
        if "ms" in fields:
            fault["ms"] = fields["ms"]
        fault["phase"], fault["phase_step"] = phase_step(fault["step"], run)
        faults.append(fault)
    return faults


def average_pre(run):
    """Whether op avg divided before the sum (--average pre) instead of where
    the sum completes (the last reduce-scatter step)."""
    config = run_config(run)
    if "average" in config:
        return config["average"] == "pre"
    argv = config.get("argv") or []
    return any(a == "--average" and i + 1 < len(argv) and argv[i + 1] == "pre"
               for i, a in enumerate(argv)) or "--average=pre" in argv


def has_sim_times(con, run):
    return con.execute(
        "SELECT count(*) FROM transfer WHERE run_id = ? AND sim_send_ns IS NOT NULL",
        (run["run_id"],)).fetchone()[0] > 0


def pick_clock(con, run, wanted):
    """'sim' or 'wall': the one asked for, else simulated when the run has it."""
    sim = has_sim_times(con, run)
    if wanted == "sim" and not sim:
        raise ToolError(f"--clock sim: run {run['run_id']} has no simulated times "
                        "(it ran without --net)")
    if wanted:
        return wanted
    return "sim" if sim else "wall"


def worker_states(con, run):
    """{worker: (state, phase, step, chunk, waiting, peer)}, texts as
    clean() prints them"""
    return {r[0]: tuple(clean(v) if isinstance(v, str) else v for v in r[1:]) for r in con.execute(
        "SELECT worker, state, phase, step, chunk, waiting, peer FROM worker WHERE run_id = ?",
        (run["run_id"],))}


def bucket_clause(bucket):
    """SQL for the bucket a replay reads: the given one, else the first
    all-reduced (the one whose first transfer was sent first)."""
    if bucket is not None:
        return f"AND bucket = {int(bucket)} "
    return ("AND bucket = (SELECT bucket FROM transfer WHERE run_id = ? ORDER BY send_begin_ns "
            "LIMIT 1) ")


def snapshot(holds):
    """A stage's holdings: the rows copied, the sets shared (a replay never
    changes a set in place, it puts a new one in the cell), so W=64's 126
    stages cost 126 x 64 lists, not half a million sets."""
    return [list(row) for row in holds]


def replay_holdings(con, run, bucket=None):
    """Replay the ring from the trace: after each step, whose contributions
    each worker's copy of each chunk holds. Returns a list of
    (title, holds, arrows, info) per stage, starting with the inputs;
    holds[w][c] is a set of workers, arrows a list of (src, dst, chunk,
    received), info a dict with the stage's phase and step (None at the start).
    A transfer sent but never received (a failed run) is an arrow with
    received False and changes nothing. bucket: which bucket (default the
    first)."""
    W = run["workers"]
    holds = [[{w} for _ in range(W)] for w in range(W)]
    stages = [("start: each worker holds its own gradient", snapshot(holds),
               [], {"phase": None, "step": None})]
    rows = con.execute(
        "SELECT phase, step, src, dst, chunk, contrib_first, contrib_count, "
        "recv_end_ns IS NOT NULL FROM transfer "
        "WHERE run_id = ? AND segment = 0 AND iter = (SELECT min(iter) FROM transfer WHERE run_id = ?) "
        + bucket_clause(bucket) + "ORDER BY phase = 'all_gather', step, src",
        (run["run_id"],) * (2 if bucket is not None else 3)).fetchall()
    by_step = {}
    for row in rows:
        by_step.setdefault((row[0], row[1]), []).append(row)
    for phase in PHASES:
        for step in range(W - 1):
            arrivals = by_step.get((phase, step), [])
            if not arrivals:
                continue
            for ph, st, src, dst, chunk, first, count, received in arrivals:
                if not received:
                    continue
                payload = contributors(first, count, W)
                if ph == "reduce_scatter":
                    holds[dst][chunk] = holds[dst][chunk] | payload
                else:
                    holds[dst][chunk] = set(payload)
            title = f"{'reduce-scatter' if phase == 'reduce_scatter' else 'all-gather'} step {step}"
            stages.append((title, snapshot(holds),
                           [(r[2], r[3], r[4], bool(r[7])) for r in arrivals],
                           {"phase": phase, "step": step}))
    return stages


def tree_chunks(W):
    """Chunks per half of the double binary tree: ceil(W/2) (algo/tree.h)."""
    return (W + 1) // 2


def receives_by_copy(algo, phase, step):
    """Does the receiver copy the payload over its own (True) or fold it in?
    The ring's all-gather and every broadcast copy; so does linear's root
    with the first buffer it takes (its own data set aside, added last) and
    rhd's even worker with its partner's summed half (fold-in step 1)."""
    if phase in ("all_gather", "broadcast"):
        return True
    return (algo == "linear" and phase == "reduce" and step == 0) or \
        (algo == "rhd" and phase == "reduce" and step == 1)


def schedule_messages(con, run, bucket=None):
    """The messages of the first bucket of the first iteration, read from
    the trace: the segments of one message (same phase, step, sender,
    receiver and contributors; for the tree, the same half) merged into one
    region. A list of dicts (phase, step, src, dst, first, count, off, end,
    received, t, half), in the order they were sent; off and end count
    elements from the bucket's start. bucket: which bucket (default the
    first)."""
    rid = run["run_id"]
    rows = con.execute(
        "SELECT phase, step, src, dst, chunk, elem_offset, elems, contrib_first, contrib_count, "
        "recv_end_ns IS NOT NULL, send_begin_ns FROM transfer "
        "WHERE run_id = ? AND iter = (SELECT min(iter) FROM transfer WHERE run_id = ?) "
        + bucket_clause(bucket) + "ORDER BY send_begin_ns, src, seq",
        (rid,) * (2 if bucket is not None else 3)).fetchall()
    H = tree_chunks(run["workers"])
    tree = run_algo(run) == "tree"
    messages = {}
    for phase, step, src, dst, chunk, off, elems, first, count, received, t in rows:
        half = chunk // H if tree else 0
        key = (phase, step, src, dst, first, count, half)
        m = messages.get(key)
        if m is None:
            messages[key] = {"phase": phase, "step": step, "src": src, "dst": dst, "first": first,
                             "count": count, "off": off, "end": off + elems,
                             "received": bool(received), "t": t, "half": half}
        else:
            m["off"], m["end"] = min(m["off"], off), max(m["end"], off + elems)
            m["received"] = m["received"] and bool(received)
    base = min((m["off"] for m in messages.values()), default=0)
    for m in messages.values():
        m["off"] -= base
        m["end"] -= base
    return list(messages.values())


def tree_depths(messages, phase, half):
    """Each worker's depth in the tree that carries half `half`, from its
    reduce messages (child -> parent): {worker: edges below the root}."""
    parent = {m["src"]: m["dst"] for m in messages if m["phase"] == phase and m["half"] == half}
    depth = {}
    for w in set(parent) | set(parent.values()):
        d, x = 0, w
        while x in parent and d <= len(parent):
            x, d = parent[x], d + 1
        depth[w] = d
    return depth


def replay_regions(con, run, bucket=None):
    """Replay any algorithm from its trace (the ring's as replay_holdings
    does, by chunk): whose contributions each worker's copy of each region
    holds after each step. The regions are the pieces the messages cut the
    bucket into (rd and linear: the whole bucket; rhd: the P parts its
    halvings make; the tree: its two halves). Returns (stages, regions):
    stages as replay_holdings's, holds[w][k] for region k and arrows
    (src, dst, first region, end region, received); regions a list of
    (label, first element, elements).

    A step is a (phase, step) of the trace, in the order --inject counts
    them; the tree's reduce and broadcast (one step each) are cut into
    levels, tree 0 then tree 1, as --explain narrates them. A receiver
    folds the payload's contributors (the trace's contrib_first,
    contrib_count) into its region's, or copies them (receives_by_copy);
    linear's root adds its own data, set aside, after the last reduce.
    bucket: which bucket (default the first)."""
    W, algo = run["workers"], run_algo(run)
    messages = schedule_messages(con, run, bucket)
    cuts = sorted({m["off"] for m in messages} | {m["end"] for m in messages})
    if not cuts:
        raise ToolError(f"run {run['run_id']} has no transfers to draw")
    labels = {"rhd": "part", "tree": "half", "gloo-ring": "chunk"}
    if len(cuts) == 2:
        regions = [("buffer", cuts[0], cuts[1] - cuts[0])]
    else:
        word = labels.get(algo, "region")
        regions = [(f"{word} {k}", a, b - a) for k, (a, b) in enumerate(zip(cuts, cuts[1:]))]

    def span(m):
        ks = [k for k, (_, a, n) in enumerate(regions) if m["off"] <= a and a + n <= m["end"]]
        return (ks[0], ks[-1] + 1) if ks else (0, 0)
    order = {ps: i for i, ps in enumerate(algo_steps(run))}
    groups = {}
    for m in messages:
        key = [order.get((m["phase"], m["step"]), len(order)), m["phase"], m["step"]]
        if algo == "tree":  # by tree (half), then level: up deepest first, down root first
            depth = tree_depths(messages, "reduce", m["half"])
            level = depth.get(m["src"] if m["phase"] == "reduce" else m["dst"], 0)
            key += [m["half"], -level if m["phase"] == "reduce" else level]
        groups.setdefault(tuple(key), []).append(m)
    K = len(regions)
    holds = [[{w} for _ in range(K)] for w in range(W)]
    stages = [("start: each worker holds its own gradient", snapshot(holds),
               [], {"phase": None, "step": None})]
    keys = sorted(groups)
    for i, key in enumerate(keys):
        ms = groups[key]
        phase, step = key[1], key[2]
        for m in ms:
            if not m["received"]:
                continue
            payload = contributors(m["first"], m["count"], W)
            a, b = span(m)
            for k in range(a, b):
                if receives_by_copy(algo, phase, step):
                    holds[m["dst"]][k] = set(payload)
                else:
                    holds[m["dst"]][k] = holds[m["dst"]][k] | payload
        title = f"{phase_label(phase)} step {step}"
        if algo in ("rd", "rhd") and phase in ("reduce", "broadcast"):
            title = f"{'fold-in' if phase == 'reduce' else 'fold-out'} ({title})"
        if algo == "tree":
            level = -key[4] if phase == "reduce" else key[4]
            title = (f"tree {key[3]} {phase}, level {level} up to {level - 1}" if phase == "reduce"
                     else f"tree {key[3]} {phase}, level {level - 1} down to {level}")
        stages.append((title, snapshot(holds),
                       [(m["src"], m["dst"], *span(m), m["received"]) for m in ms],
                       {"phase": phase, "step": step}))
        last_reduce = phase == "reduce" and (i + 1 == len(keys) or keys[i + 1][1] != "reduce")
        if algo == "linear" and last_reduce and all(m["received"] for m in ms):
            root = ms[0]["dst"]
            for k in range(K):
                holds[root][k] = holds[root][k] | {root}
            stages.append((f"worker {root} adds its own data, set aside",
                           snapshot(holds), [],
                           {"phase": phase, "step": step}))
    return stages, regions


# ---- figures ---------------------------------------------------------------


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable
    import matplotlib.pyplot as plt
    return plt


@contextlib.contextmanager
def replacing(out):
    """Write out whole or not at all: yields the name of a new file beside
    out's target (through a symlink, the file it names) with out's
    extension, to write; once the body returns it is flushed to disk and
    renamed over the target, taking the target's permissions (a new file:
    0666 less the umask). On any error (a full disk) the new file is
    removed and whatever was at out is left as it was: an OSError becomes
    a one-line ToolError. A target that is not a regular file (a FIFO,
    /dev/null) is written in place."""
    target = os.path.realpath(out)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise ToolError(f"{out}: cannot write: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            yield target
        except OSError as e:
            raise ToolError(f"{out}: cannot write: {e.strerror}") from None
        return
    folder, name = os.path.split(target)
    ext = os.path.splitext(name)[1]
    try:
        most = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        most = 255
    # '.', the name cut to fit a directory entry, '.', 8 random characters, ext
    keep = max(0, most - 10 - len(ext.encode()))
    stem = os.fsencode(name)[:keep].decode(errors="ignore") if len(os.fsencode(name)) > keep else name
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=ext, dir=folder)
        os.close(fd)
    except OSError as e:
        raise ToolError(f"{out}: cannot write: {e.strerror}") from None
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        # a writer that fails may raise something else while it cleans up
        # (matplotlib's PDF writer, on a full disk: AttributeError during
        # the OSError): the OSError behind it is the reason
        cause = e
        while cause is not None and not isinstance(cause, OSError) and \
                not isinstance(e, (ToolError, KeyboardInterrupt)):
            cause = cause.__cause__ or cause.__context__
        if isinstance(cause, OSError):
            raise ToolError(f"{out}: cannot write: {cause.strerror or cause}") from None
        raise


def save(fig, out, title, tight=True):
    """Write fig (whole or not at all: replacing); its type (checked by
    check_output) follows the extension. The title also goes into the
    file's metadata (PNG tEXt, SVG and PDF title). tight=False for a
    figure whose layout engine already fits it: a tight bounding box draws
    the figure twice."""
    with replacing(out) as tmp:
        fig.savefig(tmp, dpi=120, bbox_inches="tight" if tight else None,
                    metadata={"Title": title})
    progress(f"wrote {out}")


def time_columns(clock):
    """The columns a timeline draws. With simulated times (a run with --net),
    a receive bar spans the segment's simulated departure to its receipt
    (on the wire, then queued), and there are no wall-clock sends or waits to
    show; otherwise the wall-clock send and receive spans."""
    if clock == "sim":
        return "sim_send_ns", "sim_send_ns", "sim_send_ns", "sim_recv_ns", "simulated"
    return "send_begin_ns", "send_end_ns", "recv_begin_ns", "recv_end_ns", "wall"


def shade(colour, factor):
    """colour made lighter (factor > 0) or darker (factor < 0)."""
    import matplotlib.colors as mcolors
    r, g, b = mcolors.to_rgb(colour)
    if factor >= 0:
        return (r + (1 - r) * factor, g + (1 - g) * factor, b + (1 - b) * factor)
    return (r * (1 + factor), g * (1 + factor), b * (1 + factor))


def step_markers(con, run, sb, scale):
    """Where each (iteration, bucket, phase, step) began, in plot units:
    [(x, iter, bucket, phase, step)], time order."""
    rows = con.execute(
        f"SELECT min({sb}), iter, bucket, phase, step FROM transfer WHERE run_id = ? "
        "GROUP BY iter, bucket, phase, step ORDER BY 1", (run["run_id"],)).fetchall()
    return [(t / scale, it, b, ph, st) for t, it, b, ph, st in rows if t is not None]


def fit_title(text, width_inches, fontsize):
    """text wrapped, line by line, to what width_inches holds at fontsize
    (a DejaVu Sans character is at most about 0.6 em wide on average), so
    a figure's title stays on its canvas."""
    import textwrap
    chars = max(30, int(width_inches * 72 / (fontsize * 0.6)))
    return "\n".join(part for line in text.split("\n")
                     for part in (textwrap.wrap(line, chars) or [""]))


def stop_times(con, run, clock, se, re_):
    """Where each worker that did not finish stopped, in ns on the clock
    drawn: {worker: (state, last activity, stop)}. A crashed or stalled
    worker stopped after its last transfer; in wall time a timed-out one
    when its wait ran out (its last transfer plus the run's --timeout, at
    most the run's end), and one that aborted when the run stopped (its
    wall_ns: the watchdog's moment). Simulated time has no timeout: every
    one stops after its last transfer."""
    rid = run["run_id"]
    out = {}
    timeout = run.get("timeout_s")
    timeout = timeout * 1e9 if isinstance(timeout, (int, float)) and timeout > 0 else None
    end = run["wall_ns"] if clock == "wall" and run.get("wall_ns") else None
    for w, (state, *_rest) in worker_states(con, run).items():
        if state in (None, "done"):
            continue
        last = con.execute(
            f"SELECT max(max(CASE WHEN src = ? THEN {se} END), "
            f"max(coalesce(CASE WHEN dst = ? THEN {re_} END, 0))) FROM transfer WHERE run_id = ? "
            "AND (src = ? OR dst = ?)", (w, w, rid, w, w)).fetchone()[0] or 0
        stop = last
        if clock == "wall" and state == "timed_out" and timeout:
            stop = last + timeout if end is None else min(max(last + timeout, last), max(end, last))
        elif clock == "wall" and state == "aborted" and end is not None:
            stop = max(end, last)
        out[w] = (state, last, stop)
    return out


def place_labels(labels, char, lanes):
    """Step labels [(priority, x, text)] into at most `lanes` rows, each at
    the lowest row where it runs into no other: [(x, text, row)] and the
    texts left out (no row had room). char: a character's width in x."""
    placed = [[] for _ in range(lanes)]  # per row: (x, width)
    drawn, left = [], []
    for _, x, label in sorted(labels):
        width = char * (len(label) + 1)
        for row, spans in enumerate(placed):
            if all(x + width <= px or x >= px + pw for px, pw in spans):
                spans.append((x, width))
                drawn.append((x, label, row))
                break
        else:
            left.append((x, label))
    return drawn, [label for _, label in sorted(left)]


# The timeline's rows of step labels (under the workers), and the least
# width a bar is drawn at, as a fraction of the time drawn (1/500: about
# 2 pixels of the 12-inch figure's 1,100-pixel axis at 120 dpi): a 21 us
# receive on a 100 ms axis would be a fifth of a pixel.
TIMELINE_LABEL_ROWS = 4
TIMELINE_MIN_BAR = 1 / 500


def cmd_timeline(con, run, args):
    plt = pyplot()
    from matplotlib.patches import Patch
    W, rid = run["workers"], run["run_id"]
    n = transfer_count(con, rid)
    if n == 0:
        raise ToolError(f"run {rid} has no transfers to draw (W = {W})")
    clock_key = pick_clock(con, run, args.clock)
    sb, se, rb, re_, clock = time_columns(clock_key)
    simulated = clock == "simulated"
    span = con.execute(f"SELECT max(max({se}), max(coalesce({re_}, 0))) FROM transfer "
                       "WHERE run_id = ?", (rid,)).fetchone()[0] or 0
    stops = stop_times(con, run, clock_key, se, re_)
    span = max([span] + [stop for _, _, stop in stops.values()])
    unit, scale = ("ms", 1e6) if span > 5e6 else ("us", 1e3)
    x_end = span / scale if span else 1
    least = x_end * TIMELINE_MIN_BAR  # every bar at least this wide

    def bar(t0, t1):
        return (t0 / scale, max((t1 - t0) / scale, least))
    fig, ax = plt.subplots(figsize=(12, 1.4 + 0.45 * min(W, 64)))
    detail = n <= TIMELINE_DETAIL_LIMIT
    never = con.execute("SELECT count(*) FROM transfer WHERE run_id = ? AND recv_end_ns IS NULL",
                        (rid,)).fetchone()[0]
    if detail:
        progress(f"drawing {n} transfers")
        rows = con.execute(
            f"SELECT phase, step, segment, src, dst, {sb}, {se}, {rb}, {re_}, wait_ns FROM transfer "
            "WHERE run_id = ?", (rid,)).fetchall()
        sends = {}
        recvs = {}
        waits = {}
        lost = []
        for phase, step, seg, src, dst, s0, s1, r0, r1, wait in rows:
            # Simulated time: shades alternate by step, and even and odd
            # segments take the upper and lower half of the row, so back-to-
            # back steps (a uniform ring) and segments in flight together
            # (the pipeline) stay apart. Wall time needs neither: a worker
            # does one thing at a time.
            tone = 0.35 if simulated and step % 2 else 0.0
            lane = seg % 2 if simulated else 0
            if not simulated:
                sends.setdefault((phase, tone), {}).setdefault(src, []).append(bar(s0, s1))
            if r1 is not None:
                recvs.setdefault((phase, tone, lane), {}).setdefault(dst, []).append(bar(r0, r1))
                if wait and not simulated:
                    waits.setdefault(dst, []).append(bar(r0, r0 + wait))
            else:
                lost.append((s0 / scale, dst))
        for (phase, tone, lane), by_worker in recvs.items():
            for w, spans in by_worker.items():
                rows_at = (w - 0.4 + 0.26 * lane, 0.24) if simulated else (w - 0.4, 0.5)
                ax.broken_barh(spans, rows_at, facecolors=shade(phase_colour(phase), tone),
                               edgecolors="white", linewidth=0.5 if simulated else 0)
        for (phase, tone), by_worker in sends.items():
            for w, spans in by_worker.items():
                ax.broken_barh(spans, (w + 0.15, 0.25), facecolors=phase_colour(phase), alpha=0.45)
        for w, spans in waits.items():
            ax.broken_barh(spans, (w - 0.4, 0.5), facecolors="none", edgecolors="0.3", hatch="///",
                           linewidth=0)
        for x, dst in lost:
            ax.plot([x], [dst - 0.15], marker="x", color="#c0392b", markersize=7, mew=2)
    else:
        progress(f"{n} transfers: drawing one bar per worker and step (aggregated in SQL)")
        rows = con.execute(
            f"SELECT phase, dst, step, min({rb}), max({re_}), sum(wait_ns) FROM transfer "
            "WHERE run_id = ? AND recv_end_ns IS NOT NULL GROUP BY iter, bucket, phase, dst, step",
            (rid,)).fetchall()
        bars = {}
        for phase, dst, step, r0, r1, wait in rows:
            if r0 is None or r1 is None:
                continue
            bars.setdefault((phase, step % 2, dst), []).append(bar(r0, r1))
        for (phase, odd, dst), spans in bars.items():  # one collection per row, phase, parity
            ax.broken_barh(spans, (dst - 0.4, 0.8), facecolors=shade(phase_colour(phase), 0.3 * odd),
                           edgecolors="white", linewidth=0.3)
    # where a worker that did not finish stopped (stop_times): a dotted
    # line from its last transfer to there, where its state is written
    for w, (state, last, stop) in sorted(stops.items()):
        words = state.replace("_", " ")
        if stop > last:
            ax.plot([last / scale, stop / scale], [w - 0.15, w - 0.15], color="#c0392b", lw=1,
                    linestyle=":")
            words += f" at {stop / scale:,.1f} {unit}"
        far = stop / scale > 0.8 * x_end  # near the right edge: written to its left
        ax.text(stop / scale, w + 0.05, f" {words} " if far else f" {words}", color="#c0392b",
                fontsize=8, fontweight="bold", va="center", ha="right" if far else "left")
    # step boundaries: when each step of each bucket and iteration began,
    # labelled in rows under the workers; a label that finds no room in any
    # row is named in the axis label instead
    markers = step_markers(con, run, sb, scale)
    labels = []
    begun = set()  # the (iteration, bucket) pairs whose first step is marked
    for x, it, b, phase, step in markers:
        first_of_bucket = (it, b) not in begun
        begun.add((it, b))
        ax.axvline(x, color="0.4" if first_of_bucket else "0.6",
                   linewidth=0.9 if first_of_bucket else 0.6, linestyle="-" if first_of_bucket else ":")
        label = f"{phase_abbrev(phase)}{step}"
        if first_of_bucket and (run["buckets"] > 1 or it > 0):
            where = ([f"it{it}"] if it else []) + ([f"b{b}"] if run["buckets"] > 1 else [])
            label = f"{' '.join(where)} {label}"
        labels.append((not first_of_bucket, x, label))
    # bucket starts first, then steps, each in the first row where it runs
    # into no other
    char = x_end / 150  # about one character of 7-point text on a 12-inch axis
    drawn, left_out = place_labels(labels, char, TIMELINE_LABEL_ROWS)
    rows_used = 1 + max((row for _, _, row in drawn), default=0)
    # a row of labels: 9 points, in y units (a worker's row is about 0.45 inch)
    row_y = 9 / (72 * 0.45)
    for x, label, row in drawn:
        ax.text(x, W - 0.35 + row * row_y, label, fontsize=7, color="0.35")
    ax.set_ylim(W + 0.1 + (rows_used - 1) * row_y, -0.6)
    ax.set_xlim(-0.01 * x_end, 1.01 * x_end)
    ticks = range(W) if W <= 64 else range(0, W, max(1, W // 32))
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"worker {w}" for w in ticks], fontsize=8)
    phases = phases_present(con, rid)
    # the ring's RS and AG need no key; other phases' abbreviations do
    key = ", ".join(f"{phase_abbrev(p)} {phase_label(p)}" for p in phases if p not in PHASES)
    xlabel = f"{clock} time since the run's start ({unit})" + (
        "; shades alternate by step, even and odd segments in the upper and lower half of a row"
        if simulated and detail else "") + (f"; steps: {key}" if key else "")
    xlabel += f"; every bar at least {least:.3g} {unit} wide"
    if left_out:
        shown = ", ".join(left_out[:24]) + (f" and {len(left_out) - 24} more" if len(left_out) > 24
                                            else "")
        xlabel += (f"\nstep labels left out ({len(left_out)} of {len(labels)}, no room: "
                   f"their dotted lines are drawn): {shown}")
    ax.set_xlabel(fit_title(xlabel, 11, 10))
    what = "in flight to this worker" if simulated else "receive"
    handles = [Patch(color=phase_colour(p), label=f"{phase_label(p)} ({what})") for p in phases]
    if detail and not simulated:
        handles += [Patch(color=phase_colour(p), alpha=0.45, label=f"{phase_label(p)} send")
                    for p in phases]
        handles.append(Patch(facecolor="none", edgecolor="0.3", hatch="///", label="receiver waiting"))
    if detail and never:
        from matplotlib.lines import Line2D
        handles.append(Line2D([], [], marker="x", color="#c0392b", linestyle="none", mew=2,
                              label=f"sent, never received ({never})"))
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=6, fontsize=8,
              frameon=False)
    legend_rows = (len(handles) + 5) // 6
    title = titled(f"run {rid}: {algo_name(run)} all-reduce of {run['model']} on {W} workers, "
                   f"{run['bytes']:,} bytes per worker, {n} transfers, {clock} time", run)
    ax.set_title(fit_title(title, 12, 12), pad=24 + 14 * (legend_rows - 1),
                 color="#c0392b" if run_failed(run) else "black")
    save(fig, args.out, title)  # the metadata's title unwrapped
    plt.close(fig)


def draw_chunks_stage(ax, stage, W, ctx=None, regions=None):
    """One panel of the chunk diagram: a column per worker, a row per chunk
    (the ring) or region (regions: replay_regions's; its moves are (src,
    dst, first region, end region, received)). ctx: {'op', 'pre', 'crashed':
    {worker: (phase, step)}, 'steps': the algorithm's steps in order} from
    chunk_context (None: a plain sum)."""
    import matplotlib.colors as mcolors
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle
    ctx = ctx or {"op": "sum", "pre": False, "crashed": {}, "steps": None}
    title, holds, moves, info = stage
    ring = regions is None
    R = W if ring else len(regions)
    if ring:
        moves = [(src, dst, c, c + 1, received) for src, dst, c, received in moves]
    cmap = mcolors.LinearSegmentedColormap.from_list("held", ["#f2f2f2", "#2a7a3b"])
    ax.set_xlim(-0.75, W - 0.25)
    ax.set_ylim(R - 0.5, -0.5)
    cell_pt = 72 * ax.get_position().width * ax.figure.get_figwidth() / (W + 0.5)
    font = ctx.get("font") or max(3.5, min(8.0, cell_pt / 3.0))
    rs_done = ring and (info["phase"] == "all_gather" or
                        (info["phase"] == "reduce_scatter" and info["step"] == W - 2))
    steps = ctx.get("steps") or [("reduce_scatter", s) for s in range(W - 1)] + \
        [("all_gather", s) for s in range(W - 1)]
    order = {ps: i for i, ps in enumerate(steps)}
    dead_columns = []
    cells, colours, outlined, hatched = [], [], [], []
    for w in range(W):
        crash = ctx["crashed"].get(w)
        dead = crash is not None and info["phase"] is not None and \
            order.get((info["phase"], info["step"]), -1) >= order.get(tuple(crash), len(order))
        for c in range(R):
            held = holds[w][c]
            owner = rs_done and c == (w + 1) % W
            cells.append(Rectangle((w - 0.45, c - 0.42), 0.9, 0.84))
            colours.append(cmap(len(held) / W))
            if owner:
                outlined.append(Rectangle((w - 0.45, c - 0.42), 0.9, 0.84))
            if dead:
                hatched.append(Rectangle((w - 0.45, c - 0.42), 0.9, 0.84))
            label = ring_ranges(held, W)
            # every algorithm divides (op avg) in the fold that completes
            # the sum: a complete region is the mean
            if label == "all" and ctx["op"] == "avg":
                label = "mean"
            # out of the layout: thousands of labels at W=16 would make
            # the layout engine measure each one
            ax.text(w, c - 0.12, label, ha="center", va="center", fontsize=font,
                    color="white" if len(held) > W / 2 else "black").set_in_layout(False)
        dead_columns.append(dead)
    # one collection each (a patch per cell is slow at W=16)
    ax.add_collection(PatchCollection(cells, facecolors=colours, edgecolors="none"))
    if outlined:
        ax.add_collection(PatchCollection(outlined, facecolors="none", edgecolors="#111111",
                                          linewidths=1.6))
    if hatched:  # hatching takes the edge colour
        ax.add_collection(PatchCollection(hatched, facecolors="none", edgecolors="#c0392b",
                                          linewidths=0, hatch="///"))
    # an arrow on every row (chunk or region) the transfer carries
    for src, dst, first, end, received in [(m[0], m[1], c, c + 1, m[4]) for m in moves
                                           for c in range(m[2], m[3])]:
        colour = "#c0392b" if received else "0.45"
        style = dict(arrowstyle="->", color=colour, lw=1.1, linestyle="-" if received else "--",
                     shrinkA=0, shrinkB=0)
        y = first + 0.25  # under the label
        if ring and dst == src + 1:
            ax.annotate("", xy=(dst - 0.08, y), xytext=(src + 0.08, y),
                        arrowprops=style).set_in_layout(False)
        elif ring:  # the ring's wrap-around edge: out at the right, in at the left
            ax.annotate("", xy=(W - 0.3, y), xytext=(src + 0.08, y), arrowprops=style,
                        annotation_clip=False).set_in_layout(False)
            ax.annotate("", xy=(dst - 0.08, y), xytext=(-0.72, y), arrowprops=style,
                        annotation_clip=False).set_in_layout(False)
        else:  # any pair: an arc, bending one way going right, the other going left
            style["connectionstyle"] = "arc3,rad=0.25"
            ax.annotate("", xy=(dst, y), xytext=(src, y), arrowprops=style,
                        annotation_clip=False).set_in_layout(False)
        if not received:
            ax.text(dst - 0.2, y, "\u00d7", color="#c0392b", fontsize=font * 1.4, ha="center",
                    va="center", fontweight="bold")
    ax.set_xticks(range(W))
    ax.set_xticklabels([f"w{w}\ncrashed" if dead_columns[w] else f"w{w}" for w in range(W)],
                       fontsize=min(7, font + 1))
    for w, tick in enumerate(ax.get_xticklabels()):
        if dead_columns[w]:
            tick.set_color("#c0392b")
    ax.set_yticks(range(R))
    ax.set_yticklabels([f"c{c}" for c in range(W)] if ring else
                       [name.replace("part ", "p").replace("half ", "h") for name, _, _ in regions],
                       fontsize=min(7, font + 1))
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if ring and info["phase"] == "reduce_scatter" and info["step"] == W - 2:
        title += f"\nowners (outlined) divide by {W}" if ctx["op"] == "avg" \
            and not ctx["pre"] else "\neach chunk complete at its owner"
    elif info["phase"] is None and ctx["op"] == "avg" and ctx["pre"]:
        title += f"\nand divides it by {W} (--average pre)"
    lost = sum(1 for m in moves if not m[4])
    if lost:
        title += f"\n{lost} sent, never received"
    ax.set_title(title, fontsize=min(9, font + 2))


def chunk_stages(con, run):
    """(stages, regions) of the run's chunk diagram: the ring's by chunk
    (replay_holdings; regions None), any other algorithm's by region
    (replay_regions). Refuses runs too large to draw."""
    W, algo = run["workers"], run_algo(run)
    if algo == "auto":
        raise ToolError(f"run {run['run_id']} chose an algorithm per bucket (--algo auto); the "
                        f"chunk diagram draws one algorithm's run (table bucket_algo says what "
                        f"each bucket ran; try timeline or links)")
    most = CHUNKS_MAX_WORKERS if algo == "ring" else CHUNKS_MAX_WORKERS_OTHER
    if W > most:
        raise ToolError(f"run {run['run_id']} has {W} workers; the chunk diagram draws "
                        f"{'rings' if algo == 'ring' else algo + ' runs'} of at most {most}")
    if W < 2:
        raise ToolError(f"run {run['run_id']} has 1 worker: there is no "
                        f"{'ring' if algo == 'ring' else 'transfer'} to draw")
    if algo == "ring":
        return replay_holdings(con, run), None
    return replay_regions(con, run)


def chunk_context(con, run):
    """What a chunk panel needs besides the holdings: the op, where avg
    divides, which workers crashed at which step, and the algorithm's
    steps in order."""
    crashed = {w: (st[1], st[2]) for w, st in worker_states(con, run).items()
               if st[0] == "crashed" and st[1] is not None}
    return {"op": run["op"], "pre": average_pre(run), "crashed": crashed,
            "steps": algo_steps(run)}


# Past this many workers the ring's chunk diagram draws the steps that
# matter (chunk_panels), not every one: W=16's 31 panels were 2592 x 2688
# pixels, their labels 7 pixels high on a 1080-line screen.
CHUNKS_ALL_STEPS_UP_TO = 8


def chunk_panels(stages, W, ring):
    """The stages a chunk diagram draws, and a sentence naming those left
    out ('' when it draws them all). Up to CHUNKS_ALL_STEPS_UP_TO workers
    (and every algorithm but the ring, drawn up to 8) every stage; past it
    the ring's start, its first two reduce-scatter steps and its last (each
    chunk complete at its owner), its first and last all-gather steps, the
    first step with a transfer never received, and a failed run's last."""
    if not ring or W <= CHUNKS_ALL_STEPS_UP_TO:
        return stages, ""
    keep = {(None, None), ("reduce_scatter", 0), ("reduce_scatter", 1),
            ("reduce_scatter", W - 2), ("all_gather", 0), ("all_gather", W - 2)}
    chosen = [i for i, st in enumerate(stages) if (st[3]["phase"], st[3]["step"]) in keep]
    lost = [i for i, st in enumerate(stages) if any(not m[3] for m in st[2])]
    chosen = sorted(set(chosen) | set(lost[:1]) | {len(stages) - 1})
    left = {}
    for i, st in enumerate(stages):
        if i not in chosen:
            left.setdefault(st[3]["phase"], []).append(st[3]["step"])

    def runs(steps):  # [2, 3, 4, 7] -> '2-4, 7'
        parts, start = [], None
        for k, s in enumerate(steps):
            if start is None:
                start = s
            if k + 1 == len(steps) or steps[k + 1] != s + 1:
                parts.append(f"{start}" if start == s else f"{start}-{s}")
                start = None
        return ", ".join(parts)
    gone = "; ".join(f"{phase_label(ph)} steps {runs(st)}" for ph, st in left.items())
    note = (f"{len(chosen)} of {len(stages)} panels (W > {CHUNKS_ALL_STEPS_UP_TO}): left out "
            f"{gone} (ringsim-plot animate or html shows every step)") if gone else ""
    return [stages[i] for i in chosen], note


def chunks_layout(stages, W):
    """(columns, rows, panel width, panel height, inches): panels wrap into
    a near-square grid. Past CHUNKS_ALL_STEPS_UP_TO workers (chunk_panels:
    at most 9 panels) three columns in 16 x 9 inches, 1920 x 1080 pixels
    at 120 dpi: a screen's worth, its labels 10 or more pixels high."""
    n = len(stages)
    if W > CHUNKS_ALL_STEPS_UP_TO:
        cols = min(n, 3)
        rows = (n + cols - 1) // cols
        return cols, rows, 16 / cols, (9 - 1.0) / rows
    cols = min(n, 4 if W <= 4 else max(3, math.ceil(math.sqrt(n))))
    rows = (n + cols - 1) // cols
    panel = min(0.42 * W + 1.0, 3.6)
    return cols, rows, panel, panel


def chunks_figure(con, run):
    """The chunk diagram's figure and title (cmd_chunks saves it)."""
    plt = pyplot()
    stages, regions = chunk_stages(con, run)
    ctx = chunk_context(con, run)
    W = run["workers"]
    stages, left_out = chunk_panels(stages, W, regions is None)
    cols, rows, panel_w, panel_h = chunks_layout(stages, W)
    if W > CHUNKS_ALL_STEPS_UP_TO:  # a cell's width (of W + 0.5 in the panel's 88%) over 3
        ctx["font"] = min(10.0, 72 * panel_w * 0.88 / (W + 0.5) / 3.0)
    # the title's lines: 10-point text, about 0.2 inch a line
    width = cols * panel_w
    buckets = f" (the first of {run['buckets']} buckets)" if run["buckets"] > 1 else ""
    if regions is None:
        title = (f"run {run['run_id']}: whose contributions each worker (column) holds for each "
                 f"chunk (row){buckets}; {W - 2}-1 means {W - 2}, {W - 1}, 0, 1\n"
                 f"arrows: that step's transfers "
                 f"(dashed with \u00d7: never received); outlined: the chunk's owner after "
                 f"reduce-scatter")
    else:
        rows_text = ", ".join(f"{name} = elements {off}..{off + n - 1}" for name, off, n in regions)
        title = (f"run {run['run_id']}: {algo_name(run)} all-reduce, {W} workers: whose "
                 f"contributions each worker (column) holds of each region (row){buckets}; "
                 f"{rows_text}; arrows: that step's transfers (dashed with \u00d7: never received)")
    if left_out:
        title += "\n" + left_out
    title = titled(title, run)
    shown = fit_title(title, width, 10)
    lines = shown.count("\n") + 1
    fig, axes = plt.subplots(rows, cols, figsize=(width, rows * panel_h + 0.2 * lines + 0.2),
                             squeeze=False, layout="constrained")
    for i, ax in enumerate(axes.flat):
        if i < len(stages):
            draw_chunks_stage(ax, stages[i], W, ctx, regions)
        else:
            ax.axis("off")
    fig.suptitle(shown, fontsize=10, color="#c0392b" if run_failed(run) else "black")
    return fig, title  # the metadata's title unwrapped


def cmd_chunks(con, run, args):
    fig, title = chunks_figure(con, run)
    save(fig, args.out, title, tight=False)
    pyplot().close(fig)


def links_data(con, run, clock):
    """Per link r -> r+1: bytes and transfers sent (received or not), those
    received, and GB/s on the run's clock. Simulated: bytes over the time
    each transfer spent between its departure and its receipt, summed (the
    link model's own rate, latency included). Wall: bytes over the time from
    the link's first send to its last receive. Returns a list of dicts."""
    rid = run["run_id"]
    if clock == "sim":
        rate = ("sum(CASE WHEN sim_recv_ns IS NOT NULL THEN bytes END), "
                "sum(sim_recv_ns - sim_send_ns)")
    else:
        rate = ("sum(CASE WHEN recv_end_ns IS NOT NULL THEN bytes END), "
                "max(recv_end_ns) - min(send_begin_ns)")
    links = []
    for src, dst, nbytes, count, received, rbytes, ns in con.execute(
            f"SELECT src, dst, sum(bytes), count(*), count(recv_end_ns), {rate} FROM transfer "
            "WHERE run_id = ? GROUP BY src, dst ORDER BY src, dst", (rid,)):
        links.append({"src": src, "dst": dst, "bytes": nbytes, "transfers": count,
                      "received": received, "gbs": (rbytes or 0) / ns if ns else 0.0})
    return links


def cmd_links(con, run, args):
    plt = pyplot()
    W, rid = run["workers"], run["run_id"]
    clock = pick_clock(con, run, args.clock)
    links = links_data(con, run, clock)
    if not links:
        raise ToolError(f"run {rid} has no transfers to draw (W = {W})")
    end_col = "sim_recv_ns" if clock == "sim" else "recv_end_ns"
    labels = [f"{link['src']}->{link['dst']}" for link in links]
    # the numbers drawn, as a table on stdout
    rate = "GB/s simulated (bytes / time in flight)" if clock == "sim" else \
        "GB/s wall (first send to last receive)"
    print(f"{'link':<10} {'transfers':>9} {'received':>8} {'bytes':>14}  {rate}")
    for label, link in zip(labels, links):
        print(f"{label:<10} {link['transfers']:>9} {link['received']:>8} {link['bytes']:>14}  "
              f"{link['gbs']:.4f}")
    mib = [link["bytes"] / 2**20 for link in links]
    gbs = [link["gbs"] for link in links]
    never = sum(link["transfers"] - link["received"] for link in links)
    end = con.execute(f"SELECT max({end_col}) FROM transfer WHERE run_id = ?", (rid,)).fetchone()[0] or 1
    bins = min(100, max(10, sum(link["transfers"] for link in links) // max(W, 1)))
    width = max(end // bins, 1)
    heat = [[0.0] * bins for _ in range(W)]
    for src, b, nbytes in con.execute(
            f"SELECT src, min(CAST({end_col} / ? AS INTEGER), ?), sum(bytes) FROM transfer "
            f"WHERE run_id = ? AND {end_col} IS NOT NULL GROUP BY src, 2", (width, bins - 1, rid)):
        heat[src][b] += nbytes / 2**20
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(11, 9.5), gridspec_kw={"height_ratios": [1, 1, 1.4]},
                                     layout="constrained")
    step = max(1, W // 32)
    a1.bar(range(len(links)), mib, color="#1f77b4")
    a1.set_ylabel("MiB sent")
    ring = run_algo(run) == "ring"
    if ring:  # what each link of a ring carries; other algorithms' links differ
        theory = 2 * (W - 1) / W * run["bytes"] / 2**20
        a1.axhline(theory, color="#c0392b", linestyle="--", linewidth=1, label="2(W-1)/W x S")
        a1.legend(fontsize=8, loc="lower right")
    a2.bar(range(len(links)), gbs, color="#2a7a3b")
    a2.set_ylabel("GB/s, simulated\n(bytes / time in flight)" if clock == "sim"
                  else "GB/s, wall\n(first send to last receive)")
    every = max(1, len(links) // 32)  # a ring has W links; others may have more
    for ax in (a1, a2):
        ax.set_xticks(range(0, len(links), every))
        ax.set_xticklabels(labels[::every], fontsize=7, rotation=90 if len(links) > 16 else 0)
    unit = "simulated" if clock == "sim" else "wall"
    im = a3.imshow(heat, aspect="auto", cmap="viridis", interpolation="nearest",
                   extent=(0, end / 1e6, W - 0.5, -0.5))
    a3.set_yticks(range(0, W, step))
    a3.set_ylabel("link (from worker)" if ring else "sending worker (all its links)")
    a3.set_xlabel(f"{unit} time since the run's start (ms)")
    fig.colorbar(im, ax=a3, label="MiB received in the interval")
    lost = f"; bytes sent include {never} transfers never received" if never else ""
    what = "per link r -> r+1" if ring else f"per link src -> dst, {algo_name(run)} all-reduce"
    title = titled(f"run {rid}: traffic {what} ({W} workers), {unit} time{lost}", run)
    a1.set_title(fit_title(title, 11, 12), color="#c0392b" if run_failed(run) else "black")
    save(fig, args.out, title)
    plt.close(fig)


def parse_runs(text):
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ToolError(f"--runs '{text}': expected run ids separated by commas") from None


def plural(noun, ids, verb="have", verb_one="has"):
    """plural('run', ['1', '2']) -> 'runs 1,2 have'; one id -> 'run 1 has'."""
    if len(ids) == 1:
        return f"{noun} {ids[0]} {verb_one}"
    return f"{noun}s {','.join(ids)} {verb}"


def compare_runs(con, args):
    """The runs compare draws, as dicts (run_id, workers, bytes, ns, busbw,
    clock): --runs, or by default every completed run of the same kind as the
    latest one. Runs with a simulated network (--net) use simulated time and
    are never mixed with wall-clock runs."""
    if args.runs:
        ids = parse_runs(args.runs)
    else:
        ids = [r[0] for r in con.execute("SELECT run_id FROM run WHERE status = 'ok' ORDER BY run_id")]
    runs = []
    for rid in ids:
        run = pick_run(con, args.trace, rid)  # checked as every command's runs are
        rid, W, size, wall, busbw, status, net, sim, algo = (
            run[k] for k in ("run_id", "workers", "bytes", "wall_ns", "busbw_gbs", "status",
                             "net_model", "sim_ns", "algo"))
        algo = algo or "ring"
        if not isinstance(busbw, (int, float)) or isinstance(busbw, bool):
            busbw = None
        if status != "ok" or W < 2:
            continue
        if net is not None and sim:
            runs.append({"run_id": rid, "workers": W, "bytes": size, "ns": sim, "clock": "sim",
                         "busbw": size / sim * 2 * (W - 1) / W, "algo": algo})
        elif net is None and wall and busbw is not None:
            runs.append({"run_id": rid, "workers": W, "bytes": size, "ns": wall, "clock": "wall",
                         "busbw": busbw, "algo": algo})
    clocks = {r["clock"] for r in runs}
    if len(clocks) > 1:
        if args.runs:
            sim = [str(r["run_id"]) for r in runs if r["clock"] == "sim"]
            wall = [str(r["run_id"]) for r in runs if r["clock"] == "wall"]
            raise ToolError(f"--runs {args.runs}: {plural('run', sim)} a simulated network "
                            f"(--net) and {plural('run', wall, 'do', 'does')} not: compare one "
                            "kind at a time")
        # the latest run's kind, unless it has too few runs to compare
        latest = runs[-1]["clock"]
        if sum(r["clock"] == latest for r in runs) < 2:
            latest = "wall" if latest == "sim" else "sim"
        left = [r for r in runs if r["clock"] != latest]
        runs = [r for r in runs if r["clock"] == latest]
        kinds = {"sim": "simulated (--net)", "wall": "wall-clock"}
        progress(f"comparing the {len(runs)} {kinds[latest]} runs; left out {len(left)} "
                 f"{kinds[left[0]['clock']]} (--runs to choose)")
    if len(runs) < 2:
        raise ToolError("compare needs at least two completed runs with more than one worker")
    return runs


def size_text(size):
    """8 -> '8 B', 2048 -> '2 KiB', 67108864 -> '64 MiB' (as ringsim bench)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} B"


def read_json_objects(path, what):
    """Every JSON object in path: JSON Lines (ringsim bench --json) or
    objects one after another, pretty-printed (ringsim model --json in a
    loop). Refuses a file that holds none, or anything else."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ToolError(f"{what} {path}: cannot read: {e.strerror}") from None
    decoder, objects, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            break
        try:
            obj, at = decoder.raw_decode(text, at)
        except ValueError as e:
            raise ToolError(f"{what} {path}: not JSON at character {at}: {e.msg}") from None
        if not isinstance(obj, dict):
            raise ToolError(f"{what} {path}: expected JSON objects, found {type(obj).__name__}")
        objects.append(obj)
    if not objects:
        raise ToolError(f"{what} {path}: no JSON objects")
    return objects


def bench_points(path):
    """Measured times from `ringsim bench --algo all --json` lines:
    {(W, size, algo): time in us} (the mean time, as nccl-tests reports)."""
    points = {}
    for i, row in enumerate(read_json_objects(path, "--bench")):
        try:
            key = (int(row["workers"]), int(row["size"]), str(row["algo"]))
            points[key] = float(row["time_us"])
        except (KeyError, TypeError, ValueError):
            raise ToolError(f"--bench {path}: object {i + 1} is not a line of ringsim bench "
                            "--json (it needs workers, size, algo and time_us)") from None
    return points


def model_points(path):
    """Predicted times from `ringsim model --algo all --json` objects, one
    per size: {(W, size, algo): simulated time in us}."""
    points = {}
    for i, obj in enumerate(read_json_objects(path, "--model")):
        try:
            for a in obj["algos"]:
                points[(int(obj["workers"]), int(obj["bytes"]), str(a["algo"]))] = a["sim_ns"] / 1e3
        except (KeyError, TypeError, ValueError):
            raise ToolError(f"--model {path}: object {i + 1} is not the output of ringsim model "
                            "--algo all --json (it needs workers, bytes and algos)") from None
    return points


def crossovers(points, workers):
    """Where the fastest algorithm changes with size, for W = workers:
    (fastest, changes). fastest is [(size, algo)] for every size at which
    every algorithm of the data has a time; changes is [(size before, size
    after, algo before, algo after)] for each pair of consecutive such sizes
    whose fastest differ (so a crossover lies between them)."""
    algos = sorted({a for w, _, a in points if w == workers})
    sizes = sorted({s for w, s, _ in points if w == workers})
    fastest = []
    for size in sizes:
        times = {a: points.get((workers, size, a)) for a in algos}
        if all(t is not None for t in times.values()):
            fastest.append((size, min(algos, key=lambda a: (times[a], a))))
    changes = [(s0, s1, a0, a1) for (s0, a0), (s1, a1) in zip(fastest, fastest[1:]) if a0 != a1]
    return fastest, changes


def crossover_lines(kind, points, workers):
    """The text compare prints for one W and one kind (measured or
    predicted): the fastest by size range, then each crossover."""
    fastest, changes = crossovers(points, workers)
    spans = []
    for size, algo in fastest:
        if spans and spans[-1][2] == algo:
            spans[-1][1] = size
        else:
            spans.append([size, size, algo])
    ranges = ", ".join(f"{a} {size_text(lo)}" + (f"..{size_text(hi)}" if hi != lo else "")
                       for lo, hi, a in spans)
    lines = [f"W={workers} {kind}: fastest {ranges}"]
    for s0, s1, a0, a1 in changes:
        lines.append(f"W={workers} {kind}: crossover {a0} -> {a1} between {size_text(s0)} "
                     f"and {size_text(s1)}")
    if not changes and fastest:
        lines.append(f"W={workers} {kind}: no crossover, {fastest[0][1]} fastest at every size")
    return lines


def cmd_compare_algorithms(args):
    """compare --bench: time against size per algorithm and W, measured
    (bench) and predicted (model), with the crossovers marked; the same
    crossovers printed on stdout."""
    measured = bench_points(args.bench)
    predicted = model_points(args.model) if args.model else {}
    widths = sorted({w for w, _, _ in measured})
    algos = sorted({a for _, _, a in measured} | {a for _, _, a in predicted},
                   key=lambda a: (list(ALGO_NAMES).index(a) if a in ALGO_NAMES else 99, a))
    lines = []
    for W in widths:
        lines += crossover_lines("measured", measured, W)
        if any(w == W for w, _, _ in predicted):
            lines += crossover_lines("predicted", predicted, W)
    plt = pyplot()
    fig, axes = plt.subplots(1, len(widths), figsize=(7 * len(widths), 5.8), squeeze=False,
                             layout="constrained")
    colours = {a: f"C{i}" for i, a in enumerate(algos)}
    for ax, W in zip(axes.flat, widths):
        for algo in algos:
            for points, style, kind in ((measured, "o-", "measured"), (predicted, "x--", "predicted")):
                mine = sorted((s, t) for (w, s, a), t in points.items() if w == W and a == algo)
                if mine:
                    ax.plot([s for s, _ in mine], [t for _, t in mine], style, color=colours[algo],
                            markersize=4, lw=1.2 if kind == "measured" else 0.9,
                            label=f"{algo} {kind}")
        for points, kind, colour, y in ((measured, "measured", "#c0392b", 0.97),
                                        (predicted, "predicted", "0.35", 0.03)):
            for s0, s1, a0, a1 in crossovers(points, W)[1]:
                x = math.sqrt(s0 * s1)  # halfway between the sizes, on the log axis
                ax.axvline(x, color=colour, linestyle="-" if kind == "measured" else ":", lw=1)
                ax.text(x, y, f"{a0}\u2192{a1}", rotation=90, fontsize=7, color=colour,
                        ha="right", va="top" if y > 0.5 else "bottom",
                        transform=ax.get_xaxis_transform())
        from matplotlib.ticker import FuncFormatter, LogLocator
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(LogLocator(base=2, numticks=12))
        ax.xaxis.set_major_formatter(FuncFormatter(
            lambda x, _: size_text(int(round(x))).replace(",", "") if x >= 1 else ""))
        ax.tick_params(axis="x", labelsize=7)
        ax.set_yscale("log")
        ax.set_xlabel("bytes per worker (S)")
        ax.set_ylabel("time (us): measured wall, predicted simulated")
        ax.set_title(f"W={W}: crossovers where the fastest changes\n"
                     f"(red: measured; grey dotted: predicted)", fontsize=9)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=5,
                  frameon=False)
    title = (f"all-reduce time against size per algorithm: measured ({os.path.basename(args.bench)})"
             + (f" and predicted ({os.path.basename(args.model)})" if args.model else ""))
    fig.suptitle(title, fontsize=10)
    save(fig, args.out, title)
    plt.close(fig)
    print("\n".join(lines))


def cmd_compare(con, run_ignored, args):
    plt = pyplot()
    runs = compare_runs(con, args)
    clock = runs[0]["clock"]
    unit = "simulated" if clock == "sim" else "wall"
    busbw = max(r["busbw"] for r in runs)  # the best measured: the reference link speed
    algos = sorted({r["algo"] for r in runs}, key=lambda a: (a != "ring", a))
    # a series per algorithm (named unless every run is the ring's) and W
    named = algos != ["ring"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 5.5), layout="constrained")
    for W in sorted({r["workers"] for r in runs}):
        colour = None
        for algo in algos:
            mine = sorted((r for r in runs if r["workers"] == W and r["algo"] == algo),
                          key=lambda r: r["bytes"])
            if not mine:
                continue
            sizes = [r["bytes"] for r in mine]
            a1.plot(sizes, [r["ns"] / 1e3 for r in mine], "o-" if algo == "ring" else "s--",
                    label=f"W={W}{' ' + algo if named else ''} "
                          f"{'simulated' if clock == 'sim' else 'measured'}")
            colour = colour or a1.lines[-1].get_color()
        sizes = sorted({r["bytes"] for r in runs if r["workers"] == W})
        # markers too: with one size the theory is a single point
        a1.plot(sizes, [2 * (W - 1) / W * s / (busbw * 1e9) * 1e6 for s in sizes], "x:", markersize=8,
                color=colour, label=f"W={W} ring at the best busbw, {busbw:.2f} GB/s")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("bytes per worker (S)")
    a1.set_ylabel(f"{unit} time (us)")
    a1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    a1.set_title("time against size; dotted: 2(W-1)/W x S / busbw")
    for size in sorted({r["bytes"] for r in runs}):
        for algo in algos:
            mine = sorted((r for r in runs if r["bytes"] == size and r["algo"] == algo),
                          key=lambda r: r["workers"])
            if mine:
                a2.plot([r["workers"] for r in mine], [r["busbw"] for r in mine],
                        "o-" if algo == "ring" else "s--",
                        label=f"S={size:,} B" + (f" {algo}" if named else ""))
    a2.axhline(busbw, color="0.5", linestyle=":", label="ideal ring: busbw independent of W")
    a2.set_xlabel("workers (W)")
    a2.set_ylabel(f"busbw (GB/s, {unit} time)")
    a2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    a2.set_title("bus bandwidth against W")
    ids = ",".join(str(r["run_id"]) for r in runs)
    title = f"{len(runs)} runs ({ids if len(ids) <= 60 else ids[:57] + '...'}), {unit} time"
    if named:
        title += f"; algorithms: {', '.join(algos)} (busbw: S / time x 2(W-1)/W for each)"
    fig.suptitle(title, fontsize=10)
    save(fig, args.out, title)
    plt.close(fig)


def cmd_animate(con, run, args):
    if not 0.01 <= args.fps <= 100:  # also NaN
        raise ToolError(f"--fps {args.fps:g}: expected frames per second from 0.01 to 100")
    plt = pyplot()
    from matplotlib import animation
    stages, regions = chunk_stages(con, run)
    ctx = chunk_context(con, run)
    W = run["workers"]
    ext = os.path.splitext(args.out)[1].lower()
    if ext == ".gif":
        writer = animation.PillowWriter(fps=args.fps)
    elif not shutil.which("ffmpeg"):  # .mp4
        raise ToolError(f"{args.out}: MP4 needs ffmpeg (apt-get install ffmpeg); or write a .gif")
    else:
        writer = animation.FFMpegWriter(fps=args.fps)
    size = 0.7 * W + 2
    fig, ax = plt.subplots(figsize=(size, size), layout="constrained")

    def frame(i):
        ax.clear()
        draw_chunks_stage(ax, stages[i], W, ctx, regions)
        fig.suptitle(titled(f"run {run['run_id']}: {algo_name(run)} all-reduce, {W} workers "
                            f"({i + 1}/{len(stages)})",
                            run, width=int(size * 13)),
                     fontsize=9, color="#c0392b" if run_failed(run) else "black")

    anim = animation.FuncAnimation(fig, frame, frames=len(stages), repeat=False)
    with replacing(args.out) as tmp:
        anim.save(tmp, writer=writer)
    plt.close(fig)
    progress(f"wrote {args.out} ({len(stages)} frames)")


EXPORT_COLUMNS = ("iter, bucket, phase, step, src, dst, chunk, segment, elem_offset, elems, bytes, "
                  "seq, contrib_first, contrib_count, wait_ns")


def step_name(phase, step):
    return f"{phase_abbrev(phase)} step {step}"


def first_bucket(con, run):
    """(iter, bucket) of the run's first all-reduce: where --inject's faults fire."""
    row = con.execute("SELECT iter, bucket FROM transfer WHERE run_id = ? "
                      "ORDER BY iter, send_begin_ns LIMIT 1", (run["run_id"],)).fetchone()
    return row or (0, 0)


def export_events(con, run, clock):
    """Chrome trace events of one run (a generator: a million transfers do
    not need a million dicts at once). Worker tracks (tid = worker) hold a
    slice per bucket, around a slice per step, around the transfers; in wall
    time a send slice, and a receive as a wait slice (blocked for the segment:
    wait_ns) then a reduce or copy slice; flows join each send to its
    receive. In simulated time each transfer is a slice on its link's track
    (link src->dst: the ring's r->r+1; more lanes where segments overlap on
    the wire); worker
    tracks keep the buckets and steps. Instants mark each injected fault and
    where each worker that did not finish stopped."""
    W, rid, dtype = run["workers"], run["run_id"], run["dtype"]
    sim = clock == "sim"
    yield {"ph": "M", "name": "process_name", "pid": rid, "tid": 0,
           "args": {"name": f"ringsim run {rid}: {run['model']}, {run_algo(run)}, W={W}, "
                            f"{'simulated' if sim else 'wall'} time"
                    + (f" ({status_line(run)})" if status_line(run) else "")}}
    for w in range(W):
        yield {"ph": "M", "name": "thread_name", "pid": rid, "tid": w, "args": {"name": f"worker {w}"}}
        yield {"ph": "M", "name": "thread_sort_index", "pid": rid, "tid": w,
               "args": {"sort_index": 1000 * w}}

    def common(row):
        (it, bucket, phase, step, src, dst, chunk, seg, off, elems, nbytes, seq, first, count,
         _wait) = row
        who = sorted(contributors(first, count, W))
        return {"iter": it, "bucket": bucket, "dtype": dtype, "phase": phase, "step": step,
                "chunk": chunk, "segment": seg, "elem_offset": off, "elems": elems, "bytes": nbytes,
                "seq": seq, "contributors": who if len(who) <= 64 else f"{len(who)} workers"}

    us = 1e-3
    if sim:
        times = ("sim_send_ns, sim_send_ns, sim_recv_ns IS NOT NULL",
                 "sim_recv_ns, sim_recv_ns, 1", "sim_recv_ns IS NOT NULL")
    else:
        times = ("send_begin_ns, send_end_ns, recv_end_ns IS NOT NULL",
                 "recv_begin_ns, recv_end_ns, 1", "recv_end_ns IS NOT NULL")
    # Each worker's own activity in time order: its sends and its receives.
    # A receipt sorts before a send at the same time (simulated time: the
    # chunk arrives, then goes on).
    cur = con.execute(
        f"SELECT src, 0, {times[0]}, {EXPORT_COLUMNS}, recv_begin_ns, recv_end_ns "
        f"FROM transfer WHERE run_id = ? UNION ALL "
        f"SELECT dst, 1, {times[1]}, {EXPORT_COLUMNS}, recv_begin_ns, recv_end_ns "
        f"FROM transfer WHERE run_id = ? AND {times[2]} ORDER BY 1, 3, 2 DESC", (rid, rid))
    runs = {"bucket": None, "step": None}

    def close(kind):
        r = runs[kind]
        if r is None:
            return None
        runs[kind] = None
        key, w, t0, t1, n = r
        if kind == "bucket":
            name = f"iter {key[0]} bucket {key[1]}" if key[0] else f"bucket {key[1]}"
            args = {"iter": key[0], "bucket": key[1], "dtype": dtype, "transfers": n}
        else:
            name = step_name(key[2], key[3])
            args = {"iter": key[0], "bucket": key[1], "dtype": dtype, "phase": key[2],
                    "step": key[3], "transfers": n}
        return {"ph": "X", "name": name, "cat": kind, "pid": rid, "tid": w, "ts": t0 * us,
                "dur": (t1 - t0) * us, "args": args}

    def extend(kind, key, w, t0, t1):
        r = runs[kind]
        if r is not None and r[0] == key and r[1] == w:
            runs[kind] = (key, w, r[2], max(r[3], t1), r[4] + 1)
            return None
        done = close(kind)
        runs[kind] = (key, w, t0, t1, 1)
        return done

    done = 0
    for w, is_recv, t0, t1, received, *row in cur:
        row, (r0, r1) = row[:15], row[15:]
        if t0 is None:
            continue
        it, bucket, phase, step, src, dst, chunk, seg, _, _, _, seq, _, _, wait = row
        for kind, key in (("step", (it, bucket, phase, step)), ("bucket", (it, bucket))):
            closed = extend(kind, key, w, t0, t1)
            if closed:
                yield closed
        if sim:
            continue  # transfers go on the link tracks
        args = common(row)
        flow = src * 1_000_000_000 + seq  # unique per (link, seq) within the run
        if not is_recv:
            if received:
                yield {"ph": "X", "name": f"send c{chunk}", "cat": phase, "pid": rid, "tid": src,
                       "ts": t0 * us, "dur": max(t1 - t0, 1) * us, "args": dict(args, to=dst)}
                yield {"ph": "s", "name": "transfer", "cat": phase, "id": flow, "pid": rid,
                       "tid": src, "ts": t0 * us}
            else:  # no flow: it would dangle
                yield {"ph": "X", "name": f"send c{chunk} (never received)", "cat": phase, "pid": rid,
                       "tid": src, "ts": t0 * us, "dur": max(t1 - t0, 1) * us,
                       "args": dict(args, to=dst, received=False)}
            continue
        wait = wait or 0
        if wait:
            yield {"ph": "X", "name": f"wait c{chunk}", "cat": "wait", "pid": rid, "tid": dst,
                   "ts": r0 * us, "dur": wait * us, "args": dict(args, **{"from": src, "wait_ns": wait})}
        work = PHASE_WORK.get(phase, "receive")
        yield {"ph": "X", "name": f"{work} c{chunk}", "cat": phase, "pid": rid, "tid": dst,
               "ts": (r0 + wait) * us, "dur": max(r1 - r0 - wait, 1) * us,
               "args": dict(args, **{"from": src, "wait_ns": wait})}
        yield {"ph": "f", "bp": "e", "name": "transfer", "cat": phase, "id": flow, "pid": rid,
               "tid": dst, "ts": (r0 + wait) * us}
        done += 1
        if done % 200000 == 0:
            progress(f"exported {done} receives")
    for kind in ("step", "bucket"):
        closed = close(kind)
        if closed:
            yield closed

    if sim:  # each transfer on its link src -> dst, in lanes where they overlap
        # tracks[src]: the sender's link tracks in order of creation, each
        # [dst, lane, end of its last slice]; its k-th is tid W * (1 + k) + src
        # (the ring: one link per sender, so k is the lane)
        tracks = {}

        def track(src, dst, t0=None):
            """The index of a track of link src -> dst free at t0 (None: its first)."""
            mine = tracks.setdefault(src, [])
            lanes = [k for k, (d, _, _) in enumerate(mine) if d == dst]
            for k in lanes:
                if t0 is None or mine[k][2] <= t0:
                    return k
            mine.append([dst, len(lanes), 0])
            return len(mine) - 1
        for row in con.execute(f"SELECT sim_send_ns, sim_recv_ns, {EXPORT_COLUMNS} FROM transfer "
                               "WHERE run_id = ? AND sim_send_ns IS NOT NULL ORDER BY src, sim_send_ns",
                               (rid,)):
            t0, t1, row = row[0], row[1], row[2:]
            src, dst, chunk, phase = row[4], row[5], row[6], row[2]
            if t1 is None:
                k = track(src, dst)
                yield {"ph": "i", "s": "t", "name": f"c{chunk} sent, never received", "cat": phase,
                       "pid": rid, "tid": W * (1 + k) + src, "ts": t0 * us,
                       "args": dict(common(row), to=dst, received=False)}
            else:
                k = track(src, dst, t0)
                tracks[src][k][2] = t1
                yield {"ph": "X", "name": f"c{chunk} {step_name(phase, row[3])}", "cat": phase,
                       "pid": rid, "tid": W * (1 + k) + src, "ts": t0 * us, "dur": (t1 - t0) * us,
                       "args": dict(common(row), **{"from": src, "to": dst})}
        for src, mine in tracks.items():
            for k, (dst, lane, _) in enumerate(mine):
                tid = W * (1 + k) + src
                yield {"ph": "M", "name": "thread_name", "pid": rid, "tid": tid,
                       "args": {"name": f"link {src}->{dst}" + (f" ({lane + 1})" if lane else "")}}
                yield {"ph": "M", "name": "thread_sort_index", "pid": rid, "tid": tid,
                       "args": {"sort_index": 1000 * src + 1 + k}}
    yield from fault_events(con, run, clock)


def fault_events(con, run, clock):
    """Instants: where each --inject fault fired (the start of the faulty
    worker's step in the first bucket; a crashed worker's, after its last
    transfer), where each worker that did not finish stopped, and the run's
    failure."""
    W, rid = run["workers"], run["run_id"]
    us = 1e-3
    t_send, t_recv = ("sim_send_ns", "sim_recv_ns") if clock == "sim" else ("send_begin_ns", "recv_end_ns")
    t_rbegin = "sim_recv_ns" if clock == "sim" else "recv_begin_ns"
    t_send_end = "sim_send_ns" if clock == "sim" else "send_end_ns"
    states = worker_states(con, run)

    def last_activity(w):
        return con.execute(
            f"SELECT max(max(CASE WHEN src = ? THEN {t_send_end} END), "
            f"max(coalesce(CASE WHEN dst = ? THEN {t_recv} END, 0))) "
            "FROM transfer WHERE run_id = ? AND (src = ? OR dst = ?)", (w, w, rid, w, w)).fetchone()[0] or 0

    it, bucket = first_bucket(con, run)
    for fault in injected_faults(run):
        w = fault["worker"]
        if not 0 <= w < W:
            continue
        t = con.execute(
            f"SELECT min(min({t_send}), coalesce(min(CASE WHEN dst = ? THEN {t_rbegin} END), "
            f"min({t_send}))) FROM transfer WHERE run_id = ? AND iter = ? AND bucket = ? "
            "AND phase = ? AND step = ? AND (src = ? OR dst = ?)",
            (w, rid, it, bucket, fault["phase"], fault["phase_step"], w, w)).fetchone()[0]
        state = states.get(w, (None,))[0]
        if t is None or state == "crashed":
            t = last_activity(w)
        yield {"ph": "i", "s": "t", "name": f"fault: {fault['kind']}", "cat": "fault", "pid": rid,
               "tid": w, "ts": t * us,
               "args": {"inject": fault["spec"], "worker": w, "phase": fault["phase"],
                        "step": fault["phase_step"], "global_step": fault["step"],
                        "worker_state": state}}
    # where each stopped: as the timeline draws it (a timed-out worker its
    # --timeout after its last transfer, an aborted one at the run's end)
    stops = stop_times(con, run, clock, t_send_end, t_recv)
    for w, (state, phase, step, chunk, waiting, peer) in sorted(states.items()):
        if state in (None, "done"):
            continue
        doing = f", waiting to {waiting} {'from' if waiting == 'receive' else 'to'} worker {peer}" \
            if waiting else ""
        yield {"ph": "i", "s": "t", "name": f"stopped: {state}", "cat": "fault", "pid": rid, "tid": w,
               "ts": stops[w][2] * us,
               "args": {"state": state, "phase": phase, "step": step, "chunk": chunk,
                        "waiting": waiting, "peer": peer,
                        "where": f"{phase} step {step}, chunk {chunk}{doing}"}}
    if run_failed(run):
        end = con.execute(f"SELECT max(max({t_send_end}), max(coalesce({t_recv}, 0))) FROM transfer "
                          "WHERE run_id = ?", (rid,)).fetchone()[0] or 0
        end = max([end] + [stop for _, _, stop in stops.values()])  # when it stopped
        yield {"ph": "i", "s": "g", "name": f"run {run['status']}", "cat": "fault", "pid": rid, "tid": 0,
               "ts": end * us, "args": {"status": run["status"], "error": run["error"]}}


def cmd_export(con, run, args):
    """Chrome trace event JSON (see export_events), streamed to the file."""
    rid = run["run_id"]
    clock = pick_clock(con, run, args.clock)
    n = transfer_count(con, rid)
    progress(f"exporting {n} transfers, {'simulated' if clock == 'sim' else 'wall'} time")
    with replacing(args.out) as tmp, open(tmp, "w") as out:
        out.write('{"displayTimeUnit": "ns", "otherData": ')
        json.dump({"ringsim_run": rid, "model": run["model"], "algo": run_algo(run),
                   "workers": run["workers"],
                   "bytes_per_worker": run["bytes"], "dtype": run["dtype"], "op": run["op"],
                   "buckets": run["buckets"], "clock": "simulated" if clock == "sim" else "wall",
                   "status": run["status"], "failed": run_failed(run), "error": run["error"],
                   "faults": [f["spec"] for f in injected_faults(run)]}, out)
        out.write(', "traceEvents": [\n')
        first = True
        for event in export_events(con, run, clock):
            out.write(("" if first else ",\n") + json.dumps(event))
            first = False
        out.write("\n]}\n")
    progress(f"wrote {args.out}: open it in ui.perfetto.dev or chrome://tracing")


# ---- the interactive viewer (html) ------------------------------------------

# The page's template: HTML, styles and script in one file, next to this
# script (the source tree) or in PREFIX/share/ringsim (cmake --install).
VIEWER_TEMPLATE = "ringsim_viewer.html"
VIEWER_DATA_MARK = "/*RINGSIM_DATA*/null"
# Without --run, the page holds the trace's latest runs, at most this many.
HTML_DEFAULT_RUNS = 12
# The chunk view holds the buckets of the first iteration, in order, while
# they add up to at most this many messages (and at most this many buckets).
HTML_CHUNK_MESSAGES = 60000
HTML_CHUNK_BUCKETS = 16
# Never-received transfers listed for a failed run (all are counted).
HTML_LOST_ROWS = 500
TRANSFER_COLUMNS = ("iter", "bucket", "phase", "step", "src", "dst", "chunk", "segment",
                    "elem_offset", "elems", "bytes", "seq", "checksum", "send_begin_ns",
                    "send_end_ns", "recv_begin_ns", "recv_end_ns", "wait_ns", "contrib_first",
                    "contrib_count", "sim_send_ns", "sim_recv_ns")


def json_row(row):
    """A transfer row (TRANSFER_COLUMNS) for the page: the 64-bit checksum as
    text, which a JavaScript number (53 bits) would round."""
    row = list(row)
    k = TRANSFER_COLUMNS.index("checksum")
    if row[k] is not None:
        row[k] = str(row[k])
    return row


def viewer_template():
    here = os.path.dirname(os.path.realpath(__file__))
    for path in (os.path.join(here, VIEWER_TEMPLATE),
                 os.path.join(os.path.dirname(here), "share", "ringsim", VIEWER_TEMPLATE)):
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if VIEWER_DATA_MARK not in text:
                raise ToolError(f"{path}: not the viewer's template (no data mark)")
            return text
    raise ToolError(f"{VIEWER_TEMPLATE}: not found next to {__file__} or in ../share/ringsim "
                    "(the page's template is installed with the tool)")


def bucket_algos(con, run):
    """{bucket: algorithm} from table bucket_algo (empty for an older trace)."""
    try:
        return {b: clean(a) for b, a in con.execute(
            "SELECT bucket, algo FROM bucket_algo WHERE run_id = ?", (run["run_id"],))}
    except sqlite3.OperationalError:
        return {}


def message_details(con, run, bucket, ring):
    """The transfers of one bucket (first iteration) merged into messages as
    the replays merge them: {key: detail}; the key is (phase, step, src,
    dst, chunk) for the ring, (phase, step, src, dst, contrib_first,
    contrib_count, half) otherwise (schedule_messages's)."""
    H = tree_chunks(run["workers"])
    tree = run_algo(run) == "tree"
    cols = ", ".join(TRANSFER_COLUMNS)
    out = {}
    col = {name: i for i, name in enumerate(TRANSFER_COLUMNS)}
    PH, ST, SRC, DST, CH, BY = (col[c] for c in ("phase", "step", "src", "dst", "chunk", "bytes"))
    CF, CC, S0, R1 = (col[c] for c in ("contrib_first", "contrib_count", "send_begin_ns",
                                       "recv_end_ns"))
    SS, SR = col["sim_send_ns"], col["sim_recv_ns"]
    for row in con.execute(
            f"SELECT {cols} FROM transfer WHERE run_id = ? AND bucket = ? AND iter = "
            "(SELECT min(iter) FROM transfer WHERE run_id = ?) ORDER BY seq",
            (run["run_id"], bucket, run["run_id"])):
        if ring:
            key = (row[PH], row[ST], row[SRC], row[DST], row[CH])
        else:
            key = (row[PH], row[ST], row[SRC], row[DST], row[CF], row[CC],
                   row[CH] // H if tree else 0)
        d = out.get(key)
        if d is None:
            out[key] = {"row": json_row(row), "bytes": row[BY], "segs": 1, "t0": row[S0],
                        "t1": row[R1], "s0": row[SS], "s1": row[SR], "first": row[CF],
                        "count": row[CC]}
            continue
        d["bytes"] += row[BY]
        d["segs"] += 1
        d["t0"] = min(d["t0"], row[S0])
        d["t1"] = None if d["t1"] is None or row[R1] is None else max(d["t1"], row[R1])
        if row[SS] is not None:
            d["s0"] = min(d["s0"], row[SS])
        d["s1"] = None if d["s1"] is None or row[SR] is None else max(d["s1"], row[SR])
    return out


def chunk_view_bucket(con, run, bucket, algo):
    """One bucket's chunk view: its rows (chunks or regions), and per stage
    the cells that changed (worker, row, contributors as ranges round the
    ring) and the messages it carried, each with its bytes, times,
    contributors and first trace row. The replay is the chunks command's
    (replay_holdings, replay_regions), so the page and the picture agree."""
    W = run["workers"]
    brun = dict(run, algo=algo)
    ring = algo == "ring"
    if ring:
        stages, regions = replay_holdings(con, brun, bucket), None
        rows = [{"label": f"c{c}", "off": None, "elems": None} for c in range(W)]
    else:
        stages, regions = replay_regions(con, brun, bucket)
        rows = [{"label": name, "off": off, "elems": n} for name, off, n in regions]
    details = message_details(con, brun, bucket, ring)
    by_arrow = {}
    if not ring:
        for m in schedule_messages(con, brun, bucket):
            ks = [k for k, (_, a, n) in enumerate(regions) if m["off"] <= a and a + n <= m["end"]]
            span = (ks[0], ks[-1] + 1) if ks else (0, 0)
            by_arrow.setdefault((m["phase"], m["step"], m["src"], m["dst"], *span), []).append(
                (m["phase"], m["step"], m["src"], m["dst"], m["first"], m["count"], m["half"]))
    messages, index, out_stages = [], {}, []
    prev = None
    for title, holds, arrows, info in stages:
        cells = []
        for w in range(W):
            for k in range(len(rows)):
                if prev is None or (holds[w][k] is not prev[w][k] and holds[w][k] != prev[w][k]):
                    cells.append([w, k, ring_ranges(holds[w][k], W)])
        prev = holds
        ids = []
        for arrow in arrows:
            if ring:
                src, dst, chunk, received = arrow
                a, b = chunk, chunk + 1
                key = (info["phase"], info["step"], src, dst, chunk)
            else:
                src, dst, a, b, received = arrow
                keys = by_arrow.get((info["phase"], info["step"], src, dst, a, b)) or [None]
                key = keys.pop(0) if len(keys) > 1 else keys[0]
            if key in index:
                ids.append(index[key])
                continue
            d = details.get(key) or {}
            first, count = d.get("first"), d.get("count")
            index[key] = len(messages)
            ids.append(len(messages))
            messages.append({"src": src, "dst": dst, "a": a, "b": b, "received": bool(received),
                             "phase": info["phase"], "step": info["step"],
                             "bytes": d.get("bytes"), "segs": d.get("segs"), "t0": d.get("t0"),
                             "t1": d.get("t1"), "s0": d.get("s0"), "s1": d.get("s1"),
                             "contrib": ring_ranges(contributors(first, count, W), W)
                             if count is not None else None,
                             "row": d.get("row")})
        out_stages.append({"title": title, "phase": info["phase"], "step": info["step"],
                           "cells": cells, "arrows": ids})
    return {"bucket": bucket, "algo": algo, "algo_name": ALGO_NAMES.get(algo, algo),
            "ring": ring, "rows": rows, "stages": out_stages, "messages": messages}


def timeline_view(con, run, clock):
    """The timeline's bars in one clock, as a flat list of 8 numbers a bar
    (worker, kind, phase index, bucket, step, start, end, wait; kind 0 a
    receive, 1 a send, 2 a send never received, 3 a worker and step
    aggregated), and the span of each step (bucket, phase, step, start,
    end) of the first iteration."""
    rid = run["run_id"]
    sb, se, rb, re_, _ = time_columns(clock)
    n = transfer_count(con, rid)
    phases = phases_present(con, rid)
    pidx = {p: i for i, p in enumerate(phases)}
    bars = []
    aggregated = n > TIMELINE_DETAIL_LIMIT
    if not aggregated:
        for phase, bucket, step, src, dst, s0, s1, r0, r1, wait in con.execute(
                f"SELECT phase, bucket, step, src, dst, {sb}, {se}, {rb}, {re_}, wait_ns "
                "FROM transfer WHERE run_id = ?", (rid,)):
            p = pidx[phase]
            if clock == "wall":
                bars += [src, 1, p, bucket, step, s0, s1, 0]
            if r1 is not None:
                bars += [dst, 0, p, bucket, step, r0, r1, 0 if clock == "sim" else (wait or 0)]
            else:
                bars += [dst, 2, p, bucket, step, s0, s0, 0]
    else:
        for phase, bucket, step, dst, r0, r1, wait in con.execute(
                f"SELECT phase, bucket, step, dst, min({rb}), max({re_}), sum(wait_ns) FROM transfer "
                "WHERE run_id = ? AND recv_end_ns IS NOT NULL GROUP BY iter, bucket, phase, dst, step",
                (rid,)):
            bars += [dst, 3, pidx[phase], bucket, step, r0, r1, 0 if clock == "sim" else (wait or 0)]
        for phase, bucket, step, dst, s0 in con.execute(
                f"SELECT phase, bucket, step, dst, {sb} FROM transfer WHERE run_id = ? "
                "AND recv_end_ns IS NULL", (rid,)):
            bars += [dst, 2, pidx[phase], bucket, step, s0, s0, 0]
    steps = [list(r) for r in con.execute(
        f"SELECT bucket, phase, step, min({sb}), max(coalesce({re_}, {se})) FROM transfer "
        "WHERE run_id = ? AND iter = (SELECT min(iter) FROM transfer WHERE run_id = ?) "
        "GROUP BY bucket, phase, step ORDER BY 4", (rid, rid))]
    return {"bars": bars, "aggregated": aggregated, "steps": steps}


def failure_view(con, run):
    """What the page shows of a failed run: the faults injected, the
    transfers never received (the first HTML_LOST_ROWS rows, all counted)
    and the watchdog's worker table."""
    rid = run["run_id"]
    cols = ", ".join(TRANSFER_COLUMNS)
    lost = [json_row(r) for r in con.execute(
        f"SELECT {cols} FROM transfer WHERE run_id = ? AND recv_end_ns IS NULL "
        "ORDER BY send_begin_ns LIMIT ?", (rid, HTML_LOST_ROWS))]
    n_lost = con.execute("SELECT count(*) FROM transfer WHERE run_id = ? AND recv_end_ns IS NULL",
                         (rid,)).fetchone()[0]
    workers = [list(r) for r in con.execute(
        "SELECT worker, state, phase, step, chunk, waiting, peer, transfers_sent, bytes_sent, "
        "bytes_received, wait_ns FROM worker WHERE run_id = ? ORDER BY worker", (rid,))]
    return {"faults": injected_faults(run), "lost": lost, "lost_count": n_lost,
            "workers": workers}


def html_run(con, run):
    """Everything the page shows of one run, computed by the functions the
    pictures use."""
    rid, W = run["run_id"], run["workers"]
    n = transfer_count(con, rid)
    progress(f"run {rid}: {n} transfers")
    out = {"id": rid, "algo": run_algo(run), "algo_name": algo_name(run), "workers": W,
           "model": run["model"], "bytes": run["bytes"], "elems": run["elems"],
           "dtype": run["dtype"], "op": run["op"], "buckets": run["buckets"],
           "status": run["status"], "error": run["error"], "failed": run_failed(run),
           "status_line": status_line(run), "transfers": n, "wall_ns": run["wall_ns"],
           "sim_ns": run["sim_ns"], "started_at": run["started_at"],
           "phases": phases_present(con, rid), "columns": list(TRANSFER_COLUMNS),
           "detail_limit": TIMELINE_DETAIL_LIMIT, "chunk_note": "", "chunks": []}
    if n == 0:
        out["chunk_note"] = f"run {rid} has no transfers (W = {W})"
    else:
        algos = bucket_algos(con, run)
        buckets = [r[0] for r in con.execute(
            "SELECT bucket, count(*) FROM transfer WHERE run_id = ? AND iter = "
            "(SELECT min(iter) FROM transfer WHERE run_id = ?) GROUP BY bucket ORDER BY bucket",
            (rid, rid))]
        total = 0
        for bucket in buckets:
            if len(out["chunks"]) >= HTML_CHUNK_BUCKETS or total >= HTML_CHUNK_MESSAGES:
                out["chunk_note"] = (f"the chunk view holds buckets {buckets[0]}-{bucket - 1} of "
                                     f"{len(buckets)} (the first {HTML_CHUNK_MESSAGES:,} messages "
                                     f"or {HTML_CHUNK_BUCKETS} buckets); the timeline has them all")
                break
            algo = algos.get(bucket, run_algo(run))
            if algo == "auto":
                algo = "ring"
            view = chunk_view_bucket(con, run, bucket, algo)
            total += len(view["messages"])
            out["chunks"].append(view)
    out["clocks"] = {"wall": timeline_view(con, run, "wall")} if n else {}
    if n and has_sim_times(con, run):
        out["clocks"]["sim"] = timeline_view(con, run, "sim")
    out["failure"] = failure_view(con, run)
    return out


# What the HTML parser acts on inside a script element ('</script' ends it,
# '<!--' then '<script' swallow the page's code after it), '&', and the two
# line separators older JavaScript refused in a string: as the JSON escapes
# JSON.parse reads back as the same characters. JSON has none outside its
# strings, so every name (model, params, file, error) reaches the page as
# text, whatever it holds.
_SCRIPT_SAFE = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def html_page(data):
    """The template with the data inside, as JSON a script element holds
    as text (_SCRIPT_SAFE; str.replace, 4 times faster than str.translate
    over the 3 MB of a large run's page)."""
    text = json.dumps(data, separators=(",", ":"))
    for char, escape in _SCRIPT_SAFE:
        text = text.replace(char, escape)
    return viewer_template().replace(VIEWER_DATA_MARK, text, 1)


def cmd_html(con, run_ignored, args):
    if args.run:
        ids = list(dict.fromkeys(args.run))
        runs = [pick_run(con, args.trace, rid) for rid in ids]
        note = ""
    else:
        ids = [r[0] for r in con.execute(
            "SELECT run_id FROM run ORDER BY run_id DESC LIMIT ?", (HTML_DEFAULT_RUNS,))][::-1]
        if not ids:
            raise ToolError(f"{args.trace}: the trace holds no runs")
        total = con.execute("SELECT count(*) FROM run").fetchone()[0]
        runs = [pick_run(con, args.trace, rid) for rid in ids]
        note = (f"the latest {len(ids)} of the trace's {total} runs (--run ID ... picks others)"
                if total > len(ids) else "")
    data = {"source": clean(os.path.basename(args.trace)), "note": note,
            "runs": [html_run(con, run) for run in runs],
            # two runs named: side by side from the start; else the latest
            "open": [0, 1] if args.run and len(runs) >= 2 else [len(runs) - 1]}
    page = html_page(data)
    with replacing(args.out) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    progress(f"wrote {args.out} ({len(page) / 1e6:.1f} MB, {len(runs)} run"
             f"{'' if len(runs) == 1 else 's'}): open it in a browser")


COMMANDS = {
    "timeline": (cmd_timeline, "Gantt chart: one row per worker, one bar per transfer, by phase"),
    "chunks": (cmd_chunks, "whose contributions each worker's chunks (regions) hold, step by step, "
                           "for every algorithm"),
    "links": (cmd_links, "bytes and bandwidth per link, and traffic over time"),
    "compare": (cmd_compare, "time and busbw across runs, against W and size, with the ring's theory; "
                             "or (--bench, --model) time against size per algorithm with the "
                             "crossovers"),
    "animate": (cmd_animate, "the chunks diagram as an animated GIF (or MP4 with ffmpeg)"),
    "export": (cmd_export, "Chrome trace event JSON for ui.perfetto.dev and chrome://tracing"),
    "html": (cmd_html, "an interactive page, one self-contained file: step through the chunk "
                       "view, click cells and transfers, the timeline, runs side by side"),
}
DEFAULT_OUT = {"timeline": "timeline.png", "chunks": "chunks.png", "links": "links.png",
               "compare": "compare.png", "animate": "ring.gif", "export": "trace.json",
               "html": "ringsim.html"}


OUT_TYPES = {"animate": (".gif", ".mp4"), "export": (".json",), "html": (".html", ".htm")}


def check_output(command, out, inputs=()):
    """Refuse a bad -o before any work: its type, whether it can be made,
    and whether it is one of the inputs (the same file: a hard link, a
    symlink, or the trace itself named t.png), which writing would destroy."""
    allowed = OUT_TYPES.get(command, (".png", ".svg", ".pdf"))
    ext = os.path.splitext(out)[1].lower()
    if ext not in allowed:
        kind = {"animate": "animation", "export": "export", "html": "page"}.get(command, "image")
        raise ToolError(f"{out}: unknown {kind} type '{ext}' (use {', '.join(allowed)})")
    if os.path.isdir(out):
        raise ToolError(f"{out}: cannot write: is a directory")
    for name in inputs:
        try:
            same = name is not None and os.path.samefile(out, name)
        except OSError:  # either does not exist (yet)
            same = False
        if same:
            raise ToolError(f"{out}: is the input {name} (the same file): refusing to write "
                            "over it; give another -o")
    folder = os.path.dirname(os.path.realpath(out))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ToolError(f"{out}: cannot write: no writable directory {folder}")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="ringsim-plot", description="Pictures and a Perfetto export from a ringsim trace.",
        epilog="exit status: 0 done; 2 bad input (no such file, not a ringsim trace, no such run, "
               "an inconsistent trace, an output that is an input or cannot be written)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == "compare":
            p.add_argument("trace", nargs="?",
                           help="the trace database (ringsim-trace.db); or give --bench")
            p.add_argument("--runs", help="run ids, e.g. 1,2,3 (default: every completed run)")
            p.add_argument("--bench", metavar="FILE",
                           help="instead of a trace: `ringsim bench --algo all --json` output; "
                                "draws time against size per algorithm, marks and prints the "
                                "crossovers (where the fastest algorithm changes)")
            p.add_argument("--model", metavar="FILE",
                           help="with --bench: `ringsim model --algo all --json` outputs, one per "
                                "size, drawn as the predicted times, their crossovers too")
        elif name == "html":
            p.add_argument("trace", help="the trace database (ringsim-trace.db)")
            p.add_argument("--run", type=int, nargs="+", action="extend", metavar="ID",
                           help="the runs the page holds (default: the latest "
                                f"{HTML_DEFAULT_RUNS}); two or more open the first two side by side")
        else:
            p.add_argument("trace", help="the trace database (ringsim-trace.db)")
            p.add_argument("--run", type=int, help="run id (default: the latest run)")
        p.add_argument("-o", "--out", default=DEFAULT_OUT[name],
                       help=f"output file (default {DEFAULT_OUT[name]})")
        if name in ("timeline", "links", "export"):
            p.add_argument("--clock", choices=("sim", "wall"),
                           help="simulated (--net runs) or wall time (default: simulated when "
                                "the run has it)")
        if name == "animate":
            p.add_argument("--fps", type=float, default=1.0,
                           help="frames per second, 0.01 to 100 (default 1)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        check_output(args.command, args.out, [getattr(args, k, None) for k in ("trace", "bench", "model")])
        if args.command == "compare" and (args.bench or args.model):
            if not args.bench:
                raise ToolError("compare --model needs --bench FILE (the measured times)")
            if args.trace or args.runs:
                raise ToolError("compare: give a trace (with --runs) or --bench, not both")
            cmd_compare_algorithms(args)
            return 0
        if args.command == "compare" and not args.trace:
            raise ToolError("compare: give a trace, or --bench FILE")
        con = open_trace(args.trace)
        with con:
            run = None if args.command in ("compare", "html") else \
                pick_run(con, args.trace, args.run)
            COMMANDS[args.command][0](con, run, args)
        con.close()
    except ToolError as e:
        print(f"ringsim-plot: {clean(e)}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:  # a trace damaged past its header, or text that is not UTF-8
        print(f"ringsim-plot: {clean(getattr(args, 'trace', None))}: cannot read the trace: "
              f"{clean(e)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
