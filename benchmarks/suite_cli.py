"""The command line every suite module shares: ``python -m benchmarks.bench_X [--quick]``."""
from __future__ import annotations

import argparse

import torch


def suite_main(doc: str, run, report, argv=None) -> None:
    """Run one suite (full size, or ``--quick``) and print its report."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (as benchmarks.run; 0: torch's default)")
    args = ap.parse_args(argv)
    if args.threads < 0:
        ap.error(f"--threads must be >= 0, got {args.threads}")
    if args.threads:
        torch.set_num_threads(args.threads)
    print("\n".join(report(run("quick" if args.quick else "full"))))
