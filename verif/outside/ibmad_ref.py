"""MAD fields through libibmad (rdma-core's MAD library, Debian packages libibmad5 and
libibmad-dev), by ctypes: `mad_get_field` / `mad_set_field` with the field tables of
libibmad/fields.c, the field numbers taken from the installed header's `enum MAD_FIELDS`
(/usr/include/infiniband/mad.h). A MAD codec we did not write, to check the firmware's own
(fw/mad.py, fw/attrs.py) against:

    m = IBMad(); m.get(buf, "IB_PORT_STATE_F")
"""
from __future__ import annotations

import ctypes
import ctypes.util
import re
from pathlib import Path

__all__ = ["IBMad", "mad_fields"]

HEADER = Path("/usr/include/infiniband/mad.h")


def mad_fields(header: Path = HEADER) -> dict[str, int]:
    """enum MAD_FIELDS of the installed header: name -> value (aliases resolved)."""
    if not header.exists():
        raise RuntimeError(f"{header} not found: `make setup` installs the Debian package libibmad-dev")
    text = header.read_text()
    body = text[text.index("enum MAD_FIELDS {"):]
    body = body[body.index("{") + 1:body.index("};")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    vals, nxt = {}, 0
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        if "=" in item:
            name, expr = (x.strip() for x in item.split("="))
            v = vals[expr] if expr in vals else int(expr, 0)
        else:
            name, v = item, nxt
        vals[name] = v
        nxt = v + 1
    return vals


class IBMad:
    def __init__(self):
        name = ctypes.util.find_library("ibmad") or "libibmad.so.5"
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            raise RuntimeError(f"libibmad not found ({e}): `make setup` installs the Debian package libibmad5") from e
        lib.mad_get_field.restype = ctypes.c_uint32
        lib.mad_get_field.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.mad_get_field64.restype = ctypes.c_uint64
        lib.mad_get_field64.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.mad_set_field.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint32]
        lib.mad_set_field64.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint64]
        lib.mad_get_array.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        lib.mad_set_array.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        self.lib = lib
        self.fields = mad_fields()

    def fid(self, field: str) -> int:
        try:
            return self.fields[field]
        except KeyError:
            raise KeyError(f"libibmad has no field {field!r}") from None

    def get(self, buf: bytes, field: str, wide: bool = False) -> int:
        b = ctypes.create_string_buffer(bytes(buf), max(len(buf), 256))
        return (self.lib.mad_get_field64 if wide else self.lib.mad_get_field)(b, 0, self.fid(field))

    def set(self, buf: bytearray, field: str, value: int, wide: bool = False):
        b = ctypes.create_string_buffer(bytes(buf), max(len(buf), 256))
        (self.lib.mad_set_field64 if wide else self.lib.mad_set_field)(b, 0, self.fid(field), value)
        buf[:] = b.raw[:len(buf)]

    def get_array(self, buf: bytes, field: str, nbytes: int) -> bytes:
        """A byte-array field (e.g. a 256-bit port mask), as the wire has it."""
        b = ctypes.create_string_buffer(bytes(buf), max(len(buf), 256))
        out = ctypes.create_string_buffer(nbytes)
        self.lib.mad_get_array(b, 0, self.fid(field), out)
        return out.raw

    def set_array(self, buf: bytearray, field: str, value: bytes):
        b = ctypes.create_string_buffer(bytes(buf), max(len(buf), 256))
        v = ctypes.create_string_buffer(bytes(value), len(value))
        self.lib.mad_set_array(b, 0, self.fid(field), v)
        buf[:] = b.raw[:len(buf)]
