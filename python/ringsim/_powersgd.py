"""ringsim.allreduce(..., hook="powersgd:rank=R[,...]"): one step of
PyTorch 1.13's powerSGD_hook (docs/hooks.md) through libringsim's
rs_powersgd_* calls, its report the command's --json text
(rs_powersgd_json). A step is three all-reduces a bucket, each a run of
its own: Ctrl-C interrupts the one running, and the stop flag the ones
not started."""
import ctypes
import json
import re
import threading

from . import _interrupt, _lib

_RS_OK, _RS_EINVAL, _RS_ENOMEM, _RS_EIO, _RS_EPARSE = 0, -1, -2, -3, -4
_RS_ECHECK = -8

# the Qs of a call: ringsim's own normal stream from this seed, as the
# command's without --seed (not torch's)
SEED = 0


def _execute(lib, ps, plain, trace, conf):
    """rs_powersgd_execute on a helper thread while the calling thread
    waits, as ringsim._execute runs one run (its docstring says why): for
    the step's length SIGINT only stops it, the stop flag for the runs not
    started and rs_run_interrupt for the one running (known through the
    watch callback, under a lock, so that it is never interrupted after
    it is freed); the caller's handler runs once the step has ended.
    Returns (status, message)."""
    stop = ctypes.c_int(0)
    lock = threading.Lock()
    current = [None]

    def watch(run):
        with lock:
            current[0] = run

    c_watch = _lib.WATCH(watch)  # kept alive for the call's length
    err = ctypes.create_string_buffer(_lib.ERRMSG_MAX)

    def interrupt(why):
        stop.value = 1
        with lock:
            if current[0]:
                lib.rs_run_interrupt(current[0], why)

    io = _lib.PowersgdIo(trace, conf, c_watch, ctypes.pointer(stop))
    status = _interrupt.call(
        lambda: lib.rs_powersgd_execute(ps, plain, ctypes.byref(io), err),
        interrupt, "ringsim-powersgd")
    return status, err.value.decode(errors="replace")


def _no_q(q_file):
    """The refusal of a q=FILE where no param is compressed."""
    hook = q_file[0]
    rank = re.search(r"(?:^powersgd:|,)rank=([^,]*)", hook)
    return ValueError(f"hook {hook!r}: no param is compressed at rank "
                      f"{rank.group(1) if rank else '?'}, so there is no Q "
                      "to read")


def _read_q(lib, ps, q_file, err):
    """The step's Qs from the file of q_file (the hook as given, its q=
    text, the path as bytes with {s} the step, 1), as the command's
    --hook ...,q=FILE reads them: where they came from, for the report's
    initial_q. A file that cannot be read is a ValueError naming the
    hook."""
    hook, given, path = q_file
    rc = lib.rs_safetensors_read(path, lib.rs_powersgd_q_model(ps),
                                 lib.rs_powersgd_q(ps), err)
    if rc:
        message = f"hook {hook!r}: " + err.value.decode(errors="replace")
        raise (MemoryError if rc == _RS_ENOMEM else ValueError)(message)
    return "read from " + given + (", {s} the step that draws" if "{s}" in
                                   given else "")


def allreduce(lib, owned, workers, names, first, settings, model_ptr,
              c_trace, trace_conf, q_file, new_output, run_error):
    """One PowerSGD step of workers' float32 tensors: (result, report).
    settings the call's options for rs_config_set (hook among them, its
    q=FILE taken off); q_file None (Qs from ringsim's stream) or what
    _read_q reads; owned frees what is made here; new_output and
    run_error are the package's."""
    err = ctypes.create_string_buffer(_lib.ERRMSG_MAX)

    def fail(exc, code=None):
        message = err.value.decode(errors="replace")
        return (MemoryError if code == _RS_ENOMEM else exc)(message)

    configs = []
    for hook in (None, b"allreduce"):  # the step's, and the plain run's
        config = _lib.new_config(lib, owned, settings, err, fail)
        if hook and (lib.rs_config_set(config, b"hook", hook, err) or
                     lib.rs_config_set(config, b"traced", b"false", err)):
            raise fail(ValueError)  # (the plain run is never traced)
        configs.append(config)
    handle = ctypes.c_void_p()
    rc = lib.rs_powersgd_create(configs[0], model_ptr, ctypes.byref(handle),
                                err)
    if rc:
        raise fail(ValueError, rc)
    ps = owned.own(handle.value, lib.rs_powersgd_free)
    handle = ctypes.c_void_p()
    rc = lib.rs_run_create(configs[1], model_ptr, ctypes.byref(handle), err)
    if rc:
        raise fail(ValueError, rc)
    plain = owned.own(handle.value, lib.rs_run_free)
    if q_file is not None and not lib.rs_powersgd_q_model(ps):
        raise _no_q(q_file)
    initial_q = "none drawn"
    if lib.rs_powersgd_draws_q(ps):
        if q_file is not None:  # read before the trace is opened
            initial_q = _read_q(lib, ps, q_file, err)
        else:
            lib.rs_powersgd_random_q(ps, SEED)
            initial_q = (f"ringsim's normal stream, seed {SEED} (not "
                         "torch's; the command's q=FILE gives torch's)")
    trace = None
    if c_trace is not None:
        handle = ctypes.c_void_p()
        rc = lib.rs_trace_open(c_trace, ctypes.byref(handle), err)
        if rc:
            raise fail(ValueError, rc)
        trace = handle.value
        owned.frees.insert(0, (trace, lib.rs_trace_close))  # closed last
    for w, row in enumerate(workers):  # float32 only: as the tensors hold it
        base = lib.rs_run_buffer(plain, w)
        offset = 0
        for t in row:
            t.fill(lib, _lib.DTYPE_F32, base + offset * 4)
            offset += t.elems
    lib.rs_run_mark_filled(plain)
    status, message = _execute(lib, ps, plain, trace, trace_conf)
    text = lib.rs_powersgd_json(ps, 1, status, message.encode(),
                                initial_q.encode())
    if not text:
        raise MemoryError("ringsim: out of memory")
    try:
        report = json.loads(ctypes.string_at(text).decode())
    finally:
        lib.rs_free(text)
    if status in (_RS_EINVAL, _RS_EIO, _RS_EPARSE):
        raise ValueError(message)
    if status == _RS_ENOMEM:
        raise MemoryError(message)
    if status not in (_RS_OK, _RS_ECHECK):
        raise run_error(message, report)
    held = {}
    base = lib.rs_powersgd_result(ps)
    offset = 0
    for name, t in zip(names, first):
        out, ptr = new_output(t)
        if t.elems:
            ctypes.memmove(ptr, base + offset * 4, t.elems * 4)
        offset += t.elems
        held[name] = out
    if status != _RS_OK:
        raise run_error(message, report)
    return held, report
