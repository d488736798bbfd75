import io

from nablafol.progress import ProgressBar


def test_progress_prints_deciles_off_a_terminal_and_restarts_per_pass():
    out = io.StringIO()
    bar = ProgressBar("work", stream=out)
    for done in range(0, 101, 5):
        bar(done, 100)
    for done in range(0, 101, 50):  # a second pass (another epoch)
        bar(done, 100)
    lines = out.getvalue().splitlines()
    assert len(lines) == 11 + 3 and lines[0].startswith("work [") and "100.0%" in lines[10]
    assert "0/100" in lines[11]
