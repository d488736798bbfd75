"""The ``nablafol`` command: one entry point, one module per subcommand.

Every subcommand ends with exit status 0 on success, 2 on unusable input (one line on
stderr naming the file or question and the problem, never a traceback).
"""
from __future__ import annotations

import argparse
import gc
import sys

from . import commands

SUBCOMMANDS = {
    "parse": commands.parse,
    "eval": commands.evaluate,
    "split": commands.split,
    "score": commands.score,
    "train": commands.train,
    "calibrate": commands.calibrate,
    "generate": commands.generate,
    "demo": commands.demo,
    "parser": commands.parser,
    "answer": commands.answer,
    "vocabulary": commands.vocabulary,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nablafol", description="∇-FOL: differentiable first-order logic for VQA")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in SUBCOMMANDS.items():
        module.add_arguments(sub.add_parser(name, help=module.HELP, description=module.__doc__,
                                            formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return SUBCOMMANDS[args.command].run(args) or 0
    except KeyboardInterrupt:
        print("nablafol: interrupted", file=sys.stderr)
        return 130
    except commands.UsageError as e:
        print(f"nablafol {args.command}: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # unusable input: one line, no traceback
        line = commands.error_line(e)
        if line is None:
            raise
        print(f"nablafol {args.command}: {line}", file=sys.stderr)
        return 2


def entry() -> None:
    """The installed command (and ``python -m nablafol.cli``): :func:`main`, then exit.

    Everything the command made is frozen out of the interpreter's last collection first: at
    GQA-validation scale that collection scanned millions of objects after the outputs were
    written, to free memory the process hands back to the system whole. Not in
    :func:`main`, which tests and scripts call in their own long-lived processes.
    """
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
