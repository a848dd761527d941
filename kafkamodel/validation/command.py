"""``python -m kafkamodel validation``: run the validation set, write validation.json and validation.html; or, with
``--readme``, rewrite README.md's table from an existing validation.json.

Every input is checked before any run (the case files, the names asked for, the output folder and the files in
it); both files are made whole in memory, then each is written with one rename (``folders.write_atomic``), and a
file the kit did not write is never replaced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..command import UsageError
from ..config.scenario import did_you_mean
from ..folders import FolderError, file_is_kits, hidden_sibling, writable_folder, write_atomic
from ..kit import progress_bar, write_index
from ..paths import CHECKOUT, REPORTS, VALIDATION
from .cases import ValidationError, load_cases

OUTPUTS = ("validation.json", "validation.html")


def add_parser(verbs) -> None:
    val = verbs.add_parser("validation", help="the validation set: published measurements of real Kafka vs the "
                                               "model -> validation.json and validation.html (docs/validation.md)")
    val.add_argument("--out", help="folder for validation.json and validation.html (default: reports/)")
    val.add_argument("--case", action="append", help="only this case of data/validation/ (repeatable)")
    val.add_argument("--readme", action="store_true", help="instead: rewrite README.md's validation table from --from")
    val.add_argument("--from", dest="from_", help="with --readme: the validation.json (default: reports/validation.json)")
    val.set_defaults(func=cmd_validation)


def cmd_validation(args) -> int:
    if args.readme:
        if args.out or args.case:
            raise UsageError("--readme: rewrites README.md from --from (a validation.json); no --out or --case")
        print(f"updated {readme_from(args.from_)}")
        return 0
    if args.from_:
        raise UsageError("--from: only with --readme")
    doc, paths = run_validation(args.out, args.case, command=os.environ.get("KAFKAMODEL_COMMAND", ""))
    for line in summary_lines(doc, paths):
        print(line)
    return 0


def select(cases: list, names: list[str] | None) -> list:
    """The cases named (all without names); an unknown name is one line with the nearest."""
    if not names:
        return cases
    known = [c.case for c in cases]
    for name in names:
        if name not in known:
            raise ValidationError([f"--case: no validation case {name!r}" + did_you_mean(name, known, "")
                                   + f" (cases: {', '.join(known)})"])
    return [c for c in cases if c.case in names]


def run_validation(out: str | None = None, names: list[str] | None = None, folder: Path | None = None,
                   command: str = "python -m kafkamodel validation", progress: bool = True) -> tuple:
    """Run the cases; write OUT/validation.json and OUT/validation.html; (document, [paths])."""
    from .report import finding, html_page
    from .runner import run_cases

    target = writable_folder(out or REPORTS, "--out")
    for name in OUTPUTS:
        path = target / name
        if (path.exists() or path.is_symlink()) and not file_is_kits(path):
            raise FolderError(f"--out: {path} is in the way and kafkamodel did not write it; move it away")
    cases = select(load_cases(folder or VALIDATION), names)
    total = sum(len(c.runs) for c in cases)
    bar = progress_bar(total, "validation", disable=not progress)
    try:
        doc = run_cases(cases, progress=bar, command=command)
    finally:
        bar.close()
    doc["finding"] = finding(doc)
    text, page = json.dumps(doc, indent=1, allow_nan=False, default=_plain) + "\n", html_page(doc)
    paths = [target / name for name in OUTPUTS]
    for path, content in zip(paths, (text, page)):
        write_atomic(path, content)
    if target == Path(REPORTS).resolve() and (target / "index.html").is_file():
        write_index(target)  # the index links the validation page
    return doc, paths


def _plain(x):
    """numpy scalars and the like as plain numbers (json's hook for what it cannot write)."""
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON")


def readme_from(source: str | None = None, readme: Path | None = None) -> Path:
    """Rewrite README.md's validation table from `source` (default reports/validation.json); the README's path."""
    from .report import update_readme

    path = Path(source) if source else REPORTS / "validation.json"
    if not path.is_file():
        raise ValidationError([f"--from: no {path}; run python -m kafkamodel validation first"])
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["cases"], doc["totals"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValidationError([f"--from: {path} is not a validation.json ({exc})"]) from None
    if readme is None:
        if CHECKOUT is None:
            raise ValidationError(["--readme: only in a source checkout (README.md is the repository's)"])
        readme = CHECKOUT / "README.md"
    try:
        text = update_readme(readme, doc)
    except ValueError as exc:
        raise ValidationError([f"--readme: {exc}"]) from None
    tmp = hidden_sibling(Path(readme), "tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, readme)
    return Path(readme)


def summary_lines(doc: dict, paths: list[Path]) -> list[str]:
    return [doc["finding"]] + [f"wrote {p}" for p in paths]
