"""nablafol: differentiable first-order logic (∇-FOL) for visual question answering.

A question's program is a first-order formula, evaluated exactly and differentiably (in log
space, batched) over what a visual oracle says about the objects of a scene:

    >>> from nablafol import Engine, Predicate, Program, Aggregate, Filter, Top, Quantifier, TableOracle
    >>> red = Predicate("red")
    >>> program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    >>> Engine()([program], TableOracle([{red: [0.5, 0.5]}])).probs()
    tensor([[0.7500]])

The names below load on first use, so that torch-free parts (``nablafol.data``,
``nablafol.scoring``) can be imported without torch.
"""
import sys
import types
from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "Engine": "engine", "Answers": "engine", "Calibration": "engine",
    "NablafolError": "errors",
    "Predicate": "ir", "Program": "ir", "Attention": "ir", "Truth": "ir", "Top": "ir", "Filter": "ir",
    "Neg": "ir", "Relate": "ir", "Atom": "ir", "Conjoin": "ir", "Aggregate": "ir", "Not": "ir", "And": "ir",
    "Or": "ir",
    "Quantifier": "operators",
    "Oracle": "oracle", "Requests": "oracle", "TableOracle": "oracle",
    "answer_loss": "losses", "explain": "explain",
}
__all__ = list(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nablafol' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)


class _Package(types.ModuleType):
    """The package, keeping an exported function whose module has its name (``explain``): the
    import system sets a submodule as an attribute of its package once loaded, which would make
    ``from nablafol import explain`` give the module after anything had imported it."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name and hasattr(value, name):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
