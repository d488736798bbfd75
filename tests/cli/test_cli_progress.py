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


def test_a_pass_begun_after_a_long_one_reports_its_own_rate(monkeypatch):
    """Epoch 4 starts long after epoch 1 began: its first line's rate is its own (32 questions in
    2 s), neither the first pass's nor 32 questions over no time at all."""
    import nablafol.progress as progress
    now = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[0])
    out = io.StringIO()
    bar = ProgressBar("train", stream=out)
    bar(2568, 2568)
    now[0] += 1000.0
    bar.begin(0)
    now[0] += 2.0
    bar(32, 2568)
    assert " 16 q/s" in out.getvalue().splitlines()[-1]
    bar.begin(32)  # resumed mid-pass: what was done before does not count
    now[0] += 4.0
    bar(64, 2568)
    assert " 8 q/s" in out.getvalue().splitlines()[-1]


def test_the_trainer_begins_each_pass_of_its_progress_bar(tmp_path):
    from nablafol.synthetic import generate_dataset
    from nablafol.pipeline.datasets import dataset_files
    from nablafol.pipeline.oracle_training import TrainConfig, TrainingJob, train_oracle
    generate_dataset(tmp_path / "d", n_train=8, n_val=2, n_testdev=1, seed=5, feature_dim=16, questions_per_scene=5)
    calls = []

    class Bar:
        def __call__(self, done, total=None, note=""):
            calls.append(("step", done))

        def begin(self, done=0):
            calls.append(("begin", done))

    train_oracle(TrainingJob(dataset_files(tmp_path / "d"), tmp_path / "m", TrainConfig(epochs=2, batch_size=16),
                             hidden_dim=4), log=lambda *_: None, progress=Bar())
    begins = [i for i, call in enumerate(calls) if call[0] == "begin"]
    assert len(begins) == 2 and begins[0] == 0 and calls[begins[1] - 1][0] == "step"
    assert all(calls[i][1] == 0 for i in begins)
