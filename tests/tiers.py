"""How many examples a property runs in the tier being run. A property that names its own count
(``@settings(max_examples=examples(200))``) runs that count in the full suite and the fast tier's
share of it in the fast tier (``-m "not slow"``, docs/testing.md), as the properties without a count
of their own do through the hypothesis profiles that tests/conftest.py registers."""
from hypothesis import settings


def examples(full: int) -> int:
    """``full`` in the full suite; in the fast tier, ``full`` times the fast profile's count over
    the default profile's (a quarter as registered), and at least one."""
    share = settings.default.max_examples / settings.get_profile("default").max_examples
    return full if share >= 1 else max(1, round(full * share))
