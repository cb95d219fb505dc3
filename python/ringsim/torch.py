"""ringsim.torch: record a real PyTorch DDP job's buckets, so that ringsim
replays that job's gradients (docs/ddp.md, "Bring your own job").

    import ringsim.torch
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(None, ringsim.torch.record_hook("rec", module=model))

record_hook(directory) is a DDP communication hook that wraps another one
(inner; PyTorch's allreduce_hook if none) and changes nothing DDP
computes. On each rank and each backward s = 1, 2, ... it writes, under
directory/step{s}/:

    rank{r}.safetensors    rank r's bucket inputs, per parameter: its own
                           gradients as DDP copied them into its buckets
    result{r}.safetensors  what the inner hook left in the buckets: the
                           averaged gradients DDP hands back to param.grad
    model.json             (rank 0) the params in model order and DDP's
                           buckets of that backward, in launch order, each
                           in its flat view's order ("buckets"; docs/
                           model-json.md)

so that

    ringsim -w W -p rec/step2/model.json --grads 'rec/step2/rank{r}.safetensors' \\
        --like ddp-gloo --hook allreduce --out ringsim.safetensors

replays backward 2 of the job (as its model.json's description says), and
ringsim diff explains what another world size or hook would change.
Needs torch with torch.distributed (and libringsim, which writes the files).
"""
import ctypes
import json
import os
import re
import shlex
import tempfile
import threading

from . import _lib

__all__ = ["record_hook"]

# PyTorch's hooks that ringsim's --hook reproduces, by function name
_HOOKS = {"allreduce_hook": "allreduce", "fp16_compress_hook": "fp16",
          "bf16_compress_hook": "bf16"}
_DTYPES = {"torch.float32": "f32", "torch.float64": "f64",
           "torch.float16": "f16", "torch.bfloat16": "bf16"}


def _replay_hook(inner, state, step):
    """(ringsim's --hook for what inner does in backward step (1, 2, ...),
    or None; the options after it, a list of words; why there is no
    replay, or None). PyTorch's powerSGD_hook runs the plain all-reduce before
    start_powerSGD_iter; after it, a step from fresh state replays alone,
    and one whose state is carried (error feedback, warm start) replays
    with every step before it: --iterations step over step{s}'s files."""
    name = getattr(inner, "__name__", "")
    if name != "powerSGD_hook":
        return _HOOKS.get(name), [], None
    try:
        it, start = state.iter, state.start_powerSGD_iter
        rank, feedback, warm = state.matrix_approximation_rank, \
            state.use_error_feedback, state.warm_start
        batched = state.batch_tensors_with_same_shape
    except AttributeError:
        return None, [], None
    if it < start:
        return "allreduce", [], None  # the hook's vanilla all-reduce
    if batched:
        return None, [], ("ringsim's --hook powersgd does not batch tensors "
                          "of the same shape (batch_tensors_with_same_shape)")
    if not (feedback or warm):
        return f"powersgd:rank={rank}", [], None
    if it != step - 1:
        return None, [], (f"the recording began after the hook's first step "
                          f"(its step {it + 1} is backward {step} here), and "
                          "the state it carried in is not recorded")
    onoff = {True: "on", False: "off"}
    return (f"powersgd:rank={rank},start={start},feedback={onoff[bool(feedback)]},"
            f"warm={onoff[bool(warm)]}", ["--iterations", str(step)], None)


# the names record_hook writes in its directory: step1, step2, ...
_RECORDING = re.compile(r"step[1-9][0-9]*")


def _fail(message):
    return ValueError("ringsim.torch.record_hook: " + message)


def _ready_directory(directory):
    """directory made (or found empty of a recording) and writable, before
    training starts; else ValueError naming it. A path holding {r} or {s}
    is refused, before anything is made: the replay line's --grads names
    the files under it, and ringsim replaces every {r} and {s} in --grads
    (the directory's too), so the line would read other files."""
    path = os.fsdecode(os.fspath(directory))
    if not path:
        raise _fail("the directory is an empty path: name one")
    for field in ("{r}", "{s}"):
        if field in path:
            raise _fail(f"{path} holds '{field}', which ringsim's --grads "
                        "replaces (with the rank, the step) wherever it is: "
                        "the replay line would name other files; give a "
                        "directory without {r} or {s}")
    try:
        os.makedirs(path, exist_ok=True)
        taken = sorted(e for e in os.listdir(path) if _RECORDING.fullmatch(e))
        if taken:
            raise _fail(f"{path} already holds a recording ({taken[0]}): "
                        "give a new or empty directory (nothing recorded is "
                        "overwritten)")
        fd, probe = tempfile.mkstemp(dir=path, prefix=".ringsim-probe-")
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise _fail(f"{path} is not a writable directory: "
                    f"{e.strerror or e}") from None
    return path


def _write_failed(path, e):
    return OSError(e.errno, f"ringsim.torch.record_hook: {path}: cannot "
                   f"write: {e.strerror or e}")


def _write_json(path, value):
    """value as JSON at path, as libringsim writes its files: into a
    temporary file beside it (mode 0644), renamed into place once whole,
    so that path is never a part of a file (a full disk leaves none); on
    error the temporary file is removed and OSError names path."""
    text = (json.dumps(value, indent=1) + "\n").encode()
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".",
                                   prefix="." + os.path.basename(path) + ".")
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)  # mkstemp's 0600: for sharing
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None:
            try:
                os.remove(tmp)
            except OSError:
                pass
        raise _write_failed(path, e) from None


def _write_tensors(path, params, values):
    """values ({name: tensor}) as safetensors at path, through libringsim's
    writer (a temporary file renamed into place), in params' order."""
    import torch
    lib = _lib.load()
    model = json.dumps({"name": "record", "params": params}).encode()
    err = ctypes.create_string_buffer(_lib.ERRMSG_MAX)
    handle = ctypes.c_void_p()
    if lib.rs_model_parse(model, len(model), b"record", ctypes.byref(handle), err):
        raise _fail(err.value.decode(errors="replace"))
    try:
        wide = torch.float64 if params[0]["dtype"] == "f64" else torch.float32
        flat = torch.cat([values[p["name"]].detach().reshape(-1).to(wide)
                          for p in params]).contiguous()
        if lib.rs_safetensors_write(os.fsencode(path), handle.value,
                                    ctypes.c_void_p(flat.data_ptr()), err):
            raise OSError("ringsim.torch.record_hook: " +
                          err.value.decode(errors="replace"))
    finally:
        lib.rs_model_free(handle.value)


class _Recorder:
    """One rank's recording: each backward's buckets, inputs and results,
    written once its last bucket's result is in."""

    def __init__(self, directory, inner, module):
        self.directory = directory
        self.inner = inner
        self.names = ({id(p): n for n, p in module.named_parameters()
                       if p.requires_grad} if module is not None else None)
        self.order = None  # without module: [param] of the first backward
        self.started = False
        self.lock = threading.Lock()
        self.step = 0
        self.new_step()

    def new_step(self):
        self.step += 1
        self.buckets = {}   # index: [param] in its flat view's order
        self.inputs = {}    # id(param): tensor
        self.results = {}
        self.expected = None  # the buckets of this backward, once known

    def name(self, p):
        if self.names is not None:
            return self.names[id(p)]
        return f"p{self.index[id(p)]}"

    def __call__(self, state, bucket):
        import torch.distributed as dist
        group = getattr(state, "process_group", state)  # PowerSGDState's
        params = list(bucket.parameters())
        buffer = bucket.buffer()
        with self.lock:
            if not self.started:
                self.first_bucket(params, bucket)
                self.started = True
            if not self.buckets:  # before the inner hook counts this backward
                self.hook, self.more, self.why = _replay_hook(self.inner, state,
                                                              self.step)
            self.buckets[bucket.index()] = params
            offset = 0
            for p in params:  # the flat view holds them in this order
                n = p.numel()
                self.inputs[id(p)] = buffer[offset:offset + n].detach().clone() \
                    .reshape(p.shape)
                offset += n
            if bucket.is_last():
                self.expected = bucket.index() + 1
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        future = self.inner(state, bucket)

        def record(fut):
            out = fut.value()
            result = out[0] if isinstance(out, (list, tuple)) else out
            with self.lock:
                offset = 0
                for p in params:
                    n = p.numel()
                    self.results[id(p)] = result[offset:offset + n].detach() \
                        .clone().reshape(p.shape)
                    offset += n
                if self.expected is not None and \
                        len(self.results) == sum(len(b) for b in self.buckets.values()) \
                        and len(self.buckets) == self.expected:
                    self.write(rank, world)
                    self.new_step()
            return out

        return future.then(record)

    def first_bucket(self, params, bucket):
        """The model order: the module's, or, without one, DDP's first
        backward's one bucket (which holds every param in model order)."""
        if self.names is None:
            if not (bucket.index() == 0 and bucket.is_last()):
                raise _fail("without module=, recording must start at DDP's "
                            "first backward (one bucket of every param in "
                            "model order); give module=your_model")
            self.index = {id(p): i for i, p in enumerate(params)}
            self.order = params

    def write(self, rank, world):
        step_dir = os.path.join(self.directory, f"step{self.step}")
        try:
            os.makedirs(step_dir, exist_ok=True)
        except OSError as e:
            raise _write_failed(step_dir, e) from None
        by_id = {}
        for b in self.buckets.values():
            for p in b:
                by_id[id(p)] = p
        if self.names is not None:
            ordered = [by_id[i] for i in self.names if i in by_id]
        else:
            ordered = [p for p in self.order if id(p) in by_id]
        params = [{"name": self.name(p), "shape": list(p.shape),
                   "dtype": _DTYPES[str(p.dtype)]} for p in ordered]
        for stem, values in (("rank", self.inputs), ("result", self.results)):
            path = os.path.join(step_dir, f"{stem}{rank}.safetensors")
            if os.path.exists(path):
                raise _fail(f"{path} exists: nothing recorded is overwritten")
            _write_tensors(path, params, {self.name(by_id[i]): t
                                          for i, t in values.items()})
        if rank != 0:
            return
        hook = self.hook
        # a replay of several steps reads each step's files: step{s}
        grads = os.path.join(self.directory, "step{s}") if self.more else step_dir
        # each word quoted for a shell (a directory may hold a space or a
        # quote): the line pastes as it reads
        words = (["ringsim", "-w", str(world), "-p",
                  os.path.join(step_dir, "model.json"), "--grads",
                  os.path.join(grads, "rank{r}.safetensors"), "--like",
                  "ddp-gloo"] + (["--hook", hook] if hook else []) + self.more)
        replay = "replay: " + " ".join(shlex.quote(w) for w in words)
        if hook and hook.startswith("powersgd"):
            replay += (" (torch's random Qs: add ,q=FILE to the hook" +
                       (", {s} the step that drew them; the result is the "
                        "last step's --out" if self.more else "") + ")")
        if self.why:
            replay = f"no replay: {self.why}"
        elif hook and hook.startswith("powersgd") and \
                any(q["dtype"] != "f32" for q in params):
            replay = ("ringsim's --hook powersgd takes float32 models only: it "
                      "does not replay this job")
        elif hook in ("fp16", "bf16") and params[0]["dtype"] == "f64":
            replay = (f"ringsim's --hook {hook} casts float32 and half-precision "
                      "buckets only: it does not replay this float64 job")
        model = {
            "name": os.path.basename(os.path.abspath(self.directory)),
            "description": f"backward {self.step} of a DDP job on {world} ranks, "
                           f"recorded by ringsim.torch.record_hook around "
                           f"{getattr(self.inner, '__name__', 'a hook')}; "
                           f"{replay}",
            "params": params,
            "buckets": [[self.name(p) for p in self.buckets[i]]
                        for i in sorted(self.buckets)]}
        _write_json(os.path.join(step_dir, "model.json"), model)


def record_hook(directory, inner=None, module=None):
    """A DDP communication hook (register it with
    ddp.register_comm_hook(state, hook), state as inner takes it: a
    process group or None for PyTorch's default hooks) that records each
    backward's buckets under directory and returns what inner returns
    (torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook
    if None). module (the model DDP wraps) names the params; without it
    they are p0, p1, ... in model order, and recording must start at DDP's
    first backward. The directory is made, and must be new or hold no
    recording (no step1, step2, ...; other files may be there), be
    writable, and have no {r} or {s} in its path (the replay's --grads
    would replace them): checked now, before training starts (ValueError
    naming it). Nothing recorded is ever overwritten; each file is written
    whole or not at all (a temporary file renamed into place), a write
    that fails an OSError naming the file."""
    if inner is not None and not callable(inner):
        raise TypeError("ringsim.torch.record_hook: inner must be a DDP comm "
                        "hook (state, bucket) -> Future")
    path = _ready_directory(directory)
    if inner is None:
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import \
            allreduce_hook
        inner = allreduce_hook
    recorder = _Recorder(path, inner, module)

    def ringsim_record_hook(state, bucket):  # DDP asks a hook its __name__
        return recorder(state, bucket)

    return ringsim_record_hook
