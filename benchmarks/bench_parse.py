"""How fast GQA programs are read: `parse_program` (semanticStr) and `program_from_semantic`.

    python benchmarks/bench_parse.py                # 132,062 lines, the size of GQA's val set
    python benchmarks/bench_parse.py --n 20000 --form semantic
    python benchmarks/bench_parse.py --reference    # also time the uncached reference path

The lines are generated deterministically (seeded) in GQA's shapes, with roughly the
mix of structures seen in GQA's questions (queries over relations, verifies, chooses,
exist-or/and pairs, scene questions, same/different/common/compare), names, values
and relations drawn from GQA's vocabulary with Zipf-like frequencies (a few common
concepts, a long tail, as in GQA) and fresh random object ids on every line. Timing
starts with every template cache empty ("cold") and covers the whole pass.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nablafol.dsl import Ontology, clear_caches, parse_program, program_from_semantic  # noqa: E402
from nablafol.dsl.parser import _read_exactly  # noqa: E402  (the uncached reference path)

GQA_VAL_QUESTIONS = 132_062


class LineMaker:
    """Deterministic GQA-like program lines."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        gqa = Ontology.gqa()
        self.names = sorted(gqa.raw_form(c) for c in gqa.classes)
        self.categories = sorted(gqa.categories)
        self.relations = sorted(gqa.relations)
        self.types = {t: sorted(v) for t, v in gqa.attribute_types.items()
                      if t not in gqa.scene_types and len(v) >= 2}
        self.type_names = sorted(self.types)
        self.comparatives = ["healthier", "less healthy", "older", "younger", "taller", "larger"]
        # (weight, builder) roughly after the structures of GQA's questions.
        self.families = [
            (18, self.relate_query), (10, self.query_attribute), (8, self.filter_query),
            (8, self.verify_attribute), (4, self.filter_verify), (8, self.verify_relation),
            (6, self.relate_exist), (6, self.choose_attribute), (5, self.choose_relation),
            (3, self.filter_choose), (4, self.scene), (8, self.exist_logic), (3, self.filter_exist_logic),
            (3, self.two_same), (1, self.common), (2, self.compare), (1, self.all_same),
            (2, self.exist), (3, self.relate_relate_query), (6, self.filter_relate_query),
            (3, self.relate_filter_verify),
        ]
        self.weights = [w for w, _ in self.families]

    # --- vocabulary with a long tail
    def zipf(self, items):
        index = int(len(items) * self.rng.random() ** 3)  # most draws near the front
        return items[min(index, len(items) - 1)]

    def ids(self, none_rate=0.15):
        r = self.rng.random()
        if r < none_rate:
            return "(-)"
        if r > 0.97:
            return "(" + ",".join(str(self.rng.randrange(10**5, 5 * 10**6)) for _ in range(3)) + ")"
        return f"({self.rng.randrange(10**5, 5 * 10**6)})"

    def name(self):
        return self.zipf(self.names) if self.rng.random() < 0.85 else self.zipf(self.categories)

    def typed_value(self):
        type_name = self.zipf(self.type_names)
        return type_name, self.zipf(self.types[type_name])

    def relation(self, rels=1):
        target = "_" if self.rng.random() < 0.3 else self.name()
        chosen = "|".join(self.zipf(self.relations) for _ in range(rels))
        return f"{target},{chosen},{self.rng.choice('so')} {self.ids()}"

    def select(self, first=True):
        return f"select: {self.name()} {self.ids()}" + ("" if first else " ")

    # --- program shapes
    def relate_query(self):
        return f"{self.select()}->relate: {self.relation()} [0]->query: name [1]"

    def relate_relate_query(self):
        return f"{self.select()}->relate: {self.relation()} [0]->relate: {self.relation()} [1]->query: name [2]"

    def filter_relate_query(self):
        type_name, value = self.typed_value()
        return f"{self.select()}->filter {type_name}: {value} [0]->relate: {self.relation()} [1]->query: name [2]"

    def relate_filter_verify(self):
        (t1, v1), (t2, v2) = self.typed_value(), self.typed_value()
        return (f"{self.select()}->relate: {self.relation()} [0]->filter {t1}: {v1} [1]"
                f"->verify {t2}: {v2} [2]")

    def query_attribute(self):
        return f"{self.select()}->query: {self.zipf(self.type_names)} [0]"

    def filter_query(self):
        type_name, value = self.typed_value()
        negation = self.rng.random() < 0.2
        value = f"not({value})" if negation else value
        return f"{self.select()}->filter {type_name}: {value} [0]->query: name [1]"

    def verify_attribute(self):
        type_name, value = self.typed_value()
        return f"{self.select()}->verify {type_name}: {value} [0]"

    def filter_verify(self):
        (t1, v1), (t2, v2) = self.typed_value(), self.typed_value()
        return f"{self.select()}->filter {t1}: {v1} [0]->verify {t2}: {v2} [1]"

    def verify_relation(self):
        return f"{self.select()}->verify rel: {self.relation()} [0]"

    def relate_exist(self):
        return f"{self.select()}->relate: {self.relation()} [0]->exist: ? [1]"

    def choose_attribute(self):
        type_name = self.zipf(self.type_names)
        a, b = self.rng.sample(self.types[type_name], 2)
        return f"{self.select()}->choose {type_name}: {a}|{b} [0]"

    def filter_choose(self):
        t1, v1 = self.typed_value()
        type_name = self.zipf(self.type_names)
        a, b = self.rng.sample(self.types[type_name], 2)
        return f"{self.select()}->filter {t1}: {v1} [0]->choose {type_name}: {a}|{b} [1]"

    def choose_relation(self):
        return f"{self.select()}->choose rel: {self.relation(rels=2)} [0]"

    def scene(self):
        kind = self.rng.random()
        if kind < 0.4:
            return "select: scene->query: place [0]"
        if kind < 0.7:
            return "select: scene->choose location: " + self.rng.choice(["indoors|outdoors", "outdoors|indoors"]) + " [0]"
        return "select: scene->query: weather [0]"

    def exist(self):
        return f"select: {self.name()} {self.ids(0.5)}->exist: ? [0]"

    def exist_logic(self):
        op = self.rng.choice(["or", "and"])
        return (f"select: {self.name()} {self.ids(0.5)}->exist: ? [0]->select: {self.name()} "
                f"{self.ids(0.5)} ->exist: ? [2]->{op}:  [1, 3]")

    def filter_exist_logic(self):
        type_name, value = self.typed_value()
        return (f"{self.select()}->filter {type_name}: {value} [0]->exist: ? [1]->{self.select(False)}"
                f"->filter {type_name}: {value} [3]->exist: ? [4]->or:  [2, 5]")

    def two_same(self):
        op = self.rng.choice(["same", "different"])
        return f"{self.select()}->{self.select(False)}->{op} {self.zipf(self.type_names)}:  [0, 1]"

    def common(self):
        return f"{self.select()}->{self.select(False)}->common:  [0, 1]"

    def compare(self):
        return f"{self.select()}->{self.select(False)}->choose {self.rng.choice(self.comparatives)}:  [0, 1]"

    def all_same(self):
        return f"{self.select()}->{self.rng.choice(['same', 'different'])}: {self.zipf(self.type_names)} [0]"

    def line(self) -> str:
        build = self.rng.choices(self.families, weights=self.weights)[0][1]
        return build()


def make_lines(n: int, seed: int = 0) -> list[str]:
    maker = LineMaker(seed)
    return [maker.line() for _ in range(n)]


def timed(label: str, function, items) -> float:
    clear_caches()
    start = time.perf_counter()
    for item in items:
        function(item)
    seconds = time.perf_counter() - start
    print(f"{label:<34} {len(items):>8} programs  {seconds:7.2f} s  {len(items) / seconds:>9,.0f} programs/s")
    return seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=GQA_VAL_QUESTIONS, help="number of programs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--form", choices=["text", "semantic", "both"], default="both")
    parser.add_argument("--reference", action="store_true", help="also time the uncached reference path")
    args = parser.parse_args(argv)

    lines = make_lines(args.n, args.seed)
    programs = [parse_program(line) for line in lines]  # also checks that every line is valid
    templates = len({line for line in (p.to_semantic_str() for p in programs)})
    print(f"{args.n} generated programs, {templates} distinct lines, "
          f"{sum(len(p) for p in programs) / len(programs):.2f} steps on average")
    if args.form in ("text", "both"):
        timed("parse_program (cold cache)", parse_program, lines)
    if args.form in ("semantic", "both"):
        semantic = [p.to_semantic() for p in programs]
        timed("program_from_semantic (cold cache)", program_from_semantic, semantic)
    if args.reference:
        timed("reference path (no cache)", _read_exactly, lines)


if __name__ == "__main__":
    main()
