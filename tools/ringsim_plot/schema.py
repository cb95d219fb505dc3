"""What ringsim writes, checked before anything is drawn: a run's row in
the trace (its counts and texts, and its network model, with --topo the
topology: src/io/trace_write.c's net_json) and the report of `ringsim
step --json` (src/cli/step.c's print_json). A value missing, of another
type or out of what ringsim writes is one ToolError naming the file and
the field (exit 2), where a picture would divide by zero, index past a
list or draw another cluster.

    check_run_row(path, run)   the run row's columns and net_model
    run_topology(run)          a checked row's topology, or None
    check_step_report(path, doc)
    check_sweep_report(path, doc)   `ringsim model --workers LIST --json`
"""
import json

from .output import ToolError


# ringsim's largest -w (RS_MAX_WORKERS in include/ringsim/ringsim.h)
MAX_WORKERS = 4096
# --topo's keys and their ranges (src/net/topo.c's read_item: nodes 1 to
# 65536, gpus and nics 1 to 4096, nics at most gpus; rs_topo_check: nodes
# x gpus is the run's W)
TOPO_COUNTS = (("nodes", 65536), ("gpus", 4096), ("nics", 4096))
TOPO_LINKS = ("intra_latency_ns", "intra_Bps", "nic_latency_ns", "nic_Bps")
# --net's, each a count or a time or rate, in every net_model
NET_FIELDS = ("latency_ns", "bandwidth_Bps", "reduce_Bps", "links", "stragglers")
# the largest integer ringsim writes in a report (its times, counts and
# sizes are int64_t or uint64_t below 2^63): a JSON integer past it is not
# ringsim's, and past a float's range would fail where it is drawn
MAX_INT = 2 ** 63 - 1


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def describe(value):
    """A value as an error names it: short, and its type where that is
    what is wrong ('2' is text)."""
    try:
        text = json.dumps(value) if not isinstance(value, str) else repr(value)
    except (RecursionError, ValueError):  # nested past the encoder's limit
        text = f"a {type(value).__name__} nested too deeply"
    return text if len(text) <= 40 else text[:37] + "..."


def check_run_row(path, run):
    """Refuse a run row whose columns are not what ringsim writes: the
    counts (workers 1 to 4096), the times, the texts, and net_model: NULL,
    or a JSON object whose --net fields are counts and whose topo, if any,
    has nodes, gpus and nics in --topo's ranges, nics at most gpus, nodes x
    gpus the run's workers, and its links' times and rates."""
    rid = run["run_id"]

    def bad(what):
        return ToolError(f"{path}: run {rid} is inconsistent: {what} (a damaged or edited trace)")
    for key in ("workers", "buckets", "elems", "bytes"):
        if not is_int(run.get(key)) or run[key] < 0:
            raise bad(f"{key} is {run.get(key)!r}, not a count")
    for key in ("wall_ns", "sim_ns", "transfers"):
        if run.get(key) is not None and not isinstance(run[key], int):
            raise bad(f"{key} is {run[key]!r}, not a number of "
                      f"{'ns' if key != 'transfers' else 'transfers'}")
    for key in ("model", "status", "dtype", "op"):
        if not isinstance(run.get(key), str):
            raise bad(f"{key} is {run.get(key)!r}, not text")
    for key in ("error", "algo"):
        if run.get(key) is not None and not isinstance(run[key], str):
            raise bad(f"{key} is {run[key]!r}, not text")
    W = run["workers"]
    if not 1 <= W <= MAX_WORKERS:
        raise bad(f"workers is {W}, not 1..{MAX_WORKERS}")
    text = run.get("net_model")
    if text is None:
        return
    try:
        net = json.loads(text) if isinstance(text, (str, bytes)) else None
    except (ValueError, RecursionError):  # not JSON, or nested past the decoder's limit
        net = None
    if not isinstance(net, dict):
        raise bad(f"net_model is {describe(text)}, not the network model's JSON object")
    for key in NET_FIELDS:
        if key in net and (not is_int(net[key]) or net[key] < 0):
            raise bad(f"net_model's {key} is {describe(net[key])}, not a count")
    if "topo" not in net:
        return
    topo = net["topo"]
    if not isinstance(topo, dict):
        raise bad(f"net_model's topo is {describe(topo)}, not an object of nodes, gpus "
                  "and nics")
    for key, most in TOPO_COUNTS:
        if key not in topo:
            raise bad(f"net_model's topo has no {key}")
        if not is_int(topo[key]) or not 1 <= topo[key] <= most:
            raise bad(f"net_model's topo.{key} is {describe(topo[key])}, not 1..{most}")
    N, G, K = topo["nodes"], topo["gpus"], topo["nics"]
    if K > G:
        raise bad(f"net_model's topo.nics is {K}, more NICs than the node's {G} GPUs")
    if N * G != W:
        raise bad(f"net_model's topo.nodes x topo.gpus is {N} x {G} = {N * G}, "
                  f"but the run has {W} workers")
    for key in TOPO_LINKS:
        if key not in topo:
            raise bad(f"net_model's topo has no {key}")
        if not is_int(topo[key]) or topo[key] < 0:
            raise bad(f"net_model's topo.{key} is {describe(topo[key])}, not a count")


def run_topology(run):
    """The topology of a run checked by check_run_row (nodes, gpus, nics,
    ...), or None for a run without --topo."""
    text = run.get("net_model")
    return json.loads(text).get("topo") if text is not None else None


# The step report (src/cli/step.c's print_json): the fields of each
# level, those every report holds first; a bucket's allreduce_elems (with
# --hook powersgd) and a timeline's workers (up to 64 workers) are checked
# where present. The tools read model, workers, iterations and rows.
STEP_ROOT = (("model", str), ("workers", int), ("iterations", int), ("rows", list))
STEP_ROOT_MAYBE = (("threads", bool), ("hook", str))
STEP_ROW = (("algo", str), ("cap_bytes", int), ("first", dict), ("later", dict),
            ("total_ns", int))
STEP_ROW_MAYBE = (("best", bool), ("ddp_default", bool))
STEP_TIMELINE = (("step_ns", int), ("forward_ns", int), ("backward_ns", int), ("comm_ns", int),
                 ("exposed_ns", int), ("buckets", list))
STEP_TIMELINE_MAYBE = (("hidden_ns", int), ("workers", list))
STEP_BUCKET = (("first_param", int), ("params", int), ("bytes", int), ("ready_ns", int),
               ("start_ns", int), ("end_ns", int), ("exposed_ns", int))
STEP_LANE = (("forward_ns", int), ("last_grad_ns", int), ("allreduce", list))
# fields that may be negative (hidden_ns is comm_ns - exposed_ns)
STEP_SIGNED = ("hidden_ns",)
TYPE_NAMES = {str: "text", int: "an integer", list: "a list", dict: "an object",
              bool: "true or false"}


def check_step_report(path, doc):
    """Refuse a step report that is not what `ringsim step --json` writes:
    each level's fields present and of their type (integers 0 to 2^63 - 1),
    at least one row, each timeline's buckets, and its worker lanes (where
    it has them) one per worker, each with a [start, end] span per bucket,
    start <= end."""
    def bad(where, what):
        return ToolError(f"{path}: not `ringsim step --json` output: "
                         f"{where + ' ' if where else ''}{what}")

    def fields(obj, where, required, maybe=()):
        if not isinstance(obj, dict):
            raise bad(where or "the document", f"is {describe(obj)}, not an object" +
                      ("" if where else " holding rows"))
        for key, kind in required + maybe:
            name = f"{where}.{key}" if where else key
            if key not in obj:
                if (key, kind) in maybe:
                    continue
                raise bad("", f"{name} is missing")
            value = obj[key]
            ok = is_int(value) if kind is int else isinstance(value, kind)
            if not ok:
                raise bad("", f"{name} is {describe(value)}, not {TYPE_NAMES[kind]}")
            if kind is int and value < 0 and key not in STEP_SIGNED:
                raise bad("", f"{name} is {value}, negative")
            if kind is int and abs(value) > MAX_INT:
                raise bad("", f"{name} is {describe(value)}, past 2^63 - 1")

    fields(doc, "", STEP_ROOT, STEP_ROOT_MAYBE)
    W = doc["workers"]
    if W < 1:
        raise bad("", f"workers is {W}, not at least 1")
    if doc["iterations"] < 1:
        raise bad("", f"iterations is {doc['iterations']}, not at least 1")
    if not doc["rows"]:
        raise bad("", "rows is empty")
    for i, row in enumerate(doc["rows"]):
        fields(row, f"rows[{i}]", STEP_ROW, STEP_ROW_MAYBE)
        for which in ("first", "later"):
            where = f"rows[{i}].{which}"
            tl = row[which]
            fields(tl, where, STEP_TIMELINE, STEP_TIMELINE_MAYBE)
            for b, bucket in enumerate(tl["buckets"]):
                fields(bucket, f"{where}.buckets[{b}]", STEP_BUCKET)
            lanes = tl.get("workers")
            if lanes is None:
                continue
            if len(lanes) != W:
                raise bad("", f"{where}.workers lists {len(lanes)} lanes, but workers is {W}")
            for r, lane in enumerate(lanes):
                at = f"{where}.workers[{r}]"
                fields(lane, at, STEP_LANE)
                spans = lane["allreduce"]
                if len(spans) != len(tl["buckets"]):
                    raise bad("", f"{at}.allreduce has {len(spans)} spans for "
                                  f"{len(tl['buckets'])} buckets")
                for b, span in enumerate(spans):
                    if not (isinstance(span, list) and len(span) == 2 and
                            all(is_int(t) and 0 <= t <= MAX_INT for t in span) and
                            span[0] <= span[1]):
                        raise bad("", f"{at}.allreduce[{b}] is {describe(span)}, not "
                                      "[start_ns, end_ns] with start <= end <= 2^63 - 1")


def check_sweep_report(path, doc):
    """Refuse a `ringsim model --workers LIST --json` report (src/cli/
    model.c: rows of workers, algos {name: {sim_ns, predicted_ns}} and the
    fastest of them) that is not what ringsim writes: no rows, a W that is
    not a count of at least 1, a time that is not an integer of ns (up to
    2^63 - 1), or a fastest that is not one of its row's algorithms."""
    def bad(what):
        return ToolError(f"{path}: not `ringsim model --json` output: {what}")
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not rows:
        raise bad("no rows with workers, algos and fastest")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise bad(f"rows[{i}] is {describe(row)}, not an object")
        W, algos, fastest = row.get("workers"), row.get("algos"), row.get("fastest")
        if not is_int(W) or not 1 <= W <= MAX_INT:
            raise bad(f"rows[{i}].workers is {describe(W)}, not a count of workers")
        if not isinstance(algos, dict) or not algos:
            raise bad(f"rows[{i}].algos is {describe(algos)}, not an object of algorithms")
        for name, t in algos.items():
            ns = t.get("sim_ns") if isinstance(t, dict) else None
            if not is_int(ns) or not 0 <= ns <= MAX_INT:
                raise bad(f"rows[{i}].algos.{name}.sim_ns is {describe(ns)}, not a time in ns "
                          "(0 to 2^63 - 1)")
        if fastest not in algos:
            raise bad(f"rows[{i}].fastest is {describe(fastest)}, not one of its algos "
                      f"({', '.join(algos)})")
