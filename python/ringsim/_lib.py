"""Finding and loading libringsim.so, and the C functions' prototypes.

The library is looked for, first found wins:

1. the file the environment's RINGSIM_LIBRARY names (the tests pass the
   build under test this way);
2. the build tree: build/libringsim.so beside python/ of the repository this
   package sits in (PYTHONPATH=python after `cmake --build build`);
3. beside the package: ringsim/libringsim.so (where pip's install puts
   it, README.md "Installing");
4. the system: under the prefix the package was installed to (`cmake
   --install` puts it in PREFIX/lib or PREFIX/lib/<multiarch>), then the
   dynamic loader's own search (libringsim.so.0).
"""
import ctypes
import os

ERRMSG_MAX = 512  # RS_ERRMSG_MAX

# rs_dtype_t
DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_F64 = 0, 1, 2, 3

SONAME = "libringsim.so.0"

# rs_powersgd_watch_t: void (*)(rs_run_t *run)
WATCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class AlgoInfo(ctypes.Structure):
    """rs_algo_info_t (ringsim.h): what an algorithm needs and offers, as
    its row in the algorithm table says (each flag 1 or 0)."""
    _fields_ = [("name", ctypes.c_char_p), ("title", ctypes.c_char_p),
                ("segment_bytes", ctypes.c_size_t),
                ("needs_topology", ctypes.c_int), ("slices", ctypes.c_int),
                ("reduce_scatter", ctypes.c_int),
                ("auto_eligible", ctypes.c_int), ("in_nccl", ctypes.c_int),
                ("closed_formula", ctypes.c_int),
                ("textbook_ring", ctypes.c_int)]


class PowersgdIo(ctypes.Structure):
    """rs_powersgd_io_t (ringsim/powersgd.h): what a PowerSGD step's runs
    are told: the trace and its config row, who watches each run, the
    stop flag."""
    _fields_ = [("trace", ctypes.c_void_p), ("config_json", ctypes.c_char_p),
                ("watch", WATCH), ("stop", ctypes.POINTER(ctypes.c_int))]


class ReportOpts(ctypes.Structure):
    """rs_report_opts_t (ringsim.h): what a run's report says that the run
    does not know."""
    _fields_ = [("grads_source", ctypes.c_char_p), ("trace", ctypes.c_char_p),
                ("status", ctypes.c_int), ("print_values", ctypes.c_int)]


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("RINGSIM_LIBRARY")
    if env:
        yield "RINGSIM_LIBRARY", env
        return
    repo = os.path.dirname(os.path.dirname(here))
    yield "build tree", os.path.join(repo, "build", "libringsim.so")
    yield "beside the package", os.path.join(here, "libringsim.so")
    # PREFIX/lib/python3*/{site,dist}-packages/ringsim -> PREFIX
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(here))))
    lib = os.path.join(prefix, "lib")
    yield "install prefix", os.path.join(lib, "libringsim.so")
    if os.path.isdir(lib):
        for entry in sorted(os.listdir(lib)):
            if entry.endswith("-linux-gnu"):
                yield "install prefix", os.path.join(lib, entry,
                                                     "libringsim.so")


def _find():
    looked = []
    for where, path in _candidates():
        if os.path.exists(path):
            return path
        if where == "RINGSIM_LIBRARY":
            raise ImportError(f"ringsim: RINGSIM_LIBRARY={path!r}: no such "
                              f"file (it names libringsim.so of a build)")
        looked.append(path)
    try:
        ctypes.CDLL(SONAME)
        return SONAME
    except OSError:
        looked.append(SONAME + " (the dynamic loader's search)")
    raise ImportError("ringsim: libringsim.so not found; looked at "
                      + ", ".join(looked) + ". Build it (cmake --build build),"
                      " install it (cmake --install build) or set "
                      "RINGSIM_LIBRARY to its path")


def _prototypes(lib):
    c = ctypes
    P, S, I, Z = c.c_void_p, c.c_size_t, c.c_int, c.c_char_p
    protos = {
        "rs_version": (Z, []),
        "rs_strerror": (Z, [I]),
        "rs_algorithm_parse": (I, [Z]),
        "rs_algo_info": (I, [I, c.POINTER(AlgoInfo)]),
        "rs_model_parse": (I, [Z, S, Z, c.POINTER(P), Z]),
        "rs_model_free": (None, [P]),
        "rs_model_elems": (S, [P]),
        "rs_model_param_count": (S, [P]),
        "rs_config_new": (P, []),
        "rs_config_free": (None, [P]),
        "rs_config_set": (I, [P, Z, Z, Z]),
        "rs_config_measure_machine": (I, [P, Z]),
        "rs_run_create": (I, [P, P, c.POINTER(P), Z]),
        "rs_run_free": (None, [P]),
        "rs_run_errmsg": (Z, [P]),
        "rs_run_buffer": (P, [P, I]),
        "rs_run_mark_filled": (None, [P]),
        "rs_run_set_trace": (I, [P, P, Z]),
        "rs_run_execute": (I, [P]),
        "rs_run_interrupt": (None, [P, Z]),
        "rs_run_facts_json": (P, [P, P]),
        "rs_run_report_json": (P, [P, P, c.POINTER(ReportOpts)]),
        "rs_trace_open": (I, [Z, c.POINTER(P), Z]),
        "rs_trace_close": (None, [P]),
        "rs_dtype_unpack": (None, [I, P, P, S]),
        "rs_dtype_pack": (None, [I, P, P, S]),
        "rs_safetensors_read": (I, [Z, P, P, Z]),
        "rs_safetensors_write": (I, [Z, P, P, Z]),
        "rs_free": (None, [P]),
        "rs_powersgd_create": (I, [P, P, c.POINTER(P), Z]),
        "rs_powersgd_free": (None, [P]),
        "rs_powersgd_draws_q": (I, [P]),
        "rs_powersgd_q_model": (P, [P]),
        "rs_powersgd_q": (P, [P]),
        "rs_powersgd_random_q": (None, [P, c.c_uint64]),
        "rs_powersgd_execute": (I, [P, P, c.POINTER(PowersgdIo), Z]),
        "rs_powersgd_result": (P, [P]),
        "rs_powersgd_json": (P, [P, I, I, Z, Z]),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


_LIB = None
_PATH = None


def load(version=None):
    """The loaded library (loaded on first use, once per process). With
    version (the package's __version__), a library whose rs_version() is
    another, or that has no rs_version() (an older one), is an
    ImportError naming both: the package's calls are its own version's."""
    global _LIB, _PATH
    if _LIB is None:
        path = _find()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise ImportError(f"ringsim: {path}: cannot be loaded: {e}") \
                from None
        if version is not None:
            try:
                fn = lib.rs_version
                fn.restype, fn.argtypes = ctypes.c_char_p, []
                have = fn().decode("ascii", "replace")
            except AttributeError:
                have = "of a version without rs_version()"
            if have != version:
                raise ImportError(
                    f"ringsim: {path} is libringsim {have}, this package is "
                    f"ringsim {version}: install the two from the same build")
        _LIB, _PATH = _prototypes(lib), path
    return _LIB


def path():
    """The path of the library in use."""
    load()
    return _PATH


def algo_info(name):
    """The AlgoInfo of the algorithm named name (bytes, as --algo takes
    it), or None for auto or a name that is no algorithm."""
    lib = load()
    algo = lib.rs_algorithm_parse(name)
    info = AlgoInfo()
    if algo < 0 or lib.rs_algo_info(algo, ctypes.byref(info)):
        return None
    return info


def new_config(lib, owned, settings, err, fail):
    """A new rs_config_t that owned frees, with settings ((option, value)
    pairs) set through rs_config_set; a refused one raises fail(ValueError)
    (err holds its message)."""
    config = lib.rs_config_new()
    if not config:
        raise MemoryError("ringsim: out of memory")
    owned.own(config, lib.rs_config_free)
    for option, value in settings:
        if lib.rs_config_set(config, option.encode(), value, err):
            raise fail(ValueError)
    return config
