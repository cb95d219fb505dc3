"""Minimal safetensors reading and writing (F32, F64, F16) for ringsim's Python
tools and tests: an implementation of the format apart from ringsim's C one.

Debian 12 packages no `safetensors` module; the format is small: an 8-byte
little-endian header length, a JSON header {name: {dtype, shape,
data_offsets}}, then the raw data. A file is written whole or not at all
(ringsim_plot.output.replacing, beside this module: a new file, renamed
over the path).
"""
import json
import struct

from ringsim_plot.output import replacing

NUMPY_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2"}


def write(path, tensors, dtype="F32"):
    """tensors: {name: numpy array or torch tensor}, written as dtype (F32,
    F64 or F16), whole or not at all: a ringsim_plot ToolError (one line
    naming path) where it cannot be written, and whatever was at path
    left as it was."""
    import numpy as np
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        a = t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)
        data = np.ascontiguousarray(a, dtype=NUMPY_DTYPES[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with replacing(path) as tmp, open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read(path):
    """{name: numpy array} of a safetensors file's F32, F64 or F16 tensors."""
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file ({len(raw)} bytes, "
                         "shorter than its 8-byte header length)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: not a safetensors file (a header of {n} bytes "
                         f"in {len(raw)})")
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError as e:
        raise ValueError(f"{path}: not a safetensors file (its header is not "
                         f"JSON: {e})") from None
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] not in NUMPY_DTYPES:
            raise ValueError(f"{path}: tensor {name} is {t['dtype']}, not "
                             f"{', '.join(NUMPY_DTYPES)}")
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + e],
                                  dtype=NUMPY_DTYPES[t["dtype"]]).reshape(t["shape"])
    return out
