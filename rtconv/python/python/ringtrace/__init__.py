"""Decode ringtrace dumps into pyarrow tables, with rtconv's own reader and naming.

    import ringtrace
    d = ringtrace.open("trace.rtd")          # a path, or the dump's bytes
    d.metadata                               # dict: program, build_id, clock, losses, ...
    d.spans()                                # pyarrow.Table, one row per span
    d.functions()                            # pyarrow.Table, rtconv stats' figures per function
    d.durations()                            # pyarrow.Table, stats' histogram per function
    ringtrace.tables(path, "functions", "durations")   # several tables from one decode, no metadata

The tables are those `rtconv export` writes as Parquet (formats/PARQUET.md,
schema version SCHEMA_VERSION); each is decoded when asked for, from an Arrow
IPC stream read without copying. It is what lets a data engine (Spark's
executors, DuckDB through pyarrow) decode raw dumps itself.
"""

import io
import os
import warnings

import pyarrow as pa

from . import _native

SCHEMA_VERSION = _native.SCHEMA_VERSION

__all__ = ["open", "tables", "Dump", "DumpWarning", "SCHEMA_VERSION"]


class DumpWarning(UserWarning):
    """Something a salvaged dump lost, or a key left unnamed: one of rtconv's diagnostics."""


class Dump:
    """One dump, decoded table by table on request."""

    def __init__(self, data, name, host=None, **options):
        self.name = name
        self.host = host
        self._data = data
        self._options = options
        self.metadata = self._table("dumps").to_pylist()[0]

    def spans(self):
        """One row per span (pyarrow.Table): function, file, line, depth, span and parent ids, start, duration, self."""
        return self._table("spans")

    def functions(self):
        """One row per function (pyarrow.Table): calls, total, self, min, p50, p90, p99, max — rtconv stats' figures."""
        return self._table("functions")

    def durations(self):
        """One row per function and duration bucket (pyarrow.Table): rtconv stats' histogram of its calls."""
        return self._table("durations")

    def tables(self, *which):
        """Several tables ("spans", "functions", "durations", "dumps") from one decode of the dump."""
        return tuple(self._tables(list(which)))

    def _table(self, which):
        return self._tables([which])[0]

    def _tables(self, which):
        return _decode(self._data, self.name, which, self.host, self._options)

    def __repr__(self):
        m = self.metadata
        return f"<ringtrace.Dump {self.name!r}: {m['program']} pid {m['pid']}, {m['spans']} spans on {m['threads']} threads>"


def open(source, *, name=None, host=None, sym_dirs=(), symbolizer=None, demangle=True, symbol_index=True):
    """A dump from a path or from its bytes (`name` names it in messages and in the tables' `dump`
    column; a path names itself). `host` fills the `host` column; `sym_dirs` are searched for the
    dump's binaries by build-id; `symbolizer` lists backends in order (packed, sites, dwarf, symtab,
    dladdr). Raises ValueError with rtconv's message when the dump cannot be read."""
    data, name = _read(source, name)
    options = dict(sym_dirs=[os.fspath(d) for d in sym_dirs], symbolizer=symbolizer, demangle=demangle,
                   symbol_index=symbol_index)
    return Dump(data, name, host, **options)


def tables(source, *which, name=None, host=None, sym_dirs=(), symbolizer=None, demangle=True, symbol_index=True):
    """The tables `which` ("spans", "functions", "durations", "dumps") of a dump, from one decode:
    a tuple of pyarrow.Table, with `open`'s arguments. What a Spark executor calls per dump."""
    data, name = _read(source, name)
    options = dict(sym_dirs=[os.fspath(d) for d in sym_dirs], symbolizer=symbolizer, demangle=demangle,
                   symbol_index=symbol_index)
    return tuple(_decode(data, name, list(which), host, options))


def _read(source, name):
    """The dump's bytes and its name."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), name or "<bytes>"
    path = os.fspath(source)
    with io.open(path, "rb") as f:
        return f.read(), name or path


def _decode(data, name, which, host, options):
    streams, diagnostics = _native.tables(data, name, which, host, **options)
    for line in diagnostics:
        warnings.warn(line, DumpWarning, stacklevel=4)
    return [pa.ipc.open_stream(pa.py_buffer(s)).read_all() for s in streams]
