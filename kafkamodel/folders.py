"""Publishing a folder (or a file) atomically, and never over what the kit did not write.

A folder is written whole in a hidden sibling, then swapped in with one
rename: a reader (a sweep resuming, Spark listing runs, a notebook reading
aggregates) sees the old folder or the new one, never a half-written one;
hidden names (a leading dot) are skipped by all of them.

Every folder the kit publishes holds a marker file (``MARKER``). An existing
folder is replaced only if it is the kit's: it holds the marker, or (written
before the marker existed) nothing but names the new folder also has; or it
is empty. Anything else is refused with one line (``FolderError``), and
nothing is written. ``writable_folder`` checks a folder the kit will write
into (``--runs``, ``--out``) before any work starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path

MARKER = ".kafkamodel"  # in every folder the kit publishes: "the kit wrote this folder; it may replace it"
MARKER_TEXT = ("Written by kafkamodel. The command that wrote this folder replaces it whole when run again;\n"
               "kafkamodel replaces no folder without this file (unless it is empty).\n")
# in a folder the kit writes files into (reports/, counterexamples) the same file lists the files it wrote


class FolderError(ValueError):
    """A place the kit cannot write (or may not replace): one line, exit status 2."""


def hidden_sibling(final: Path, tag: str) -> Path:
    return final.parent / f".{final.name}.{tag}-{uuid.uuid4().hex[:8]}"


def write_atomic(path: Path, text: str) -> None:
    """Write a text file whole: a hidden sibling first, renamed over `path` (its folder is made if missing).

    An existing file is replaced only if the kit wrote it (``file_is_kits``), else FolderError; the file's
    name is added to its folder's ``MARKER`` list.
    """
    path = Path(path)
    check_file_replaceable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = hidden_sibling(path, "tmp")
    tmp.write_text(text, encoding="utf-8")
    if path.name not in _listed(path.parent):
        with open(path.parent / MARKER, "a", encoding="utf-8") as marker:
            marker.write(f"{path.name}\n")
    os.replace(tmp, path)


def check_file_replaceable(path: Path, flag: str = "") -> None:
    """FolderError (one line, naming `flag` if given) when `path` exists and the kit did not write it."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not file_is_kits(path):
        raise FolderError(f"{flag + ': ' if flag else ''}{path} is in the way and kafkamodel did not write it (it "
                          "replaces only files it wrote); move it away")


def _listed(folder: Path) -> set:
    """The files the kit wrote in `folder`, as its MARKER lists them."""
    try:
        return set((folder / MARKER).read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return set()


def file_is_kits(path: Path) -> bool:
    """A regular file the kit wrote: listed in its folder's MARKER, or (written before the list existed) a file
    naming kafkamodel, as every such file does (a report's title, a record's provenance, a counterexample's
    command)."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        return False
    if path.name in _listed(path.parent):
        return True
    try:
        with open(path, "rb") as f:
            return b"kafkamodel" in f.read(16 << 20)
    except OSError:
        return False


def _holds_cwd(folder: Path) -> bool:
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        return False
    folder = folder.resolve()
    return folder == cwd or folder in cwd.parents


def _in_the_way(final: Path) -> str | None:
    """What no folder the kit writes can ever replace: a file (or link), the current folder or one holding it."""
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        return f"{final} exists and is not a folder"
    if final.exists() and _holds_cwd(final):
        return (f"{final} is the current folder or holds it (kafkamodel never replaces the folder you are in); "
                "give another folder")
    return None


def replaceable(final: Path, names=None) -> str | None:
    """Why the kit may not replace the existing folder `final` (None: it may, or nothing is there).

    It may if `final` holds the marker, is empty, or holds nothing but `names` (what the new folder holds: a
    folder the kit wrote before it wrote markers). Never the current folder or one holding it.
    """
    final = Path(final)
    if not final.exists() and not final.is_symlink():
        return None
    problem = _in_the_way(final)
    if problem:
        return problem
    if (final / MARKER).is_file():
        return None
    present = set(os.listdir(final))
    if not present or (names is not None and present <= set(names)):
        return None
    return (f"{final} holds files kafkamodel did not write (it replaces only an empty folder or one it wrote, "
            f"marked by {MARKER}); give a new folder, or move them away")


def check_replaceable(final: Path, flag: str, names=None) -> None:
    """Raise FolderError (one line naming `flag`) if the existing folder `final` is not the kit's to replace."""
    problem = replaceable(final, names)
    if problem:
        raise FolderError(f"{flag}: {problem}")


def writable_folder(path: str | Path, flag: str) -> Path:
    """`path` as an absolute folder the kit can create or write into, checked now (a probe folder, made and
    removed, in it or in its nearest existing ancestor); FolderError with one line naming `flag` if not."""
    path = Path(os.path.abspath(os.path.expanduser(str(path))))
    if path.exists() and not path.is_dir():
        raise FolderError(f"{flag}: {path} exists and is not a folder")
    parent = path
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise FolderError(f"{flag}: cannot write {path} ({parent} is not a folder)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".kafkamodel-probe-", dir=parent))
    except OSError as exc:
        raise FolderError(f"{flag}: cannot write {path} ({exc.strerror or exc} in {parent})") from None
    return path


def swap_in(tmp: Path, final: Path, replace: bool = True) -> bool:
    """Publish the complete folder `tmp` as `final` (marking it the kit's); True if this call published it.

    If `final` exists it is replaced if it is the kit's (``replaceable``; the
    old copy is removed only once the new one is in place), else FolderError
    and `final` is left as it was. With ``replace=False`` a folder there is
    kept and `tmp` dropped (a run another process already published is the
    same run).
    """
    (tmp / MARKER).write_text(MARKER_TEXT)
    if replace and (final.exists() or final.is_symlink()):
        problem = replaceable(final, os.listdir(tmp))
        if problem:
            raise FolderError(problem)
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
    """Yield an empty hidden folder beside `final`; on success it replaces `final` (if the kit's: ``swap_in``),
    on failure it is removed. A folder that is not the kit's is refused before anything is written."""
    final = Path(os.path.abspath(final))
    problem = _in_the_way(final)  # the rest is judged at the swap, when the new folder's names are known
    if problem:
        raise FolderError(problem)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = hidden_sibling(final, "tmp")
    tmp.mkdir()
    try:
        yield tmp
        swap_in(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
