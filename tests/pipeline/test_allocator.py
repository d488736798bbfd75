"""keep_freed_memory: a freed big block stays resident inside the block, goes back to the OS after it
(also when the block ends by an exception), and (outside any block) glibc's default returns it at once."""
import json
import subprocess
import sys

import pytest

from nablafol.pipeline.allocator import _glibc, keep_freed_memory

pytestmark = pytest.mark.skipif(_glibc() is None, reason="mallopt is glibc's (Linux); elsewhere the block is a no-op")

# resident MB after freeing a touched 256 MB tensor: outside, inside, after the block (and after
# another one freed then, and after a block ended by an exception); in a fresh
# process, so that the test process's own heap (free blocks of earlier tests) cannot serve it
_PROBE = """
import json, os, torch
from nablafol.pipeline.allocator import keep_freed_memory
page = os.sysconf("SC_PAGE_SIZE")
def resident_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page / 2**20
def freed():
    x = torch.ones(64 * 2**20)
    del x
    return resident_mb()
base = resident_mb()
out = {"outside": freed() - base}
with keep_freed_memory() as kept:
    with keep_freed_memory():  # nested: the inner end restores nothing
        pass
    out["inside"] = freed() - base
    out["kept"] = kept
out["after"] = resident_mb() - base
out["after_freed"] = freed() - base  # big blocks mapped again, and unmapped when freed
try:
    with keep_freed_memory():
        raise KeyError("inside")
except KeyError:
    pass
out["after_raise"] = freed() - base  # an exception inside ends the block as well
print(json.dumps(out))
"""


@pytest.mark.slow
def test_a_freed_block_stays_inside_and_goes_back_after():
    r = json.loads(subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True).stdout)
    assert r["kept"] is True
    assert r["outside"] < 64, r  # glibc's default: a 256 MB block is unmapped when freed
    assert r["inside"] > 192, r  # kept resident for the next step (also after a nested block ended)
    assert r["after"] < 64, r  # the free heap trimmed
    assert r["after_freed"] < 64 and r["after_raise"] < 64, r  # no longer kept once the block has ended


def test_the_block_yields_false_where_there_is_no_glibc(monkeypatch):
    import nablafol.pipeline.allocator as allocator
    monkeypatch.setattr(allocator, "_glibc", lambda: None)
    with keep_freed_memory() as kept:
        assert kept is False
