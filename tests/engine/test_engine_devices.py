"""The engine on every device this machine has (the CPU; CUDA or MPS where present): tables on
the device give answers on the device, with the soundness they have on the CPU (brute force on
read-once formulas, exact mode on any formula), batched over scenes of different sizes, and the
same gradients as float64 on the CPU."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from engine_helpers import run_engine
from nablafol.engine import Engine
from nablafol.testing import brute_force, devices
from nablafol.testing.strategies import scenes_and_programs

DEVICES = devices()


@pytest.mark.slow
@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=examples(20))
@given(case=scenes_and_programs(read_once=True, max_objects=3, enumerable=True))
def test_read_once_formulas_equal_brute_force_on_the_device(device, case):
    answers = run_engine([case.program], [case.tables], dtype=torch.float64, device=device)
    assert answers.log_probs.device.type == torch.device(device).type
    got = answers.probs()[0, : case.program.n_candidates].cpu().tolist()
    assert np.allclose(got, brute_force(case.program, case.tables), atol=1e-12, rtol=0), case.program.formula()


@pytest.mark.slow
@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=examples(12))
@given(case=scenes_and_programs(max_objects=3, enumerable=True))
def test_exact_mode_equals_brute_force_on_the_device(device, case):
    answers = run_engine([case.program], [case.tables], dtype=torch.float64, device=device,
                         engine=Engine(exact=True, exact_budget=22))
    got = answers.probs()[0, : case.program.n_candidates].cpu().tolist()
    assert bool(answers.exact[0])
    assert np.allclose(got, brute_force(case.program, case.tables), atol=1e-9, rtol=0), case.program.formula()


@pytest.mark.slow
@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=examples(8))
@given(cases=st.lists(scenes_and_programs(max_objects=5), min_size=2, max_size=5))
def test_a_batch_on_the_device_matches_the_cpu_with_its_gradients(device, cases):
    """Scenes of different sizes (padding, masks): float64 on the device against float64 on the
    CPU, the answers and the gradients of their sum with respect to every table; float32 on the
    device against float64 on the CPU, the answers."""
    from nablafol.oracle import TableOracle

    def answer(dtype, where):
        tables = [{p: torch.as_tensor(np.asarray(v), dtype=dtype, device=where).requires_grad_() for p, v in
                   case.tables.items()} for case in cases]
        answers = Engine()([case.program for case in cases], TableOracle(tables))
        probs = answers.probs().masked_fill(~answers.candidate_mask, 0.0)
        if probs.requires_grad:  # a batch that asks the oracle nothing has no gradient
            probs.sum().backward()
        grads = [t.grad.double().cpu() if t.grad is not None else torch.zeros(t.shape, dtype=torch.float64)
                 for scene in tables for t in scene.values()]
        return probs.detach().double().cpu(), grads, answers.log_probs.device

    want, want_grads, _ = answer(torch.float64, "cpu")
    got, got_grads, where = answer(torch.float64, device)
    assert where.type == torch.device(device).type
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
    for g, w in zip(got_grads, want_grads):  # near 0 and 1 a gradient may be infinite: on both, then
        torch.testing.assert_close(g, w, atol=1e-9, rtol=1e-9, equal_nan=True)
    got32, _, _ = answer(torch.float32, device)
    torch.testing.assert_close(got32, want, atol=1e-5, rtol=0)
