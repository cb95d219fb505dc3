"""ringsim-plot html: one self-contained interactive page: the viewer's
template (ringsim_viewer.html, beside this package) with the runs' data
inside as JSON, computed by the replays the pictures use, so the page and
the pictures agree.
"""
import json
import sqlite3
import os

from .output import ToolError, clean, progress, replacing
from .replay import (ALGO_NAMES, algo_name, bucket_algos, channel_column, contributors, has_sim_times,
    injected_faults, participants, phases_present, pick_run, replay_holdings, replay_regions, ring_ranges,
    run_algo, run_channels, run_failed, run_gpus, schedule_messages, status_line, time_columns,
    transfer_count, tree_chunks)
from .timeline import TIMELINE_DETAIL_LIMIT
from .topo import MAX_GPUS, MAX_NODES, run_topology, topo_data


# The page's template: HTML, styles and script in one file, beside this
# package in the source tree (tools/), inside it installed (pip, cmake
# --install).
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
    """The template's text, from inside this package (installed: pip and
    cmake --install put it there), else beside it (tools/ in the source
    tree holds ringsim_plot/ and ringsim_viewer.html)."""
    package = os.path.dirname(os.path.realpath(__file__))
    folders = (package, os.path.dirname(package))
    for here in folders:
        path = os.path.join(here, VIEWER_TEMPLATE)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if VIEWER_DATA_MARK not in text:
                raise ToolError(f"{path}: not the viewer's template (no data mark)")
            return text
    raise ToolError(f"{VIEWER_TEMPLATE}: not found in {' nor '.join(folders)}, in or beside the "
                    "package ringsim_plot (the page's template is installed with the tool)")


def message_details(con, run, bucket, ring, channel=None):
    """The transfers of one bucket (first iteration) merged into messages as
    the replays merge them: {key: detail}; the key is (phase, step, src,
    dst, chunk) for the ring, (phase, step, src, dst, contrib_first,
    contrib_count, half) otherwise (schedule_messages's). channel: one of
    NCCL's channels' number (its transfers alone; None: every one)."""
    H = tree_chunks(run["workers"])
    tree = run_algo(run) == "tree"
    cols = ", ".join(TRANSFER_COLUMNS)
    out = {}
    col = {name: i for i, name in enumerate(TRANSFER_COLUMNS)}
    PH, ST, SRC, DST, CH, BY = (col[c] for c in ("phase", "step", "src", "dst", "chunk", "bytes"))
    CF, CC, S0, R1 = (col[c] for c in ("contrib_first", "contrib_count", "send_begin_ns",
                                       "recv_end_ns"))
    SS, SR = col["sim_send_ns"], col["sim_recv_ns"]
    # (each transfer's channel, NCCL's: a message merges those of its
    # chunk on every channel that moves it between the two workers)
    chan = channel_column(con)
    only = (f"AND {chan} = ? ", (channel,)) if channel is not None else ("", ())
    for *row, channel in con.execute(
            f"SELECT {cols}, {chan} FROM transfer WHERE run_id = ? "
            "AND bucket = ? AND iter = (SELECT min(iter) FROM transfer WHERE run_id = ?) "
            + only[0] + "ORDER BY seq", (run["run_id"], bucket, run["run_id"]) + only[1]):
        if ring:
            key = (row[PH], row[ST], row[SRC], row[DST], row[CH])
        else:
            key = (row[PH], row[ST], row[SRC], row[DST], row[CF], row[CC],
                   row[CH] // H if tree else 0)
        d = out.get(key)
        if d is None:
            out[key] = {"row": json_row(row), "bytes": row[BY], "segs": 1, "t0": row[S0],
                        "t1": row[R1], "s0": row[SS], "s1": row[SR], "first": row[CF],
                        "count": row[CC], "channels": {channel}}
            continue
        d["channels"].add(channel)
        d["bytes"] += row[BY]
        d["segs"] += 1
        d["t0"] = min(d["t0"], row[S0])
        d["t1"] = None if d["t1"] is None or row[R1] is None else max(d["t1"], row[R1])
        if row[SS] is not None:
            d["s0"] = min(d["s0"], row[SS])
        d["s1"] = None if d["s1"] is None or row[SR] is None else max(d["s1"], row[SR])
    return out


def chunk_view_bucket(con, run, bucket, algo, channel=None):
    """One bucket's chunk view: its rows (chunks or regions), and per stage
    the cells that changed (worker, row, contributors as ranges round the
    ring) and the messages it carried, each with its bytes, times,
    contributors and first trace row. The replay is the chunks command's
    (replay_holdings, replay_regions), so the page and the picture agree.
    channel: one of NCCL's channels (run_channels's dict): that channel's
    view of the bucket, its chunks of its part, which says the channel,
    its part and its ring's order (the page's columns)."""
    W = run["workers"]
    brun = dict(run, algo=algo)
    gpus = run_gpus(brun)
    ring = algo == "ring"
    number = channel["channel"] if channel else None
    order = channel["order"] if channel else None
    if ring:
        stages, regions = replay_holdings(con, brun, bucket, channel), None
        rows = [{"label": f"c{c}", "off": None, "elems": None} for c in range(W)]
    else:
        stages, regions = replay_regions(con, brun, bucket, channel)
        rows = [{"label": name, "off": off, "elems": n} for name, off, n in regions]
    details = message_details(con, brun, bucket, ring, number)
    # on NCCL's channels (ringsim --channels) each message says its channels
    multi = con.execute(f"SELECT max({channel_column(con)}) FROM transfer WHERE run_id = ?",
                        (run["run_id"],)).fetchone()[0]
    by_arrow = {}
    if not ring:
        for m in schedule_messages(con, brun, bucket, number):
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
            channels = sorted(d.get("channels") or {0})
            messages.append({"src": src, "dst": dst, "a": a, "b": b, "received": bool(received),
                             "phase": info["phase"], "step": info["step"],
                             "bytes": d.get("bytes"), "segs": d.get("segs"), "t0": d.get("t0"),
                             "t1": d.get("t1"), "s0": d.get("s0"), "s1": d.get("s1"),
                             "contrib": ring_ranges(contributors(first, count, W, gpus, src, dst,
                                                                 order),
                                                    W) if count is not None else None,
                             "row": d.get("row"),
                             **({"channels": channels} if multi else {})})
        out_stages.append({"title": title, "phase": info["phase"], "step": info["step"],
                           "cells": cells, "arrows": ids})
    view = {"bucket": bucket, "algo": algo, "algo_name": ALGO_NAMES.get(algo, algo),
            "ring": ring, "rows": rows, "stages": out_stages, "messages": messages}
    if channel:
        view.update(channel=number, part=[channel["off"], channel["end"]], order=order)
    return view


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
    # the timeline's rows: the workers, then nvls's switches (W + node)
    out = {"id": rid, "algo": run_algo(run), "algo_name": algo_name(run), "workers": W,
           "participants": participants(run),
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
            if len({v["bucket"] for v in out["chunks"]}) >= HTML_CHUNK_BUCKETS or \
                    total >= HTML_CHUNK_MESSAGES:
                out["chunk_note"] = (f"the chunk view holds buckets {buckets[0]}-{bucket - 1} of "
                                     f"{len(buckets)} (the first {HTML_CHUNK_MESSAGES:,} messages "
                                     f"or {HTML_CHUNK_BUCKETS} buckets); the timeline has them all")
                break
            algo = algos.get(bucket, run_algo(run))
            if algo == "auto":
                algo = "ring"
            # on NCCL's channels a view per channel (the selector's entries)
            channels = run_channels(con, dict(run, algo=algo), bucket)
            for channel in channels if len(channels) > 1 else [None]:
                view = chunk_view_bucket(con, run, bucket, algo, channel)
                total += len(view["messages"])
                out["chunks"].append(view)
    out["clocks"] = {"wall": timeline_view(con, run, "wall")} if n else {}
    if n and has_sim_times(con, run):
        out["clocks"]["sim"] = timeline_view(con, run, "sim")
    out["failure"] = failure_view(con, run)
    out["topo"] = topo_view(con, run)
    out["step"] = step_view(con, run)
    return out


def step_view(con, run):
    """A ringsim step run's intervals (table step_interval, its first
    iteration: every one is alike), per worker [kind, bucket, start_ns,
    end_ns], the step's last gradient and its end; None for another run
    (or a trace from before the table)."""
    rid = run["run_id"]
    try:
        rows = con.execute(
            "SELECT worker, kind, bucket, start_ns, end_ns FROM step_interval WHERE run_id = ? "
            "AND iter = (SELECT min(iter) FROM step_interval WHERE run_id = ?) "
            "ORDER BY worker, rowid", (rid, rid)).fetchall()
    except sqlite3.OperationalError:  # no such table
        return None
    if not rows:
        return None
    lanes = [[] for _ in range(run["workers"])]
    for worker, kind, bucket, start, end in rows:
        if 0 <= worker < len(lanes):
            lanes[worker].append([kind, bucket, start, end])
    last_grad = max(e for _, k, _, _, e in rows if k == "backward")
    return {"lanes": lanes, "last_grad_ns": last_grad, "end_ns": max(r[4] for r in rows)}


def topo_view(con, run):
    """A --topo run's cluster as `topo` draws it (topo.py): nodes, gpus,
    nics, and the bytes of each GPU-to-GPU link within a node and each
    NIC-to-NIC path between nodes; None for a run without a topology, or
    one too large to draw (then its size alone)."""
    try:
        topo = run_topology(run)
    except ToolError:
        return None
    view = {"nodes": topo["nodes"], "gpus": topo["gpus"], "nics": topo["nics"],
            "drawn": topo["nodes"] <= MAX_NODES and topo["gpus"] <= MAX_GPUS}
    intra, inter = topo_data(con, run, topo)
    view["intra"] = [[s, d, b] for (s, d), b in sorted(intra.items())]
    view["inter"] = [[s, d, b] for (s, d), b in sorted(inter.items())]
    return view


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
