"""The Scorer's cost per question: CPU time of ``update``, bytes of state (pickled: what a worker
sends back), CPU time of ``compute``, on the embedded dataset's validation questions copied under
new numeric ids (entailed ids follow each copy, so consistency has its anchors).

    python benchmarks/bench_scorer.py [--scenes 300] [--copies 30]
"""
from __future__ import annotations

import argparse
import dataclasses
import pickle
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", type=int, default=300)
    parser.add_argument("--copies", type=int, default=30)
    args = parser.parse_args(argv)
    from nablafol.scoring import Scorer, exact_match, vocabulary_match
    from nablafol.synthetic import build_dataset
    base = build_dataset(0, args.scenes, 0, seed=0).questions["val"]

    def renamed(question_id: str, copy: int) -> str:
        return f"{copy + 1}{question_id}"  # numeric, as GQA's ids
    questions = [dataclasses.replace(q, id=renamed(q.id, k), entailed=tuple(renamed(e, k) for e in q.entailed))
                 for k in range(args.copies) for q in base]
    predictions = {q.id: (q.answer if i % 3 else "red") for i, q in enumerate(questions)}
    print(f"{len(questions):,} questions")
    for match in (exact_match, vocabulary_match):
        scorer = Scorer(match)
        began = time.process_time()
        for question in questions:
            scorer.update(question, predictions.get(question.id))
        updated = time.process_time()
        result = scorer.compute()
        computed = time.process_time()
        size = len(pickle.dumps(scorer))
        print(f"{match.name:10s} update {1e6 * (updated - began) / len(questions):6.1f} us/question, "
              f"compute {computed - updated:5.2f} s, state {size / len(questions):5.1f} bytes/question "
              f"(accuracy {result.accuracy['all']:.4f}, consistency {result.consistency['all']:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
