"""TableOracle gathers a batch's tables by scene size in a few calls: the same rows, in the
requests' order, as padding each request's table on its own; bad values named as before."""
import pytest
import torch
from hypothesis import given, settings, strategies as st
from tiers import examples

from nablafol.errors import ProbabilityError, ShapeError
from nablafol.ir import Predicate
from nablafol.oracle import Requests, TableOracle

RED, BLUE, LEFT = Predicate("red"), Predicate("blue"), Predicate("left", arity=2)


@st.composite
def scenes_and_requests(draw):
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=5))
    scenes = [{RED: torch.rand(n), BLUE: torch.rand(n), LEFT: torch.rand(n, n)} for n in sizes]
    pairs = draw(st.lists(st.tuples(st.integers(0, len(sizes) - 1), st.sampled_from([RED, BLUE, LEFT])),
                          min_size=1, max_size=12, unique=True))
    return scenes, pairs


@settings(max_examples=examples(60), deadline=None)
@given(scenes_and_requests())
def test_gathered_rows_are_each_requests_padded_table(case):
    scenes, pairs = case
    for p in scenes:
        for t in p.values():
            t.requires_grad_(True)
    oracle, n = TableOracle(scenes), max(len(s[RED]) for s in scenes)
    for arity, method in ((1, oracle.unary), (2, oracle.binary)):
        mine = [(s, p) for s, p in pairs if p.arity == arity]
        if not mine:
            continue
        got = method(Requests.build([s for s, _ in mine], [p for _, p in mine]))
        expected = torch.stack([torch.nn.functional.pad(scenes[s][p], [0, n - len(scenes[s][RED])] * arity)
                                for s, p in mine]).log()
        assert torch.equal(got, expected)
        got.masked_fill(torch.isinf(got), 0.0).sum().backward()  # gradients reach the tables given
        assert all(scenes[s][p].grad is not None for s, p in mine)


def test_the_first_bad_value_is_named_in_the_order_given():
    good = {RED: [0.5, 0.5], LEFT: [[1.0, 0.0], [0.0, 1.0]]}
    with pytest.raises(ProbabilityError, match=r"scene 1, predicate 'left': value 1\.5 at \(0, 1\)"):
        TableOracle([good, {LEFT: [[0.0, 1.5], [0.0, 0.0]], RED: [float("nan"), 0.2]}])
    with pytest.raises(ProbabilityError, match=r"scene 0, predicate 'red': value nan at \(0,\)"):
        TableOracle([{RED: [float("nan"), 0.2]}, {RED: [-0.1]}])


@pytest.mark.parametrize("bad", [1.0 + 1e-6, -1e-6, float("nan"), float("inf")])
def test_every_layout_of_a_table_is_checked(bad):
    # vectors, contiguous matrices and transposed (non-contiguous) ones all go through the one check
    base = torch.tensor([[0.0, 1.0], [0.25, 0.5]])
    TableOracle([{RED: torch.tensor([0.0, 1.0]), LEFT: base.t()}])  # the ends 0 and 1 are probabilities
    for table in (base.clone(), base.clone().t()):
        table[1, 0] = bad
        assert not table.is_contiguous() or table.stride() == (2, 1)
        with pytest.raises(ProbabilityError, match=r"scene 0, predicate 'left'"):
            TableOracle([{RED: torch.tensor([0.5, 0.5]), LEFT: table}])
    with pytest.raises(ProbabilityError, match=r"scene 0, predicate 'red'"):
        TableOracle([{RED: torch.tensor([0.5, bad]), LEFT: base}])


def test_tables_on_several_devices_are_named_in_one_line():
    red = Predicate("red")
    with pytest.raises(ShapeError, match=r"scene 1, predicate 'red': table on meta, the first table on cpu"):
        TableOracle([{red: torch.rand(3)}, {red: torch.empty(3, device="meta")}])


def test_an_oracle_whose_tables_are_not_where_its_sizes_are_is_named():
    """num_objects on the CPU, tables elsewhere: one line, not a torch error deep in an operator."""
    from nablafol.engine import Engine
    from nablafol.ir import Aggregate, Filter, Program, Quantifier, Top

    red = Predicate("red")

    class Elsewhere:
        num_objects = torch.tensor([3])

        def unary(self, requests):
            return torch.empty(len(requests), 3, device="meta")

    with pytest.raises(ShapeError, match="returned a table on meta, its num_objects is on cpu"):
        Engine()([Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))], Elsewhere())


def test_a_table_oracle_moved_or_cast_takes_its_tables_along():
    from nablafol.engine import Engine
    from nablafol.ir import Aggregate, Filter, Program, Quantifier, Top

    red = Predicate("red")
    oracle = TableOracle([{red: [0.5, 0.25]}, {red: [0.75]}]).double()
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    answers = Engine()([program, program], oracle)
    assert answers.log_probs.dtype == torch.float64 and oracle.num_objects.dtype == torch.long
    assert answers.probs()[:, 0].tolist() == pytest.approx([1 - 0.5 * 0.75, 0.75], abs=1e-12)  # float64 all through
    moved = TableOracle([{red: [0.5, 0.25]}]).to("meta")
    assert moved.num_objects.device.type == "meta" and moved._unary[0][red].device.type == "meta"
