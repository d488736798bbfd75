"""GQA's ``annotations`` of a generated question: which words of the question and of its full
answer refer to which object (what GQA's grounding score reads as the gold regions).

GQA's layout: ``{"question": {POSITION: objectId}, "answer": {...}, "fullAnswer": {...}}``,
``POSITION`` a token index (``"2"``) or a span (``"5:7"``, end excluded) of the text cut into
words and punctuation marks. Here (decided; GQA annotated by hand):

- the objects referred to are those a naming step of the program picks (``select``,
  ``relate``, and the objects a ``verify rel`` / ``choose rel`` names), as narrowed by the
  ``filter`` steps that follow it (``the red car`` is the one red car, not every car), when
  that is exactly one object; the word is the step's name (or its plural) at its first
  occurrence in the text not already annotated (a name the text never writes, ``_`` or
  ``person`` read as "who", is not annotated);
- the full answer also annotates the answer of a ``query: name`` question (the object queried);
- ``answer`` annotations point at the answer word when it names an object (the same object).

>>> from nablafol.dsl import parse_program
>>> from nablafol.data import load_scene_graphs
>>> from nablafol.synthetic.crisp import CrispExecutor
>>> graph = load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json")["2354786"]
>>> program = parse_program("select: man->relate: animal,riding,o [0]->query: name [1]")
>>> run = CrispExecutor().run(program, graph)
>>> annotate(program, run, "What animal is the man riding?", "The man is riding a horse.", run.answer)
{'question': {'1': '3817112', '4': '3817110'}, 'answer': {'0': '3817112'}, 'fullAnswer': {'1': '3817110', '5': '3817112'}}
"""
from __future__ import annotations

import re

from nablafol.dsl.ast import Objects, Program, Relation

from .crisp import Execution
from .text import plural

__all__ = ["annotate", "tokens"]

_TOKEN = re.compile(r"\w+|[^\w\s]")
_NAMING = ("select", "relate")


def tokens(text: str) -> list[str]:
    """The text cut into words and punctuation marks, lower-cased (GQA's annotation positions)."""
    return [t.lower() for t in _TOKEN.findall(text)]


def _narrowed(program: Program, index: int) -> int:
    """The last step of the chain of ``filter`` steps that read only ``index``'s objects."""
    while True:
        follower = next((k for k, s in enumerate(program.steps)
                         if s.operation == "filter" and s.dependencies == (index,)), None)
        if follower is None:
            return index
        index = follower


def _referents(program: Program, run: Execution) -> list[tuple[str, str]]:
    """``(name, object id)`` of every naming step that picks exactly one object, in step order."""
    out = []
    for index, step in enumerate(program.steps):
        if not isinstance(step.argument, (Objects, Relation)) or step.argument.name == "_":
            continue
        if step.operation in _NAMING:
            picked = run.results[_narrowed(program, index)]
        else:  # verify rel / choose rel: the objects its relation names
            picked = run.grounding[index] or ()
        if isinstance(picked, (frozenset, tuple)) and len(picked) == 1:
            out.append((step.argument.name, next(iter(picked))))
    return out


def _answer_referent(program: Program, run: Execution, answer: str) -> list[tuple[str, str]]:
    last = program.steps[-1]
    if last.operation == "query" and getattr(last.argument, "name", None) == "name" and last.dependencies:
        picked = run.results[last.dependencies[0]]
        if isinstance(picked, frozenset) and len(picked) == 1:
            return [(answer, next(iter(picked)))]
    return []


def _place(words: list[str], referents: list[tuple[str, str]]) -> dict[str, str]:
    """Position -> object id for each referent at its name's first occurrence in ``words`` not
    taken by an earlier referent (a referent whose name is not there is left out)."""
    placed, taken = {}, set()
    for name, object_id in referents:
        for form in dict.fromkeys((name, plural(name))):
            target = tokens(form)
            at = next((i for i in range(len(words) - len(target) + 1)
                       if words[i:i + len(target)] == target and not taken & set(range(i, i + len(target)))), None)
            if at is not None:
                end = at + len(target)
                placed[str(at) if len(target) == 1 else f"{at}:{end}"] = object_id
                taken.update(range(at, end))
                break
    return dict(sorted(placed.items(), key=lambda item: int(item[0].partition(":")[0])))


def annotate(program: Program, run: Execution, question: str, full_answer: str, answer: str) -> dict:
    """GQA's ``annotations`` of one question (``run``: the crisp executor's run of ``program``)."""
    referents = _referents(program, run)
    answered = _answer_referent(program, run, answer)
    return {"question": _place(tokens(question), referents), "answer": _place(tokens(answer), answered),
            "fullAnswer": _place(tokens(full_answer), referents + answered)}
