"""ringsim from Python: the real threaded all-reduce on your own gradients.

    >>> import ringsim, torch
    >>> avg = ringsim.ddp_allreduce_average_grads(
    ...     [{"w": torch.tensor([1.0, 2.0])}, {"w": torch.tensor([3.0, 4.0])}])
    >>> avg
    {'w': tensor([2., 3.])}

One simulated worker (a POSIX thread of libringsim) per dict, real ring
reduce-scatter and all-gather through bounded queues, every worker's
result checked against the direct mean. Standard library only (ctypes);
torch or numpy only as the caller's tensors bring them. docs/python.md says
everything; the library is found as ringsim._lib says.
"""
import ctypes
import json
import os
import sys

from . import _interrupt, _lib, _powersgd

# The package's version: project(VERSION) of the top CMakeLists.txt
# (tests/test_install.py checks they are equal); the library loaded must be
# of the same (_lib.load says otherwise at import, an ImportError).
__version__ = "0.2.0"
__all__ = ["allreduce", "ddp_allreduce_average_grads", "RunError",
           "library_path"]

# ringsim's codes (RS_ERRNO_MAP) that mean bad input, not a failed run
_RS_OK, _RS_EINVAL, _RS_ENOMEM, _RS_EIO, _RS_EPARSE = 0, -1, -2, -3, -4
_RS_ECHECK, _RS_ETRACE = -8, -11

# element type: ringsim's name, bytes per element as tensors store it,
# bytes per element in a run's buffer, rs_dtype_t
_DTYPES = {
    "float32": ("f32", 4, 4, _lib.DTYPE_F32),
    "float64": ("f64", 8, 8, _lib.DTYPE_F64),
    "float16": ("f16", 2, 4, _lib.DTYPE_F16),
    "bfloat16": ("bf16", 2, 4, _lib.DTYPE_BF16),
}
_SUPPORTED = "float32, float64, float16 or bfloat16"
_KIND = {"torch": "torch tensor", "numpy": "numpy array"}


# Found and loaded on import, so that a missing library, or one of another
# version, is an ImportError that says where it was looked for.
_lib.load(__version__)


class RunError(RuntimeError):
    """A run that started and failed (a worker timed out or crashed, a
    message was lost or damaged, the trace could not be written), or whose
    result failed its check. str(e) is ringsim's one-line message; e.report
    is the run's report (the --json content, status "failed",
    "check_failed" or "interrupted"); e.watchdog, for a failed ring, says
    where every worker stopped (the report's "watchdog"), else None."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report
        self.watchdog = report.get("watchdog")


def library_path():
    """The path of the libringsim.so in use."""
    return _lib.path()


# ---- strings and paths --------------------------------------------------


def _c_string(value, argument, path=False):
    """The bytes libringsim's C functions take for a string or path
    argument: the one conversion every string and path argument of the API
    goes through (argument names it in messages).

    A path (path=True) is what open() takes: a str, bytes or os.PathLike,
    a str encoded as the file system encodes names (os.fsencode). Any other
    string is a str, encoded as UTF-8. A C string ends at its first NUL, so
    a value holding one would reach ringsim cut short there (a trace
    "runs\\0.db" would be the file "runs"): ValueError, as open() refuses
    one."""
    if path:
        try:
            value = os.fspath(value)
        except TypeError:
            raise TypeError(f"{argument} must be a path (str, bytes or "
                            f"os.PathLike), not {type(value).__name__}") \
                from None
        data = os.fsencode(value)
    elif isinstance(value, str):
        try:
            data = value.encode()
        except UnicodeEncodeError as e:
            raise ValueError(f"{argument} {value!r}: character {e.start} "
                             f"cannot be encoded as UTF-8 ({e.reason})") \
                from None
    else:
        raise TypeError(f"{argument} must be a str, not "
                        f"{type(value).__name__}")
    if b"\0" in data:
        raise ValueError(f"{argument} {value!r}: holds a NUL character (at "
                         f"byte {data.index(0)}), where a C string ends: "
                         f"ringsim would read it cut short")
    return data


# ---- the caller's tensors -----------------------------------------------


class _Tensor:
    """One input tensor as ringsim reads it: kind ("torch", "numpy"), dtype
    name, shape, element count, and either the address of its elements (a
    C-contiguous CPU tensor whose address is a multiple of its element's
    size, read in place) or, for any other (a view, a tensor on another
    device, one at an odd address: np.frombuffer(..., offset=1), which C
    may not load a uint16_t from), ptr None: fill() has torch or numpy copy it
    straight into its worker's buffer once the run is made, after
    ringsim's memory check, never into a contiguous copy of its own (a
    broadcast view of a few bytes may stand for terabytes)."""

    __slots__ = ("kind", "dtype", "shape", "elems", "ptr", "keep", "device")

    def __init__(self, t, where):
        torch = sys.modules.get("torch")
        np = sys.modules.get("numpy")
        if torch is not None and isinstance(t, torch.Tensor):
            self.kind = "torch"
            self.dtype = str(t.dtype).replace("torch.", "")
            self.device = str(t.device)
            _dense(torch, t, where)
            if self.dtype not in _DTYPES:
                raise ValueError(f"{where} is {t.dtype}: ringsim reduces "
                                 f"{_SUPPORTED}")
            t = t.detach()
            self.shape = tuple(t.shape)
            self.elems = t.numel()
            in_place = (t.device.type == "cpu" and t.is_contiguous() and
                        not t.is_neg() and not t.is_conj() and
                        t.data_ptr() % t.element_size() == 0)
            self.ptr = t.data_ptr() if in_place else None
        elif np is not None and isinstance(t, (np.ndarray, np.generic)):
            t = np.asarray(t)  # a numpy scalar is a 0-d array
            self.kind = "numpy"
            self.device = "cpu"
            self.dtype = t.dtype.name
            if self.dtype not in _DTYPES or t.dtype.kind != "f":
                raise ValueError(f"{where} is numpy {t.dtype.name}: ringsim "
                                 f"reduces {_SUPPORTED}")
            self.shape = tuple(t.shape)
            self.elems = t.size
            in_place = (t.flags.c_contiguous and t.dtype.isnative and
                        t.flags.aligned)
            self.ptr = t.__array_interface__["data"][0] if in_place else None
        else:
            raise TypeError(f"{where} is a {type(t).__module__}."
                            f"{type(t).__qualname__}: expected a torch "
                            f"tensor or a numpy array")
        self.keep = t  # the memory ptr points into lives as long as this

    def fill(self, lib, rs_dtype, address):
        """The elements into a run's buffer at address (widened to float
        for float16 and bfloat16, as rs_dtype_unpack does)."""
        if not self.elems:
            return
        if self.ptr is not None:
            lib.rs_dtype_unpack(rs_dtype, address, self.ptr, self.elems)
            return
        # the buffer's elements as an array of its own dtype, and the
        # tensor copied into it element by element, converted exactly
        # (float16 and bfloat16 widen to float32 without rounding)
        c_type = ctypes.c_double if rs_dtype == _lib.DTYPE_F64 else \
            ctypes.c_float
        buffer = (c_type * self.elems).from_address(address)
        if self.kind == "torch":
            torch = sys.modules["torch"]
            out = torch.frombuffer(buffer, dtype=torch.float64 if c_type is
                                   ctypes.c_double else torch.float32)
            out.view(self.shape).copy_(self.keep)
        else:
            np = sys.modules["numpy"]
            np.copyto(np.frombuffer(buffer, dtype=c_type).reshape(self.shape),
                      self.keep)


def _dense(torch, t, where):
    """Refuse a torch tensor whose values cannot be read as a dense array:
    ValueError naming it."""
    if t.is_nested:
        raise ValueError(f"{where} is a nested tensor: ringsim reads dense "
                         f"(torch.strided) tensors of one shape")
    if t.layout != torch.strided:
        sparse = "a sparse tensor" if "sparse" in str(t.layout) else \
            "a tensor"
        raise ValueError(f"{where} is {sparse} ({t.layout}): ringsim reads "
                         f"dense (torch.strided) tensors; give t.to_dense()")
    if t.device.type == "meta":
        raise ValueError(f"{where} is on device meta, which holds no values "
                         f"(only shapes and dtypes)")
    if t.device.type != "cpu" and t.numel():
        try:  # one element, to know that its values can be read here
            t.detach()[(0,) * t.dim()].cpu()
        except (RuntimeError, NotImplementedError) as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else \
                type(e).__name__
            raise ValueError(f"{where} is on device {t.device}, whose values "
                             f"cannot be copied to the CPU: {reason}") \
                from None


def _read_inputs(worker_grads):
    """The workers' tensors, checked: [[_Tensor per param] per worker], and
    the param names in worker 0's order."""
    if isinstance(worker_grads, dict) or not isinstance(worker_grads,
                                                        (list, tuple)):
        raise TypeError("worker_grads must be a list with one dict "
                        "{param name: tensor} per worker, not a "
                        f"{type(worker_grads).__name__}")
    if not worker_grads:
        raise ValueError("worker_grads is empty: give one dict of gradients "
                         "per worker")
    for w, grads in enumerate(worker_grads):
        if not isinstance(grads, dict):
            raise TypeError(f"worker_grads[{w}] must be a dict {{param name: "
                            f"tensor}}, not a {type(grads).__name__}")
    names = list(worker_grads[0])
    if not names:
        raise ValueError("worker_grads[0] is empty: a worker needs at least "
                         "one gradient")
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"worker_grads[0]: param name {name!r} must be "
                             f"a non-empty string")
        _c_string(name, "worker_grads[0]: param name")
    workers = []
    first = None
    for w, grads in enumerate(worker_grads):
        if set(grads) != set(names):
            missing = [n for n in names if n not in grads]
            extra = [n for n in grads if n not in set(names)]
            what = (f"lacks {missing[0]!r}" if missing else
                    f"has {extra[0]!r}, which worker_grads[0] lacks")
            raise ValueError(f"worker_grads[{w}] {what}: every worker needs "
                             f"the same param names")
        row = []
        for i, name in enumerate(names):
            t = _Tensor(grads[name], f"worker_grads[{w}][{name!r}]")
            if w == 0 and i == 0:
                first = (t, name)
            if t.kind != first[0].kind:
                raise ValueError(f"worker_grads[{w}][{name!r}] is a "
                                 f"{_KIND[t.kind]} but worker_grads[0]"
                                 f"[{first[1]!r}] is a "
                                 f"{_KIND[first[0].kind]}: give all of one "
                                 f"kind")
            if t.dtype != first[0].dtype:
                raise ValueError(f"worker_grads[{w}][{name!r}] is {t.dtype} "
                                 f"but worker_grads[0][{first[1]!r}] is "
                                 f"{first[0].dtype}: ringsim reduces one "
                                 f"dtype per call (DDP buckets are per "
                                 f"dtype)")
            if w and t.shape != workers[0][i].shape:
                raise ValueError(f"worker_grads[{w}][{name!r}] has shape "
                                 f"{list(t.shape)} but worker_grads[0]"
                                 f"[{name!r}] has {list(workers[0][i].shape)}"
                                 f": shapes must match across workers")
            if len(t.shape) > 8:
                raise ValueError(f"worker_grads[{w}][{name!r}] has "
                                 f"{len(t.shape)} dimensions: ringsim takes "
                                 f"at most 8")
            row.append(t)
        workers.append(row)
    return workers, names


def _new_output(like):
    """An empty CPU tensor of like's kind, dtype and shape."""
    if like.kind == "torch":
        torch = sys.modules["torch"]
        t = torch.empty(like.shape, dtype=getattr(torch, like.dtype))
        return t, t.data_ptr()
    np = sys.modules["numpy"]
    a = np.empty(like.shape, dtype=like.dtype)
    return a, a.__array_interface__["data"][0]


# ---- options ------------------------------------------------------------


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


# The options whose value is text (a name or a spec): a str, or for
# inject, link and straggler a list of them. (The others take numbers or
# booleans, written as the command line would.)
_TEXT_OPTIONS = ("op", "algo", "average", "loop", "net", "topo", "link",
                 "straggler", "reduce_rate", "inject", "like", "hook", "proto")


def _settings(workers, options):
    """[(rs_config_set option, its value as bytes)] and the command line
    they match."""
    settings, argv = [("workers", str(workers).encode())], \
        ["--workers", str(workers)]
    for name, value in options.items():
        if value is None:
            continue
        listed = name in ("inject", "link", "straggler") and \
            isinstance(value, (list, tuple))
        values = value if listed else [value]
        for i, v in enumerate(values):
            if v is False and name in ("direct", "checksum", "order_report"):
                continue
            if name in _TEXT_OPTIONS and not isinstance(v, str):
                label = f"{name}[{i}]" if listed else name
                raise TypeError(f"{label} must be a str, not "
                                f"{type(v).__name__}" +
                                (" (or a list of str)" if name in
                                 ("inject", "link", "straggler") else ""))
            settings.append((name, _c_string(
                _text(v), f"{name}[{i}]" if listed else name)))
            argv.append("--" + name.replace("_", "-"))
            if not isinstance(v, bool):
                argv.append(_text(v))
    # the test knobs, from the environment as the command takes them
    # (libringsim reads none): RINGSIM_TEST_FLIP, RINGSIM_MPI_TRACE_BATCH
    for variable in ("RINGSIM_TEST_FLIP", "RINGSIM_MPI_TRACE_BATCH"):
        if variable in os.environ:
            settings.append((variable[8:].lower().replace("_", "-"),
                             _c_string(os.environ[variable], variable)))
    return settings, argv


class _Owned:
    """The C objects of one call, freed in reverse order of creation."""

    def __init__(self, lib):
        self.lib = lib
        self.frees = []

    def own(self, ptr, free):
        self.frees.append((ptr, free))
        return ptr

    def close(self):
        while self.frees:
            ptr, free = self.frees.pop()
            free(ptr)


def _execute(lib, run):
    """rs_run_execute so that Ctrl-C stops the run (rs_run_interrupt) and
    KeyboardInterrupt is raised once the run has ended, never before: the
    run is freed after (_interrupt.call says how)."""
    return _interrupt.call(lambda: lib.rs_run_execute(run),
                           lambda why: lib.rs_run_interrupt(run, why),
                           "ringsim-run")


def allreduce(worker_grads, op="avg", algo="ring", average="post",
              bucket_mb=None, segment_bytes=None, slots=None, timeout=None,
              loop=None, direct=False, checksum=False, order_report=False,
              net=None, topo=None, link=None, straggler=None,
              reduce_rate=None, inject=None, trace=None, model_name="python",
              like=None, hook=None, proto=None, channels=None):
    """All-reduce worker_grads (a list of W dicts {name: tensor}, one per
    worker; same names, shapes and dtype in every dict; torch tensors or
    numpy arrays of float32, float64, float16 or bfloat16) on W threads as
    `ringsim` does, and return (result, report).

    result: {name: tensor} in worker 0's name order, of the inputs' kind,
    dtype and shape (on the CPU): what every worker holds after the
    all-reduce (they are checked to be bitwise identical). The inputs are
    not modified.

    report: the command's --json report as a dict (identical, max_abs_err,
    bound, transfers, bytes_sent, wall_ns, sim_ns with net or topo, run_id with
    trace, ...; docs/cli.md).

    The options are the command's (docs/cli.md): op (sum, avg, min, max,
    prod), algo (ring, rd, rhd, linear, tree, gloo-ring, auto), average (pre,
    post, pre-mul; op avg only), bucket_mb (DDP's bucket cap, default 25; 0: one bucket),
    segment_bytes, slots, timeout (seconds), loop (steps, slices), direct,
    checksum, order_report, net ("latency=5us,bandwidth=25GB/s"), topo
    (nodes of GPUs, their links and NICs, instead of net: "dgx-h100,nodes=1"
    for W=8, or "nodes=2,gpus=4,nics=1,intra=1us/100GB/s,nic=5us/25GB/s";
    W must be nodes x gpus; docs/topology.md), link and
    straggler (a spec or a list), reduce_rate ("10GB/s"), proto (NCCL's
    protocol the network model moves bytes with: "LL", "LL128", "Simple";
    docs/algorithms.md), channels (the ring on C of NCCL's channels, 1 to
    64: each bucket cut between them, each a ring on its part;
    None: NCCL's count on a topology NCCL's model knows, else 1;
    docs/algorithms.md), inject (a fault
    spec or a list, "crash:worker=1,step=0"), trace (None, or the path of
    a SQLite trace to append the run to: a str, bytes or os.PathLike, as
    open() takes); model_name names the model in the
    report and the trace; like="ddp-gloo" is PyTorch 1.13's DDP on gloo, bit
    for bit (algo gloo-ring, average pre-mul and DDP's bucket layout, as
    --like ddp-gloo; give no op, algo or average with it); hook is a DDP
    communication hook as PyTorch 1.13's ("allreduce", "fp16", "bf16",
    "none" or "powersgd:rank=R[,...]", as --hook; docs/hooks.md): it
    averages, dividing each bucket by
    W before the sum, so give no op or average with it; the report's "hook"
    entry says what a compressing hook's cast and division lost.
    "powersgd:rank=R" is one PowerSGD step from fresh state (float32
    only; its Qs ringsim's normal stream from seed 0, not torch's, or
    read from FILE with "powersgd:rank=R[,...],q=FILE" as the command's
    --hook reads them, {s} in FILE the step: 1), three
    all-reduces a bucket: result is P Q^T and the uncompressed params'
    mean, and report the command's --json for --hook powersgd (mode
    "powersgd", its buckets, tensors and steps, docs/cli.md) instead.

    Raises TypeError when worker_grads is not a list of dicts of tensors;
    ValueError (with ringsim's one-line message) for empty input, names,
    shapes or dtypes that differ across workers, an unsupported dtype,
    non-finite values, a bad option, a string or path holding a NUL
    character (refused, never cut short) or a trace file that cannot be
    used;
    RunError (a RuntimeError carrying the report and the watchdog) when the
    run fails once started or its check fails; MemoryError when the run
    does not fit in memory.
    """
    lib = _lib.load()
    workers, names = _read_inputs(worker_grads)
    # Every string and path argument is refused here if it holds a NUL,
    # before anything looks at it; the options' values are converted again
    # as _settings passes them on.
    for argument, value in (("op", op), ("algo", algo), ("average", average),
                            ("like", like), ("hook", hook)):
        if value is not None:
            _c_string(_text(value), argument)
    _c_string(str(model_name), "model_name")
    c_trace = None if trace is None else _c_string(trace, "trace", path=True)
    W = len(workers)
    first = workers[0]
    dtype_name, _, buf_size, rs_dtype = _DTYPES[first[0].dtype]
    if average not in (None, "post") and op != "avg":
        raise ValueError(f"average={average!r} applies to op 'avg' only, "
                         f"not {op!r}")
    powersgd = isinstance(hook, str) and hook.startswith("powersgd")
    # powersgd's Qs from a file, last (a file name may hold commas), as
    # the command takes them off before the library sees the hook
    q_file = None
    if powersgd and hook.startswith("powersgd:") and ",q=" in hook:
        q_file = hook[hook.index(",q=") + 3:]
        if not q_file:
            raise ValueError(f"hook {hook!r}: expected powersgd:rank=R,"
                             "q=FILE (q= names no file)")
        q_file = (hook, q_file, _c_string(q_file.replace("{s}", "1"),
                                          "hook's q=", path=True))
    if powersgd and order_report:
        raise ValueError(f"order_report counts one all-reduce's orders; "
                         f"hook={hook!r} runs three a bucket (its report "
                         "says what each moved)")
    if hook not in (None, "none") and (op, average) != ("avg", "post"):
        raise ValueError(f"hook={hook!r} averages (it divides each bucket by "
                         "W, then sums); give no op or average with it")
    if like is not None:
        if (op, algo, average) != ("avg", "ring", "post"):
            raise ValueError(f"like={like!r} sets algo gloo-ring, op avg and "
                             "average pre-mul; give none of them with it")
        algo = "gloo-ring"  # for its segments below; the run sets the rest
    # an algorithm's own segment size (gloo-ring: gloo's largest), unless
    # given, as the command's
    own = _lib.algo_info(_c_string(algo, "algo")) \
        if isinstance(algo, str) else None
    if own is not None and own.segment_bytes and segment_bytes is None:
        segment_bytes = own.segment_bytes
    hooked = hook not in (None, "none")
    # the average the run takes, as the command's trace names it: a hook's
    # (pre) and --like's (pre-mul) are theirs, given as no --average
    effective = "pre-mul" if like is not None else "pre" if hooked else \
        average if op == "avg" else None
    options = {"like": like} if like is not None else {
        "op": op, "algo": algo,
        "average": average if op == "avg" and not hooked else None}
    options.update({
        "bucket_mb": bucket_mb, "segment_bytes": segment_bytes, "slots": slots,
        "timeout": timeout, "loop": loop, "direct": direct,
        "checksum": checksum, "order_report": order_report, "net": net,
        "topo": topo, "link": link, "straggler": straggler, "reduce_rate": reduce_rate,
        "proto": proto, "channels": channels, "inject": inject,
        "hook": hook[:hook.index(",q=")] if q_file else hook})
    settings, argv = _settings(W, options)
    if q_file:  # the command line names the file
        argv[argv.index("--hook") + 1] = hook
    if c_trace is not None:
        trace = os.fsdecode(c_trace)  # as the report names it
        settings.append(("traced", b"true"))
    model = {"name": str(model_name),
             "params": [{"name": n, "shape": list(t.shape), "dtype": dtype_name}
                        for n, t in zip(names, first)]}
    err = ctypes.create_string_buffer(_lib.ERRMSG_MAX)

    def fail(exc, code=None):
        message = err.value.decode(errors="replace")
        return (MemoryError if code == _RS_ENOMEM else exc)(message)

    owned = _Owned(lib)
    try:
        text = json.dumps(model).encode()
        handle = ctypes.c_void_p()
        rc = lib.rs_model_parse(text, len(text), b"worker_grads",
                                ctypes.byref(handle), err)
        if rc:
            raise fail(ValueError, rc)
        model_ptr = owned.own(handle.value, lib.rs_model_free)
        if powersgd:  # three runs a bucket: _powersgd.py
            conf = None if c_trace is None else json.dumps(
                {"api": "python", "params": None, "workers": W, "op": op,
                 "average": effective, "grads": "python", "algo": algo,
                 "argv": argv}).encode()
            return _powersgd.allreduce(lib, owned, workers, names, first,
                                       settings, model_ptr, c_trace, conf,
                                       q_file, _new_output, RunError)
        config = _lib.new_config(lib, owned, settings, err, fail)
        # algo auto without net: this machine, measured (tens of ms)
        rc = lib.rs_config_measure_machine(config, err)
        if rc:
            raise fail(RuntimeError, rc)
        handle = ctypes.c_void_p()
        rc = lib.rs_run_create(config, model_ptr, ctypes.byref(handle), err)
        if rc:
            raise fail(ValueError, rc)
        run = owned.own(handle.value, lib.rs_run_free)
        if trace is not None:
            handle = ctypes.c_void_p()
            rc = lib.rs_trace_open(c_trace, ctypes.byref(handle), err)
            if rc == _RS_ETRACE:  # its lock not had in time: nothing ran
                raise RunError(err.value.decode(errors="replace"), {})
            if rc:
                raise fail(ValueError)
            # closed after the run is freed (owned frees in reverse)
            owned.frees.insert(0, (handle.value, lib.rs_trace_close))
            conf = json.dumps({"api": "python", "params": None,
                               "workers": W, "op": op,
                               "average": effective,
                               "grads": "python", "algo": algo,
                               "argv": argv})
            if lib.rs_run_set_trace(run, handle.value, conf.encode()):
                raise RunError(lib.rs_run_errmsg(run).decode(
                    errors="replace"), {})

        # Each worker's tensors straight into its flat buffer, param after
        # param (DDP's flat view), widened to float for f16 and bf16.
        for w, row in enumerate(workers):
            base = lib.rs_run_buffer(run, w)
            offset = 0
            for t in row:
                t.fill(lib, rs_dtype, base + offset * buf_size)
                offset += t.elems
        lib.rs_run_mark_filled(run)
        status = _execute(lib, run)

        facts_ptr = lib.rs_run_facts_json(run, model_ptr)
        if not facts_ptr:
            raise MemoryError("ringsim: out of memory")
        try:
            facts = json.loads(ctypes.string_at(facts_ptr).decode())
        finally:
            lib.rs_free(facts_ptr)
        message = facts["error"] or ""
        if status in (_RS_EINVAL, _RS_EIO, _RS_EPARSE):
            raise ValueError(message)  # refused before its ring ran
        if status == _RS_ENOMEM:
            raise MemoryError(message)

        # What worker 0 holds: every worker's result once the all-reduce
        # completed (the check says they are identical).
        held = {}
        base = lib.rs_run_buffer(run, 0)
        offset = 0
        for name, t in zip(names, first):
            out, ptr = _new_output(t)
            if t.elems:
                lib.rs_dtype_pack(rs_dtype, ptr, base + offset * buf_size,
                                  t.elems)
            offset += t.elems
            held[name] = out
        # The report is the library's, as the command's --json is
        # (rs_run_report_json), but for the result's values: its JSON
        # gives each in the shortest decimal that reads back as the same
        # value of the dtype; here they are the values worker 0 holds, as
        # Python floats (a failed run's too: what it held when it stopped).
        opts = _lib.ReportOpts(b"given by Python (ringsim.allreduce)",
                               os.fsencode(trace) if trace else None, status,
                               0)
        report_ptr = lib.rs_run_report_json(run, model_ptr, ctypes.byref(opts))
        if not report_ptr:
            raise MemoryError("ringsim: out of memory")
        try:
            report = json.loads(ctypes.string_at(report_ptr).decode())
        finally:
            lib.rs_free(report_ptr)
        report["trace"] = trace  # (as given: a name JSON cannot hold too)
        if "result" in report:
            report["result"] = {
                name: [v if v == v and abs(v) != float("inf") else None
                       for v in out.reshape(-1).tolist()]
                for name, out in held.items()}
        if status != _RS_OK:
            raise RunError(message, report)
        return held, report
    finally:
        owned.close()


def ddp_allreduce_average_grads(worker_grads, **options):
    """Average gradients across workers as DDP's all-reduce does.

    worker_grads: one dict {param name: tensor} per worker (torch tensors
    or numpy arrays; float32, float64, float16 or bfloat16; the same names,
    shapes and dtype in every dict). Returns {param name: mean over
    workers}, of the same kind, dtype and shape, on the CPU: what every
    worker holds after ringsim really ran the all-reduce (op avg) on one
    thread per worker. options: those of ringsim.allreduce (algo,
    average, bucket_mb, net, topo, trace, ...), except op.

    >>> import torch
    >>> w0 = {"w": torch.tensor([1.0, 2.0])}
    >>> w1 = {"w": torch.tensor([3.0, 4.0])}
    >>> ddp_allreduce_average_grads([w0, w1])
    {'w': tensor([2., 3.])}
    """
    if "op" in options:
        raise TypeError("ddp_allreduce_average_grads always averages (op "
                        "avg); for another op call ringsim.allreduce")
    return allreduce(worker_grads, op="avg", **options)[0]
