"""Inspecting a calibrator per step; its parameter constraints; the engine's cost without one."""
import dataclasses
import math
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol import dsl
from nablafol.calibration import (StepParameters, TopDownCalibrator, classify_shape, format_step_parameters,
                         step_parameters)
from nablafol.calibration.calibrator import MIN_EXPONENT, constrained_parameters
from nablafol.calibration.shapes import beta_curve
from nablafol.compiler import Compiler
from nablafol.data.scene_graphs import scene_graph_from_record
from nablafol.engine import Engine, ProgramPlan
from nablafol.ir import Program, Top
from nablafol.graph_oracles import SceneGraphOracle

COMPILER = Compiler(dsl.Ontology.gqa())
PROGRAMS = {
    "verify": "select: ball->verify color: red [0]",
    "relate": "select: table->relate: _,on,s [0]->exist: ? [1]",
    "not": "select: chair->filter color: not(red) [0]->exist: ? [1]",
    "query": "select: chair->query: color [0]",
    "all": "select: chair->verify color: red [0]->verify shape: round [0]->and:  [1, 2]",
}
CALIBRATION_DIR = Path(__import__("calibration").__file__).resolve().parent


def compiled(name):
    return COMPILER.compile_text(PROGRAMS[name]).program


def random_calibrator(seed=0, std=1.5):
    torch.manual_seed(seed)
    cal = TopDownCalibrator(["name:ball", "attr:red", "name:chair", "name:table", "rel:on", "<not>", "<and>"],
                            embedding_dim=8, hidden_dim=8)
    torch.nn.init.normal_(cal.head[-1].weight, std=std)
    return cal.eval()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_one_entry_per_attention_step_in_order(name):
    program = compiled(name)
    steps = ProgramPlan.of(program).attention_steps
    params = step_parameters(random_calibrator(), program)
    assert [p.step for p in params] == list(range(len(steps)))
    for p, step in zip(params, steps):
        assert (p.shape == "unused") == isinstance(step, Top)
        if p.shape != "unused":
            assert p.shape == classify_shape(p.a, p.b, p.c, p.d)
        if isinstance(step, tuple):
            assert p.token.startswith("<each> ") and p.token.endswith(f"{step[1].kind}:{step[1].name}")


def test_tokens_name_each_step():
    assert [p.token for p in step_parameters(random_calibrator(), compiled("not"))] == [
        "<top>", "name:chair", "attr:red", "<not>", "<and>"]
    # a negated open question ("is any of them not X"): filter, not, and rows per candidate
    program = COMPILER.compile_text("select: chair->choose color: red|blue [0]").program
    tokens = [p.token for p in step_parameters(random_calibrator(), program)]
    assert tokens[-2:] == ["attr:red", "attr:blue"]  # choose: one filter per option
    each = next(s for s in ProgramPlan.of(compiled("query")).attention_steps if isinstance(s, tuple))[0]
    negated = dataclasses.replace(each, negate=True, predicates=each.predicates[:2])
    tokens = [p.token for p in step_parameters(random_calibrator(), Program((negated,), labels=("a", "b")))]
    assert tokens == ["<top>", "name:chair", "<each> attr:beige", "<each> attr:black", "<each> <not> attr:beige",
                      "<each> <not> attr:black", "<each> <and> attr:beige", "<each> <and> attr:black"]


def test_reported_parameters_are_what_the_engine_applies():
    """The (a, b, c, d) shown, put into the formula, give the calibrator's own output per step."""
    cal, program = random_calibrator(seed=3), compiled("all")
    params = step_parameters(cal, program)
    alpha = torch.tensor([0.0, 0.05, 0.3, 0.5, 0.8, 0.999, 1.0], dtype=torch.float64)
    with torch.no_grad():
        cal.prepare([program])
        for p in params:
            rows = alpha.log().float().expand(1, -1)
            got = cal(rows, torch.ones_like(rows, dtype=torch.bool), torch.tensor([0]), torch.tensor([p.step]))
            want = beta_curve(alpha.numpy(), p.a, p.b, p.c, p.d)
            assert torch.allclose(got[0].exp().double(), torch.from_numpy(want), atol=1e-5), p


def test_a_fresh_calibrator_reads_identity_everywhere():
    params = step_parameters(TopDownCalibrator(["attr:red"]), compiled("query"))
    assert {p.shape for p in params} == {"unused", "identity"}
    assert all(math.isclose(v, w, rel_tol=1e-6) for p in params for v, w in zip((p.a, p.b, p.c, p.d), (1, 1, .5, 1)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        params[0].a = 2.0


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=4, max_size=4))
def test_any_mlp_output_gives_a_valid_monotone_posterior(raw):
    a, b, log_c, log_1mc, log_d = constrained_parameters(torch.tensor([raw]))
    assert a.item() >= MIN_EXPONENT and b.item() >= MIN_EXPONENT  # a, b > 0 even where softplus underflows
    assert math.isfinite(log_c.item()) and math.isfinite(log_1mc.item()) and math.isfinite(log_d.item())
    assert log_c.item() <= 0 and log_1mc.item() <= 0  # c in (0, 1): both logs finite and <= 0
    assert math.isclose(math.exp(log_c.item()) + math.exp(log_1mc.item()), 1.0, rel_tol=1e-6)
    from nablafol.calibration import beta_calibrate
    alpha = torch.linspace(0, 1, 41)
    out = beta_calibrate(alpha.log()[None], a, b, log_c, log_1mc, log_d).exp()[0]
    assert not torch.isnan(out).any() and (out >= 0).all() and (out <= 1).all()
    assert (out[1:] >= out[:-1]).all() and out[0] == 0 and out[-1] == 1


def _scene_oracle():
    graph = {"width": 10, "height": 10, "objects": {
        "1": {"name": "chair", "attributes": ["red"], "relations": [], "x": 0, "y": 0, "w": 1, "h": 1},
        "2": {"name": "table", "attributes": ["round"], "relations": [{"name": "on", "object": "1"}],
              "x": 2, "y": 2, "w": 1, "h": 1}}}
    return SceneGraphOracle([scene_graph_from_record("1", graph)], ontology=dsl.Ontology.gqa())


class CountingIdentity:
    """A calibrator that changes nothing and counts the engine's calls."""

    def __init__(self):
        self.prepared, self.calls, self.rows = 0, 0, 0

    def prepare(self, programs, device=None):
        self.prepared += 1

    def __call__(self, log_a, mask, program, step):
        self.calls, self.rows = self.calls + 1, self.rows + log_a.shape[0]
        return log_a


def test_the_engine_calls_a_calibrator_once_per_operator_group_and_never_without_one():
    programs = [compiled(n) for n in sorted(PROGRAMS)]
    oracle = _scene_oracle()
    counting = CountingIdentity()
    calibrated = Engine(calibration=counting)(programs, oracle, [0] * len(programs))
    plain = Engine()(programs, oracle, [0] * len(programs))
    assert torch.equal(calibrated.log_probs, plain.log_probs)
    plan = Engine().plan(programs)
    tops = sum(isinstance(s, Top) for p in programs for s in ProgramPlan.of(p).attention_steps)
    assert counting.prepared == 1 and counting.rows == len(plan.v_program) - tops  # every row but ⊤'s
    # without a calibrator, no line of calibration/ runs (while a calibrator exists in the process)
    calibrator = random_calibrator()
    ran = []

    def tracer(frame, event, arg):
        if event == "call" and Path(frame.f_code.co_filename).resolve().parent == CALIBRATION_DIR:
            ran.append(frame.f_code.co_name)

    sys.setprofile(tracer)
    try:
        Engine()(programs, oracle, [0] * len(programs))
        without = list(ran)
        with torch.no_grad():
            Engine(calibration=calibrator)(programs, oracle, [0] * len(programs))
    finally:
        sys.setprofile(None)
    assert without == [] and "prepare" in ran and "forward" in ran  # the tracer does see calibration code


def test_format_is_an_aligned_table():
    params = [StepParameters(0, "name:chair", 1.0, 1.0, 0.5, 1.0, "identity"),
              StepParameters(1, "<each> attr:red", 12.345, 0.25, 0.1, 123456.0, "sharpen+suppress")]
    lines = format_step_parameters(params).splitlines()
    assert lines[0].split() == ["step", "token", "a", "b", "c", "d", "shape"]
    assert lines[2].split()[-5:] == ["12.35", "0.250", "0.100", "1.2e5", "sharpen+suppress"]
    assert lines[1].index("identity") == lines[2].index("sharpen") == lines[0].index("shape")
