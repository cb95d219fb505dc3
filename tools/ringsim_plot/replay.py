"""Reading a ringsim trace (docs/trace-schema.md) and replaying its runs:
open_trace refuses anything that is not a trace of this schema; pick_run
loads a run's row, checked against its own rows (check_run: every
command's runs are loaded through here); the helpers that read a run's row
(its algorithm, status, faults, clock) and its transfers; and the replays
(replay_holdings: the ring by chunk; replay_regions: any algorithm by
region) that say whose contributions each worker's copy holds after each
step, which the chunk diagram, the animation and the page draw.
"""
import fcntl
import json
import os
import pathlib
import sqlite3
import struct
import sys

from . import schema
from .output import ToolError, clean


APPLICATION_ID = 0x5253696D  # "RSim", as src/io/trace.h
SCHEMA_VERSION = 1
PHASES = ("reduce_scatter", "all_gather")  # the ring's, in order


# Short names for step labels (RS0, AG2, EX1, RED0, BC3)
PHASE_ABBREV = {"reduce_scatter": "RS", "all_gather": "AG", "exchange": "EX", "reduce": "RED",
                "broadcast": "BC"}


ALGO_NAMES = {"ring": "ring", "rd": "recursive-doubling (rd)", "rhd": "Rabenseifner (rhd)",
              "linear": "linear", "tree": "double-binary-tree",
              "gloo-ring": "gloo's ring (gloo-ring)",
              "hier": "hierarchical (hier, the ring across nodes)",
              "hier:rd": "hierarchical (hier:rd, recursive doubling across nodes)",
              "hier:rhd": "hierarchical (hier:rhd, Rabenseifner across nodes)",
              "nvls": "NVLink SHARP (nvls, the switch reduces)",
              "nvlstree": "NVLSTree (nvlstree: NVLS in each node, a tree across)",
              "auto": "auto (an algorithm per bucket: table bucket_algo)"}


# hier's algorithm across the nodes (docs/algorithms.md; the trace's algo
# says hier for hier:ring)
HIER_INNER = {"hier": "ring", "hier:ring": "ring", "hier:rd": "rd", "hier:rhd": "rhd"}
# The algorithms whose NVLink switches are participants of the run, each
# numbered after the W workers (participants)
SWITCH_ALGOS = ("nvls", "nvlstree")


# SQLite's result codes (sqlite3.h) that say the trace's -wal or -shm
# could not be made or grown beside it: READONLY, IOERR (a full disk, a
# file size limit), FULL, CANTOPEN
SIDE_FILE_ERRORS = (8, 10, 13, 14)
# the -shm byte every connection holds a read lock on while it has the
# -shm open (SQLite's os_unix.c: UNIX_SHM_DMS, 120 + 8)
SHM_DMS_BYTE = 128


def shm_in_use(shm):
    """Whether another process holds the -shm at shm open (its DMS byte
    locked, fcntl F_GETLK). True where that cannot be told (not Linux's
    struct flock, or the file cannot be opened): the caller keeps it."""
    if not sys.platform.startswith("linux"):
        return True
    try:
        fd = os.open(shm, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        # struct flock: short l_type, l_whence; off_t l_start, l_len; pid_t
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, SHM_DMS_BYTE, 1, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        return struct.unpack("hhqqi4x", answer)[0] != fcntl.F_UNLCK
    except OSError:
        return True
    finally:
        os.close(fd)


def remove_side_files(name, had):
    """Remove the -wal and -shm beside name that a connection of ours made
    (had: which of them were there before) and that no other process has
    come to use since: the -wal only while empty, neither while another
    connection holds the -shm."""
    if shm_in_use(name + "-shm"):
        return
    for side in ("-wal", "-shm"):
        path = name + side
        try:
            if not had[side] and (side == "-shm" or os.path.getsize(path) == 0):
                os.unlink(path)
        except OSError:
            pass


def connect(path):
    """A connection that reads the file at path, and only that file: its
    name given SQLite as a file: URI, percent-encoded (as a URI's text,
    run%31.db would open run1.db, q?x.db q, and h#1.db h, creating it),
    never creating the file. A trace is in WAL mode, where SQLite keeps
    -wal and -shm files beside it while a connection has it open; a
    read-only connection leaves them behind. So where this process may
    write the trace and its directory (where ringsim can), the
    connection is opened read-write with query_only on: it writes
    nothing, and on closing, the last connection to the trace removes
    them, as ringsim's own does, while a writer still working keeps its
    own. Elsewhere (a read-only trace, or directory), or where the -wal
    and -shm cannot be made (a full disk, a file size limit: those it
    made are removed), read-only: immutable when there is no -wal, or an
    empty one (a writer would have one: the file holds every committed
    run), else with the writer's files. A -wal left by a crashed writer
    (no -shm beside it) SQLite cannot read without making a -shm: where
    it cannot, one ToolError saying so."""
    name = os.path.abspath(path)
    uri = pathlib.Path(name).as_uri()  # percent-encoded: %, ?, #, spaces, any byte
    folder = os.path.dirname(name)
    had = {side: os.path.lexists(name + side) for side in ("-wal", "-shm")}
    failed = None
    if os.access(name, os.R_OK | os.W_OK) and os.access(folder, os.W_OK | os.X_OK):
        con = sqlite3.connect(f"{uri}?mode=rw", uri=True)
        try:
            con.execute("PRAGMA query_only = ON")
            con.execute("PRAGMA application_id").fetchone()  # opens the -wal and -shm
            return con
        except sqlite3.Error as e:
            con.close()
            if getattr(e, "sqlite_errorcode", 0) & 0xFF not in SIDE_FILE_ERRORS:
                raise
            remove_side_files(name, had)
            failed = e
    try:
        wal = os.path.getsize(name + "-wal")
    except OSError:
        wal = None
    if wal is None or (wal == 0 and not shm_in_use(name + "-shm")):
        return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
    con = sqlite3.connect(f"{uri}?mode=ro", uri=True)
    try:
        con.execute("PRAGMA application_id").fetchone()
        return con
    except sqlite3.Error as e:
        con.close()
        if getattr(e, "sqlite_errorcode", 0) & 0xFF not in SIDE_FILE_ERRORS or had["-shm"]:
            raise
        remove_side_files(name, had)
        reason = ("the disk is full or the file size limit reached" if failed is not None else
                  "a read-only directory" if not os.access(folder, os.W_OK) else str(e))
        raise ToolError(f"{path}: cannot read the trace here: its -wal ({wal} bytes, a crashed "
                        f"writer's: no -shm beside it) needs a -shm SQLite cannot make "
                        f"({reason}); read a copy of the trace and its -wal where they can be "
                        "written") from None


def open_trace(path):
    """Open the trace at path to read (connect), refusing anything that is
    not a ringsim trace."""
    if not os.path.exists(path):
        raise ToolError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ToolError(f"{path}: is a directory, not a trace")
    con = None
    try:
        con = connect(path)
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:
        if con is not None:
            con.close()
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


# A transfer's integer columns, and those NULL where it was never received
# or the run had no simulated network
TRANSFER_INTS = ("iter", "bucket", "step", "src", "dst", "chunk", "segment", "elem_offset", "elems",
                 "bytes", "seq", "send_begin_ns", "send_end_ns", "contrib_first", "contrib_count")
TRANSFER_NULLABLE = ("recv_begin_ns", "recv_end_ns", "wait_ns", "sim_send_ns", "sim_recv_ns")


def check_run(con, path, run):
    """Refuse a run whose row is not what ringsim writes (schema.py: its
    columns' types, workers 1..4096, its net_model and topology) or
    disagrees with its own rows (a trace edited or damaged by hand:
    workers=1000000000 would have the tools draw, or export, a billion
    workers): W against the worker table, the counts against the
    transfers, every transfer's workers, chunk and contributors within W,
    and the types the tools compute with. Every command's loading goes
    through here (pick_run)."""
    rid = run["run_id"]

    def bad(what):
        return ToolError(f"{path}: run {rid} is inconsistent: {what} (a damaged or edited trace)")
    schema.check_run_row(path, run)  # the row alone: its columns, its net_model
    W = run["workers"]
    workers = con.execute(
        "SELECT count(*), min(worker), max(worker), sum(transfers_sent), "
        "count(*) FILTER (WHERE typeof(worker) || typeof(transfers_sent) || typeof(state) "
        "!= 'integerintegertext') FROM worker WHERE run_id = ?", (rid,)).fetchone()
    rows, first, last, sent_total, mistyped = workers
    if mistyped:
        raise bad(f"{mistyped} of its worker rows hold values of the wrong type")
    if rows and (rows != W or first != 0 or last != W - 1):
        raise bad(f"workers is {W} but the worker table has {rows} rows (workers {first}..{last})")
    # each column's values not integers nor NULL, counted (a count cannot
    # overflow, where sum() of the values would on a trace ringsim wrote:
    # two sends near its 2^62 ns latency): a column's type in one pass
    # (about 1.5 s for a million transfers, with the ranges)
    sums = ", ".join(f"total(typeof({c}) NOT IN ('integer', 'null'))"
                     for c in TRANSFER_INTS + TRANSFER_NULLABLE)
    agg = con.execute(
        "SELECT count(*), min(src), max(src), min(dst), max(dst), min(chunk), max(chunk), "
        "min(step), max(step), min(contrib_first), max(contrib_first), min(contrib_count), "
        "max(contrib_count), min(bucket), max(bucket), min(min(segment), min(elems), min(bytes), "
        f"min(iter), min(elem_offset)), count(*) FILTER (WHERE typeof(phase) != 'text'), {sums} "
        "FROM transfer WHERE run_id = ?", (rid,)).fetchone()
    (n, src0, src1, dst0, dst1, chunk0, chunk1, step0, step1, cf0, cf1, cc0, cc1, b0, b1, low,
     bad_phase) = agg[:17]
    mistyped = [c for c, t in zip(TRANSFER_INTS + TRANSFER_NULLABLE, agg[17:])
                if t] + (["phase"] if bad_phase else [])
    if mistyped:
        raise bad(f"its transfer rows hold values of the wrong type in {', '.join(mistyped)}")
    if not n:
        return
    P = participants(run)  # (the GPUs, then an NVLink switch a node)
    for name, lo, hi, most in (("src", src0, src1, P - 1), ("dst", dst0, dst1, P - 1),
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


def contributors(first, count, workers, gpus=None, src=None, dst=None, order=None):
    """The workers whose contributions a payload holds: contrib_first ..
    +contrib_count round all W; on one of NCCL's channels (order: its ring,
    the workers in its order) round that ring from contrib_first; a hier
    run's message within a node (gpus: its G, from run_gpus; src and dst
    on one node) that holds fewer than all W, round that node's G workers
    (docs/trace-schema.md)."""
    if order is not None and first in order:
        p = order.index(first)
        return {order[(p + k) % workers] for k in range(count)}
    if gpus and src // gpus == dst // gpus and count < workers:
        node = src // gpus * gpus
        return {node + (first + k) % gpus for k in range(count)}
    return {(first + k) % workers for k in range(count)}


def ring_ranges(held, workers):
    """Whose contributions a copy holds, in the one notation --explain, the
    pictures and the viewer share (docs/ring-walkthrough.md, "Notation"):
    'all' when every worker's is in; otherwise the workers in braces,
    ascending, where a run of 3 or more consecutive round the ring is
    written first-last: {1, 3} -> '{1,3}', {0, 1} -> '{0,1}',
    {0..6} -> '{0-6}', {3, 0, 1} of 4 -> '{3-1}', {14, 15, 0, 1} ->
    '{14-1}', {5, 14, 15, 0, 1} -> '{5,14-1}', nothing -> '{}'."""
    held = set(held)
    if len(held) == workers:
        return "all"
    items = []  # (first member, text)
    for w in sorted(held):
        if (w - 1) % workers in held:
            continue  # not a run's first member
        run = [w]
        while (run[-1] + 1) % workers in held:
            run.append((run[-1] + 1) % workers)
        if len(run) >= 3:
            items.append((w, f"{w}-{run[-1]}"))
        else:
            items.extend((m, str(m)) for m in run)
    return "{" + ",".join(text for _, text in sorted(items)) + "}"


def run_config(run):
    """The run's config_json as a dict ({} if it is not one)."""
    try:
        config = json.loads(run.get("config_json") or "{}")
    except (TypeError, ValueError, RecursionError):  # not JSON, or nested too deeply
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


def run_algo(run):
    """The run's --algo ('ring' for a trace written before the column)."""
    return run.get("algo") or "ring"


def bucket_algos(con, run):
    """{bucket: algorithm} from table bucket_algo (empty for an older trace)."""
    try:
        return {b: clean(a) for b, a in con.execute(
            "SELECT bucket, algo FROM bucket_algo WHERE run_id = ?", (run["run_id"],))}
    except sqlite3.OperationalError:
        return {}


def run_topology(run):
    """The --topo of a run loaded by pick_run (its net_model checked:
    schema.check_run_row): nodes, gpus, nics, ...; or None."""
    return schema.run_topology(run)


def participants(run):
    """The run's participants: its W workers (GPUs), then, for nvls and
    nvlstree, each node's NVLink switch, which sums: node n's is W + n in
    the transfer table's src and dst (docs/trace-schema.md)."""
    W = run["workers"]
    if run_algo(run) not in SWITCH_ALGOS:
        return W
    nodes = (run_topology(run) or {}).get("nodes")
    return W + (nodes if isinstance(nodes, int) and 1 <= nodes <= W else 1)


def participant_name(p, W):
    """Participant p as messages name it: "worker p", or node n's NVLink
    switch, participant W + n, "switch n (participant W+n)" (as ringsim's
    own messages name it; docs/trace-schema.md)."""
    return f"worker {p}" if p < W else f"switch {p - W} (participant {p})"


def run_gpus(run):
    """G, the GPUs per node, for a hier run (whose messages within a node
    name their contributors round the node; W, one node, if its topology
    is missing or does not divide W); None for any other."""
    if run_algo(run) not in HIER_INNER:
        return None
    gpus = (run_topology(run) or {}).get("gpus")
    W = run["workers"]
    return gpus if isinstance(gpus, int) and 1 <= gpus <= W and W % gpus == 0 else W


def algo_name(run):
    algo = run_algo(run)
    return ALGO_NAMES.get(algo, algo)


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
    if algo in HIER_INNER:  # the node's reduce-scatter, the inner one's on N, the node's all-gather
        G = run_gpus(run)
        N = W // G
        inner = algo_steps({"workers": N, "algo": HIER_INNER[algo]}) if N > 1 else []
        # a phase's steps are numbered through: the inner reduce-scatter's
        # after the node's, the node's all-gather after the inner one's
        inner = [(ph, s + (G - 1 if ph == "reduce_scatter" else 0)) for ph, s in inner]
        ag = sum(ph == "all_gather" for ph, _ in inner)
        return (phase("reduce_scatter", G - 1) + inner
                + [("all_gather", ag + s) for s in range(G - 1)])
    if algo == "rd":
        return phase("reduce", fold) + phase("exchange", L) + phase("broadcast", fold)
    if algo == "rhd":
        return (phase("reduce", 2 * fold) + phase("reduce_scatter", L) + phase("all_gather", L)
                + phase("broadcast", fold))
    if algo == "linear":
        return phase("reduce", W - 1) + phase("broadcast", W - 1)
    if algo == "tree":
        return phase("reduce", 1) + phase("broadcast", 1)
    if algo == "nvls":  # the switch's reduce, then its multicast
        return phase("reduce_scatter", 1) + phase("all_gather", 1)
    if algo == "nvlstree":  # NVLS's reduce in the node, the tree across, the multicast
        return (phase("reduce_scatter", 1) + phase("reduce", 1) + phase("broadcast", 1)
                + phase("all_gather", 1))
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


def time_columns(clock):
    """The columns a timeline draws. With simulated times (a run with --net),
    a receive bar spans the segment's simulated departure to its receipt
    (on the wire, then queued), and there are no wall-clock sends or waits to
    show; otherwise the wall-clock send and receive spans."""
    if clock == "sim":
        return "sim_send_ns", "sim_send_ns", "sim_send_ns", "sim_recv_ns", "simulated"
    return "send_begin_ns", "send_end_ns", "recv_begin_ns", "recv_end_ns", "wall"


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


def channel_clause(con, channel):
    """SQL and its parameters for the channel a replay reads (None: every
    transfer, as on one channel)."""
    if channel is None:
        return "", ()
    return f"AND {channel_column(con)} = ? ", (channel,)


def replay_holdings(con, run, bucket=None, channel=None):
    """Replay the ring from the trace: after each step, whose contributions
    each worker's copy of each chunk holds. Returns a list of
    (title, holds, arrows, info) per stage, starting with the inputs;
    holds[w][c] is a set of workers, arrows a list of (src, dst, chunk,
    received), info a dict with the stage's phase and step (None at the start).
    A transfer sent but never received (a failed run) is an arrow with
    received False and changes nothing. bucket: which bucket (default the
    first). channel: one of NCCL's channels (run_channels's dict), whose
    chunks of its part are replayed, the contributors counted round its
    ring; None: every transfer (a run on one channel)."""
    W = run["workers"]
    holds = [[{w} for _ in range(W)] for w in range(W)]
    stages = [("start: each worker holds its own gradient", snapshot(holds),
               [], {"phase": None, "step": None})]
    chan, chan_args = channel_clause(con, channel and channel["channel"])
    order = channel["order"] if channel else None
    rows = con.execute(
        "SELECT phase, step, src, dst, chunk, contrib_first, contrib_count, "
        "recv_end_ns IS NOT NULL FROM transfer "
        "WHERE run_id = ? AND segment = 0 AND iter = (SELECT min(iter) FROM transfer WHERE run_id = ?) "
        + bucket_clause(bucket) + chan + "ORDER BY phase = 'all_gather', step, src",
        (run["run_id"],) * (2 if bucket is not None else 3) + chan_args).fetchall()
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
                payload = contributors(first, count, W, order=order)
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
    rhd's even worker with its partner's summed half (fold-in step 1);
    hier's receivers as its algorithm across the nodes (within the node a
    reduce-scatter and an all-gather)."""
    algo = HIER_INNER.get(algo, algo)
    if phase in ("all_gather", "broadcast"):
        return True
    return (algo == "linear" and phase == "reduce" and step == 0) or \
        (algo == "rhd" and phase == "reduce" and step == 1)


def schedule_messages(con, run, bucket=None, channel=None):
    """The messages of the first bucket of the first iteration, read from
    the trace: the segments of one message (same phase, step, sender,
    receiver and contributors; for the tree, the same half) merged into one
    region. A list of dicts (phase, step, src, dst, first, count, off, end,
    received, t, half), in the order they were sent; off and end count
    elements from the bucket's start. bucket: which bucket (default the
    first); channel: one of NCCL's channels' number (its messages alone;
    None: every one)."""
    rid = run["run_id"]
    chan, chan_args = channel_clause(con, channel)
    where = ("WHERE run_id = ? AND iter = (SELECT min(iter) FROM transfer WHERE run_id = ?) "
             + bucket_clause(bucket))
    args = (rid,) * (2 if bucket is not None else 3)
    rows = con.execute(
        "SELECT phase, step, src, dst, chunk, elem_offset, elems, contrib_first, contrib_count, "
        "recv_end_ns IS NOT NULL, send_begin_ns FROM transfer "
        + where + chan + "ORDER BY send_begin_ns, src, seq", args + chan_args).fetchall()
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
    if channel is not None:  # from the bucket's start, not the channel's part's
        base = con.execute("SELECT min(elem_offset) FROM transfer " + where,
                           args).fetchone()[0] or 0
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


def replay_regions(con, run, bucket=None, channel=None):
    """Replay any algorithm from its trace (the ring's as replay_holdings
    does, by chunk): whose contributions each worker's copy of each region
    holds after each step. The regions are the pieces the messages cut the
    bucket into (rd and linear: the whole bucket; rhd: the P parts its
    halvings make; the tree: its two halves; hier: its G blocks, each cut
    as its algorithm across the nodes cuts it, named as --explain names
    them). Returns (stages, regions): stages as replay_holdings's,
    holds[w][k] for region k and arrows (src, dst, first region, end
    region, received); regions a list of (label, first element, elements).

    A step is a (phase, step) of the trace, in the order --inject counts
    them; the tree's reduce and broadcast (one step each) are cut into
    levels, tree 0 then tree 1, as --explain narrates them. A receiver
    folds the payload's contributors (the trace's contrib_first,
    contrib_count) into its region's, or copies them (receives_by_copy);
    linear's root adds its own data, set aside, after the last reduce.
    bucket: which bucket (default the first); channel: one of NCCL's
    channels (run_channels's dict: its messages alone, its regions those
    of its part; None: every message)."""
    W, algo = run["workers"], run_algo(run)
    gpus = run_gpus(run)
    messages = schedule_messages(con, run, bucket, channel and channel["channel"])
    # nvls, nvlstree: what a worker takes from its node's switch (the sum
    # it heads, the multicast's copies) is what it holds; the copies put
    # into the switch (participants W and up) are neither drawn nor held
    switched = [m for m in messages if m["src"] >= W or m["dst"] >= W]
    messages = [m for m in messages if m["dst"] < W]
    cuts = sorted({m["off"] for m in messages + switched} |
                  {m["end"] for m in messages + switched})
    if not cuts:
        raise ToolError(f"run {run['run_id']} has no transfers to draw")
    labels = {"rhd": "part", "tree": "half", "gloo-ring": "chunk",
              # hier's blocks as its algorithm across the nodes cuts them
              "hier": "chunk", "hier:rd": "block", "hier:rhd": "part"}
    if len(cuts) == 2:
        regions = [("buffer", cuts[0], cuts[1] - cuts[0])]
    else:
        word = "block" if gpus == W else labels.get(algo, "region")  # hier on one node: blocks
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
            payload = contributors(m["first"], m["count"], W, gpus, m["src"], m["dst"])
            a, b = span(m)
            for k in range(a, b):
                if receives_by_copy(algo, phase, step):
                    holds[m["dst"]][k] = set(payload)
                else:
                    holds[m["dst"]][k] = holds[m["dst"]][k] | payload
        title = f"{phase_label(phase)} step {step}"
        if HIER_INNER.get(algo, algo) in ("rd", "rhd") and phase in ("reduce", "broadcast"):
            title = f"{'fold-in' if phase == 'reduce' else 'fold-out'} ({title})"
        if gpus:  # hier: within the nodes or across them (all of a step's messages alike)
            within = all(m["src"] // gpus == m["dst"] // gpus for m in ms)
            title = f"{'within' if within else 'across'} nodes, {title}"
        if algo == "tree":
            level = -key[4] if phase == "reduce" else key[4]
            title = (f"tree {key[3]} {phase}, level {level} up to {level - 1}" if phase == "reduce"
                     else f"tree {key[3]} {phase}, level {level - 1} down to {level}")
        stages.append((title, snapshot(holds),
                       [(m["src"], m["dst"], *span(m), m["received"]) for m in ms
                        if m["src"] < W],
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


def channel_column(con):
    """The transfer's channel (NCCL's, `ringsim --channels`) as a select
    expression: 0 in a trace from before the column, or in its older runs."""
    cols = {r[1] for r in con.execute("PRAGMA table_info(transfer)")}
    return "coalesce(channel, 0)" if "channel" in cols else "0"


def run_channels(con, run, bucket=None):
    """NCCL's channels (ringsim --channels) that moved the bucket (default
    the first) in the first iteration, from the trace's channel column:
    a list of dicts, channel by channel: channel (its number), off and
    end (its part: elements [off, end) of the flat buffer) and order (the
    ring's: the workers along it, position p the sender of chunk p at
    reduce-scatter step 0, as rank p sends chunk p; None for another
    algorithm, or where the trace cannot say). One entry for a run on one
    channel (channel 0), as for a trace from before the column."""
    rid = run["run_id"]
    chan = channel_column(con)
    where = ("WHERE run_id = ? AND iter = (SELECT min(iter) FROM transfer WHERE run_id = ?) "
             + bucket_clause(bucket))
    args = (rid,) * (2 if bucket is not None else 3)
    # (by the name: a trace from before the column groups by the constant 0)
    rows = con.execute(f"SELECT {chan} AS ch, min(elem_offset), max(elem_offset + elems) "
                       "FROM transfer " + where + "GROUP BY ch ORDER BY ch", args).fetchall()
    out = []
    W = run["workers"]
    for ch, off, end in rows:
        order = None
        if run_algo(run) == "ring":
            senders = dict(con.execute(
                "SELECT chunk, src FROM transfer " + where + f"AND {chan} = ? "
                "AND phase = 'reduce_scatter' AND step = 0 AND segment = 0", args + (ch,)))
            order = [senders.get(p) for p in range(W)]
            if sorted(w for w in order if w is not None) != list(range(W)):
                order = None
        out.append({"channel": ch, "off": off, "end": end, "order": order})
    return out
