"""Minimal safetensors reading and writing (F32) for ringsim's Python tools.

Debian 12 packages no `safetensors` module; the format is small: an 8-byte
little-endian header length, a JSON header {name: {dtype, shape,
data_offsets}}, then the raw data.
"""
import json
import struct


def write(path, tensors):
    """tensors: {name: numpy array or torch tensor}, written as F32."""
    import numpy as np
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        a = t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)
        data = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read(path):
    """{name: numpy float32 array} of a safetensors file's F32 tensors."""
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} is {t['dtype']}, not F32")
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + e], dtype="<f4").reshape(t["shape"])
    return out
