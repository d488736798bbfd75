"""The command line every suite module shares: ``python -m benchmarks.bench_X [--quick]``."""
from __future__ import annotations

import argparse


def suite_main(doc: str, run, report, argv=None) -> None:
    """Run one suite (full size, or ``--quick``) and print its report."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    args = ap.parse_args(argv)
    print("\n".join(report(run("quick" if args.quick else "full"))))
