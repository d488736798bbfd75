"""The oracle's Adam: fused on CPU, the same updates as torch's per-tensor Adam up to rounding."""
import torch

from nablafol.neural.optimizer import adam


def _train(optimizer_of, steps=10):
    torch.manual_seed(0)
    weights = [torch.nn.Parameter(torch.randn(30, 20)), torch.nn.Parameter(torch.randn(20))]
    optimizer = optimizer_of(weights)
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for w in weights:
            w.grad = torch.randn(w.shape, generator=g)
        optimizer.step()
    return optimizer, [w.detach() for w in weights]


def test_cpu_parameters_get_the_fused_update():
    optimizer, _ = _train(lambda ws: adam(ws, lr=1e-3))
    assert optimizer.param_groups[0]["fused"] is True


def test_the_fused_update_is_adam_up_to_rounding():
    _, fused = _train(lambda ws: adam(ws, lr=1e-2, weight_decay=1e-10))
    _, plain = _train(lambda ws: torch.optim.Adam(ws, lr=1e-2, weight_decay=1e-10))
    for a, b in zip(fused, plain):
        assert torch.allclose(a, b, rtol=0, atol=1e-5)
        assert not torch.equal(a, torch.zeros_like(a))


def test_integer_tensors_are_not_given_to_the_fused_kernel():
    counts = torch.zeros(3, dtype=torch.int64)  # not a parameter Adam can fuse: the plain update is chosen
    assert adam([torch.nn.Parameter(torch.ones(2)), counts], lr=0.1).param_groups[0]["fused"] is None
