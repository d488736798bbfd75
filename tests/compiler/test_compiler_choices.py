"""Multiple choice through Algorithm 1: the engine picks the choice of highest exact probability."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from nablafol.compiler import CompileError
from nablafol.compiler.choices import choose_among, multiple_choice
from nablafol.engine import Engine
from nablafol.ir import Aggregate, Filter, Predicate, Quantifier, Relate, Top
from nablafol.oracle import TableOracle
from nablafol.testing import brute_force

probabilities = st.floats(0.0, 1.0, allow_nan=False)


@given(st.integers(1, 4), st.integers(2, 5), st.data())
def test_the_engine_answers_the_choice_of_highest_probability(n_objects, n_choices, data):
    """Any formulas per choice (here: a filter, or a relate through a shared relation): the
    prediction is the argmax of the candidates' probabilities, first of equal ones; those are
    the exact ones (brute force) where every formula is read-once (no relate here)."""
    choices = [f"choice {i}" for i in range(n_choices)]
    near = Predicate("near", 2)
    tables = {Predicate(c): torch.tensor(data.draw(st.lists(probabilities, min_size=n_objects, max_size=n_objects)))
              for c in choices}
    tables[near] = torch.tensor(data.draw(st.lists(st.lists(probabilities, min_size=n_objects, max_size=n_objects),
                                                   min_size=n_objects, max_size=n_objects)))
    relational = data.draw(st.lists(st.booleans(), min_size=n_choices, max_size=n_choices))
    truths = [Aggregate(Quantifier.EXISTS, Relate.of(near, Quantifier.EXISTS, Filter(Predicate(c), Top())) if r
                        else Filter(Predicate(c), Top())) for c, r in zip(choices, relational)]
    question = multiple_choice(choices, truths)
    answers = Engine()([question.program], TableOracle([tables]))
    exact = brute_force(question.program, tables) if not any(relational) else None
    probs = answers.probs()[0, :n_choices].tolist()
    if exact is not None:
        assert probs == pytest.approx(exact, abs=1e-5)
    scores = answers.log_probs[0, :n_choices].tolist()
    assert question.index_of(answers.predictions()[0]) == max(range(n_choices), key=lambda i: scores[i])


def test_choose_among_scores_each_choice_on_the_attention():
    question = choose_among(Top(), ["red", "blue"], lambda c: Predicate(c, kind="attr"))
    assert question.program.formula() == "[red: ∃X: red(X), blue: ∃X: blue(X)]"
    assert question.program.focus == Top()


def test_choices_that_read_the_same_stay_apart():
    truth = Aggregate(Quantifier.EXISTS, Top())
    question = multiple_choice(["yes .", "yes .", "no ."], [truth] * 3)
    assert question.program.labels == ("1: yes .", "2: yes .", "3: no .")
    assert question.index_of("2: yes .") == 1 and question.choices[1] == "yes ."


@pytest.mark.parametrize("choices, n, fragment", [([], 0, "at least one choice"), (["a", "b"], 1, "2 choices but 1"),
                                                  ([1, 2], 2, "strings")])
def test_bad_choices_are_refused(choices, n, fragment):
    with pytest.raises(CompileError, match=fragment):
        multiple_choice(choices, [Aggregate(Quantifier.EXISTS, Top())] * n)


def test_a_label_that_is_no_choice_is_refused():
    question = multiple_choice(["a"], [Aggregate(Quantifier.EXISTS, Top())])
    with pytest.raises(CompileError, match="not one of the 1 choices"):
        question.index_of("b")
