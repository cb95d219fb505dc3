"""The report of a run as a dict: the same keys and values as the command's
--json report (src/cli/report.c, docs/cli.md), built from the facts the
library gives (rs_run_facts_json).

Where report.c derives a figure (algbw, busbw, the 2(W-1)/W x S theory,
the ring's planned transfers), this does the same arithmetic in the same
order, so the numbers are the same doubles.
"""
import math

from . import _lib

# Statuses after which the command prints the watchdog report: a run that
# failed once started (exit status 3), except a trace that could not be
# written (its ring completed).
_USAGE_STATUSES = (-1, -3, -4)  # RS_EINVAL, RS_EIO, RS_EPARSE
_OK, _ECHECK, _ETRACE = 0, -8, -11

# The command prints the averaged values in its report up to this many
# elements (PRINT_VALUES_UP_TO).
PRINT_VALUES_UP_TO = 64


def _watchdog(facts):
    return [{"worker": w, "state": s["state"], "phase": s["phase"],
             "step": s["step"], "chunk": s["chunk"], "waiting": s["waiting"],
             "peer": s["peer"] if s["waiting"] else None}
            for w, s in enumerate(facts["workers"])]


def _hook(hook, compressed, dtype_name, dtype_size, checked, res, params):
    """The report's hook entry, as the command's (report_json.c)."""
    if hook == "none":
        return None
    h = {"name": hook, "dtype": {"fp16": "f16", "bf16": "bf16"}.get(
        hook, dtype_name),
        "bytes_ratio": (2 if compressed else dtype_size) / dtype_size}
    if not compressed or not checked:
        return h
    # float16 rounds to inf from 65520; bfloat16 from (2 - 2^-8) 2^127
    overflow_at = 65520.0 if hook == "fp16" else math.ldexp(2 - 2 ** -8, 127)
    mean = max((p["max_abs_ref"] for p in params), default=0.0)
    h.update({
        "cast_overflowed": res["hook_cast_overflow"],
        "cast_flushed": res["hook_cast_flushed"],
        "div_flushed": res["hook_div_flushed"],
        "max_abs_input": res["hook_max_abs"],
        "sum_first_overflows": sum(p["sum_overflow"] for p in params),
        "saved_by_dividing_first": sum(p["sum_overflow_saved"] for p in params),
        "max_abs_mean": mean,
        "sum_first_overflows_from_workers":
            float(math.ceil(overflow_at / mean)) if mean > 0 else None})
    return h


def build(facts, model_name, dtype_name, dtype_size, source, trace, values):
    """The --json report of a run. values: {name: flat list of floats} of
    the result, or None."""
    cfg, res = facts["config"], facts["result"]
    workers = cfg["workers"]
    checked = res["checked"]
    status = res["status"]
    params = facts["params"]
    elems = sum(p["elems"] for p in params)
    hook = cfg["hook"]
    compressed = hook in ("fp16", "bf16")  # summed in 2-byte elements
    nbytes = float(elems * (2 if compressed else dtype_size))
    seconds = res["wall_ns"] / 1e9
    algbw = nbytes / seconds / 1e9 if seconds > 0 else 0.0
    busbw = algbw * 2.0 * (workers - 1) / workers
    # the ring's plan (rs_algo_info_t's textbook_ring), as report.c's
    ring = _lib.algo_info(cfg["algo"].encode())
    planned = (2 * (workers - 1) * workers * res["segs_per_chunk"]
               if ring is not None and ring.textbook_ring else 0)

    def if_checked(x):
        return x if checked else None

    param_checks = []
    for p in params:
        entry = {"name": p["name"], "elem_offset": p["elem_offset"],
                 "elems": p["elems"]}
        for key in ("max_abs_err", "max_rel_err", "bound", "differing",
                    "wrong"):
            entry[key] = if_checked(p[key])
        if cfg["order_report"]:
            entry["order_differing"] = if_checked(p["order_differing"])
            entry["order_max_ulps"] = if_checked(p["order_max_ulps"])
        param_checks.append(entry)

    mismatches = None  # the workers that differ from worker 0's bits
    if checked and not res["identical"]:
        m = facts["mismatches"]
        mismatches = {
            "workers": [{"worker": w, "elements": n}
                        for w, n in enumerate(m["workers"]) if w and n],
            "first": [{"worker": e["worker"],
                       "param": params[e["param"]]["name"],
                       "index": e["elem"] - params[e["param"]]["elem_offset"],
                       "elem": e["elem"], "value": e["value"],
                       "worker0_value": e["worker0_value"]}
                      for e in m["first"]]}

    buckets = []
    for b in facts["buckets"]:
        first, count = b["first_param"], b["params"]
        buckets.append({
            "elem_offset": b["elem_offset"], "elems": b["elems"],
            "bytes": b["elems"] * dtype_size,
            "algo": b["algo"],
            # DDP's order: the bucket's last param first
            "params": [params[i]["name"]
                       for i in range(first + count - 1, first - 1, -1)]})

    r = {
        "version": facts["version"],
        "model": model_name,
        "workers": workers,
        "transport": "shm",  # the Python API runs every worker in-process
        "processes": 1,
        "op": cfg["op"],
        "grads": source,
        "params": len(params),
        "dtype": dtype_name,
        "elems": elems,
        "bytes": int(nbytes),
        "buckets": buckets,
        "segs_per_chunk": res["segs_per_chunk"],
        "segment_elems": res["seg_elems"],
        "slots": res["slots"],
        "loop": "slices" if cfg["slices"] else "steps",
        "direct": cfg["direct"],
        "algo": cfg["algo"],
        "steps": res["steps"],
        "auto": facts["auto"],
        "transfers": res["transfers"],
        "transfers_planned": planned or None,
        "transfers_sent": [w["transfers_sent"] for w in facts["workers"]],
        "bytes_sent": [w["bytes_sent"] for w in facts["workers"]],
        "bytes_sent_theory": 2.0 * (workers - 1) / workers * nbytes,
        "checked": checked,
        "identical": if_checked(res["identical"]),
        "mismatches": mismatches,
        "exact": res["exact"],
        "max_abs_err": if_checked(res["max_abs_err"]),
        "bound": if_checked(res["bound"]),
        "worst_ratio": if_checked(res["worst_ratio"]),
        "param_checks": param_checks,
        "hook": _hook(hook, compressed, dtype_name, dtype_size, checked, res,
                      params),
        "wall_ns": res["wall_ns"],
    }
    if cfg["topo_enabled"]:
        r["bytes_sent_off_node"] = [w["bytes_sent_off_node"]
                                    for w in facts["workers"]]
        r["bytes_received_off_node"] = [w["bytes_received_off_node"]
                                        for w in facts["workers"]]
    if cfg["net_enabled"]:
        r["sim_ns"] = if_checked(res["sim_ns"])
        r["predicted_ns"] = if_checked(res["predicted_ns"])
    r["fill_ns"] = res["fill_ns"]
    r["ref_ns"] = res["ref_ns"]
    r["check_ns"] = res["check_ns"]
    r["check_threads"] = res["check_threads"]
    r["algbw_gbs"] = if_checked(algbw)
    r["busbw_gbs"] = if_checked(busbw)
    r["trace"] = trace
    r["run_id"] = facts["run_id"] if trace and facts["run_id"] else None
    r["trace_error"] = facts["trace_error"]
    r["status"] = facts["status_name"]
    if status not in (_OK, _ECHECK, _ETRACE) + _USAGE_STATUSES:
        r["watchdog"] = _watchdog(facts)
    r["error"] = facts["error"] if status else None
    if values is not None and elems <= PRINT_VALUES_UP_TO:
        r["result"] = values
    return r
