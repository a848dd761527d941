"""``kafkamodel VERB`` (or ``python -m kafkamodel VERB``): the top-level parser and the dispatch to each verb.

Each verb's parser and handler are its package's command module's (``kafkamodel.command`` says which; every
``add_*`` below adds one), in the order ``kafkamodel --help`` lists them. The command modules import their heavy
dependencies when they run (pandas, the model's run, papermill, Spark), so building the parser stays light and
``validate`` and ``keys`` start quickly; a verb whose extra is not installed says which in one line. Bad
input exits with status 2 and one line on stderr naming the field and the rule; nothing is left half-written, and
no folder the kit did not write is replaced (``kafkamodel.folders``).
"""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__, bench
from .campaign import command as campaign
from .cluster import command as cluster
from .command import STUDY_EXTRA, UsageError, extra_hint
from .config.scenario import ScenarioError
from .durability import command as durability
from .folders import FolderError
from .kit import command as kit
from .paths import child_environment
from .sim import command as model
from .validation import command as validation

# every verb's parser, in the order the help lists them
VERBS = (model.add_run, model.add_validate, kit.add_study, kit.add_sweep, campaign.add_parser, durability.add_parser,
         kit.add_aggregate, kit.add_report, validation.add_parser, model.add_keys, model.add_hardware,
         cluster.add_parser, model.add_measures, bench.add_parser)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, status 2, like every other input error
        raise UsageError(f"{self.prog}: {message}")


def _command(argv) -> None:
    """Remember how the reports were made (they say so)."""
    os.environ["KAFKAMODEL_COMMAND"] = " ".join(["python -m kafkamodel", *argv])


def _prog() -> str:
    """As the user typed it: the console script, or python -m."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "kafkamodel" if name == "kafkamodel" else "python -m kafkamodel"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=_prog(), description="Kafka replication study kit: a deterministic model of Kafka "
                                               "replication, and the studies, reports and fault campaigns run on it",
                     epilog="docs/install.md: installing, where outputs go ($KAFKAMODEL_HOME or the current folder)")
    parser.add_argument("--version", action="version", version=f"kafkamodel {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser, metavar="VERB")
    for add in VERBS:
        add(verbs)
    return parser


def verbs_text(parser: argparse.ArgumentParser) -> list[str]:
    """The usage line and one line per verb (what a bare invocation prints)."""
    actions = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    width = max(len(c.dest) for c in actions._choices_actions)
    return ([f"usage: {parser.prog} VERB [options]   ({parser.prog} VERB --help for a verb's options; --version)",
             "verbs:"] + [f"  {c.dest:<{width}}  {c.help}" for c in actions._choices_actions])


def main(argv: list[str] | None = None) -> int:
    verb = None
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser()
        if not argv:  # what can I type here?
            print("\n".join(verbs_text(parser)), file=sys.stderr)
            return 2
        args = parser.parse_args(argv)
        verb = args.verb
        _command(argv)
        child_environment()
        return args.func(args)
    except (ScenarioError, UsageError, FolderError) as exc:
        print("error: " + " ".join(line.strip() for line in str(exc).splitlines()), file=sys.stderr)  # one line
        return 2
    except ModuleNotFoundError as exc:  # an extra's module imported further in than _needs looked
        if verb is None or (exc.name or "").split(".")[0] not in STUDY_EXTRA:
            raise
        print(f"error: {extra_hint(verb, [exc.name])}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (| head): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept; the same command resumes", file=sys.stderr)
        return 130
