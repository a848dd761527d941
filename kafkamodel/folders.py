"""Publishing a folder (or a file) atomically: written whole in a hidden sibling, then swapped in with one rename.

A reader (a sweep resuming, Spark listing runs, a notebook reading
aggregates) sees the old folder or the new one, never a half-written one;
hidden names (a leading dot) are skipped by all of them.
"""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path


def hidden_sibling(final: Path, tag: str) -> Path:
    return final.parent / f".{final.name}.{tag}-{uuid.uuid4().hex[:8]}"


def write_atomic(path: Path, text: str) -> None:
    """Write a text file whole: a hidden sibling first, renamed over `path` (its folder is made if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = hidden_sibling(path, "tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def swap_in(tmp: Path, final: Path, replace: bool = True) -> bool:
    """Publish the complete folder `tmp` as `final`; True if this call published it.

    If `final` exists it is replaced (the old copy is removed only once the new
    one is in place), or with ``replace=False`` a folder there is kept and
    `tmp` dropped (a run another process already published is the same run).
    """
    if replace and final.exists():
        trash = hidden_sibling(final, "old")
        final.rename(trash)
        tmp.rename(final)
        shutil.rmtree(trash, ignore_errors=True)
        return True
    try:
        tmp.rename(final)
        return True
    except OSError:
        if final.is_dir():  # published by another process (kept: it is the same run)
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        raise  # something else is in the way (a file where the folder goes)


@contextmanager
def staged(final: Path):
    """Yield an empty hidden folder beside `final`; on success it replaces `final`, on failure it is removed."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = hidden_sibling(final, "tmp")
    tmp.mkdir()
    try:
        yield tmp
        swap_in(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
