"""One caching rule (nablafol.caching): memo on immutable objects, bounded caches owned by who
depends on them, functools.cache only for files shipped with the package."""
from __future__ import annotations

import re

from architecture_house import ROOT, modules

OTHER_WAYS = {
    "lru_cache": re.compile(r"lru_cache"),
    "cached_property": re.compile(r"cached_property"),
    "a private attribute written onto a frozen object": re.compile(r"object\.__setattr__\([^,]+,\s*[\"']_"),
    "a value kept on a program for a user token": re.compile(r"cached_for"),
}


def test_no_module_caches_another_way():
    found = []
    for name, path in modules().items():
        if name == "nablafol.caching":
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{lineno}: {what}" for what, pattern in OTHER_WAYS.items()
                      if pattern.search(line)]
    assert found == [], "\n".join(found)


def test_functools_cache_only_reads_shipped_files():
    uses = [(name, line) for name, path in modules().items()
            for line in path.read_text(encoding="utf-8").splitlines() if "@functools.cache" in line]
    assert uses and all("shipped with the package" in line for _, line in uses), uses
