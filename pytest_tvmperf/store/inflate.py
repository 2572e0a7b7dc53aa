"""gzip data inflated as a stream, with a cap: a stored IR file is untrusted, and 8 MB of
gzip can inflate to 8 GiB (a "gzip bomb"); it is refused once its text passes the cap,
never inflated whole."""

from __future__ import annotations

import gzip
import io
import os

from pytest_tvmperf.config.parsing import parse_size_mb
from pytest_tvmperf.store import user_cache

#: the most bytes a stored IR may inflate to (``$TVMPERF_MAX_IR_MB``, default 512): the
#: JSON text of a program with its weights; the plugin's own models are far below it
ENV_MAX_IR_MB = "TVMPERF_MAX_IR_MB"
DEFAULT_MAX_IR_MB = 512
#: the piece inflated at a time
CHUNK_BYTES = 1 << 20


class TooLarge(Exception):
    """The data inflates past the cap."""


def max_ir_bytes() -> int:
    """The cap on a stored IR's inflated size (a bad value: the default; a run refuses it at its start)."""
    try:
        return parse_size_mb(ENV_MAX_IR_MB, os.environ.get(ENV_MAX_IR_MB), DEFAULT_MAX_IR_MB)
    except ValueError:
        return DEFAULT_MAX_IR_MB * 2**20


def check_size_variables() -> None:
    """ValueError naming a size cap of the environment (this one, the build cache's) that is
    not a positive number (``inf``, ``nan``, ``1e400``)."""
    for name, default in ((ENV_MAX_IR_MB, DEFAULT_MAX_IR_MB), (user_cache.ENV_MAX_MB, user_cache.DEFAULT_MAX_MB)):
        parse_size_mb(name, os.environ.get(name), default)


def inflate(data: bytes, limit: int | None = None) -> bytes:
    """The gzip ``data`` inflated, reading at most ``limit`` (default :func:`max_ir_bytes`)
    bytes plus one; raises TooLarge past it, OSError/EOFError for data that is not gzip."""
    limit = max_ir_bytes() if limit is None else limit
    chunks: list[bytes] = []
    size = 0
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
        while size <= limit:  # in pieces: a large cap reserves no memory up front
            chunk = f.read(min(limit + 1 - size, CHUNK_BYTES))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    out = b"".join(chunks)
    if len(out) > limit:
        raise TooLarge(
            f"it inflates to more than {limit / 2**20:g} MiB (${ENV_MAX_IR_MB}), from "
            f"{len(data) / 2**20:.3g} MiB of gzip: no program the plugin stored is that large"
        )
    return out
