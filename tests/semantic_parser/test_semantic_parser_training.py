"""Training the parser on generated GQA questions: it learns the templates, copies names it
never saw, and refuses unusable settings and data in one line."""
import pytest
import torch

from nablafol.data import Question
from nablafol.semantic_parser import ParserError, TrainingSettings, same_program, train_parser
from nablafol.semantic_parser.training import exact_match, training_examples

from conftest import TEST_SETTINGS, simple_questions


@pytest.mark.slow
def test_a_parser_trained_for_seconds_reads_held_out_questions(trained, dataset):
    parser, result = trained
    held_out = training_examples(simple_questions(dataset / "val_balanced_questions.json"))[0]
    assert len(held_out) >= 20
    assert exact_match(parser, held_out) >= 0.5
    assert result.examples == len(simple_questions(dataset / "train_balanced_questions.json"))
    assert [row["epoch"] for row in result.history] == list(range(1, TEST_SETTINGS.epochs + 1))
    assert result.history[-1]["loss"] < result.history[0]["loss"] / 3


@pytest.mark.slow
def test_names_never_seen_in_training_are_copied_from_the_question(trained):
    parser, _ = trained
    assert "zebra" not in parser.question_words and "zebra" not in parser.units.words
    read = parser.parse("Is the zebra red?")
    assert read.program.steps[0].argument.name == "zebra"
    assert read.text.startswith("select: zebra->")


@pytest.mark.slow
def test_a_word_may_be_copied_in_its_vocabulary_form():
    questions = [Question(str(k), "1", f"Are there {plural}?", None, None, f"select: {name} (-)->exist: ? [0]")
                 for k, (plural, name) in enumerate([("cups", "cup"), ("dogs", "dog"), ("benches", "bench"),
                                                     ("boxes", "box"), ("plates", "plate")])]
    settings = TrainingSettings(epochs=60, batch_size=8, lr=1e-2, word_dim=8, unit_dim=8, hidden_dim=32)
    parser = train_parser(questions, settings=settings).parser
    assert "cat" not in parser.units.words and "knife" not in parser.units.words
    assert parser.parse("Are there cats?").text == "select: cat->exist: ? [0]"
    assert parser.parse("Are there knives?").text == "select: knife->exist: ? [0]"


def test_training_is_deterministic_for_a_seed():
    questions = [Question(str(k), "1", f"Is there a {n}?", None, None, f"select: {n} (-)->exist: ? [0]")
                 for k, n in enumerate(["cup", "dog", "cat"])]
    settings = TrainingSettings(epochs=2, batch_size=2, word_dim=8, unit_dim=8, hidden_dim=8, seed=4)
    first, second = (train_parser(questions, settings=settings).parser for _ in range(2))
    for (name, a), (_, b) in zip(first.network.state_dict().items(), second.network.state_dict().items()):
        assert torch.equal(a, b), name


def test_questions_that_cannot_teach_are_left_out_with_their_reasons():
    questions = [Question("ok", "1", "Is there a cup?", semantic_str="select: cup (-)->exist: ? [0]"),
                 Question("no-text", "1", None, semantic_str="select: cup (-)->exist: ? [0]"),
                 Question("no-program", "1", "Is there a cup?"),
                 Question("broken", "1", "Is there a cup?", semantic_str="select: cup->exist: ? [3]")]
    examples, skipped = training_examples(questions)
    assert [e.question_id for e in examples] == ["ok"]
    assert [(q, r.split(":")[0]) for q, r in skipped] == [("no-text", "no question text"),
                                                          ("no-program", "no program"),
                                                          ("broken", "malformed program")]
    assert same_program(examples[0].program, examples[0].program)


def test_no_usable_question_is_one_line():
    with pytest.raises(ParserError) as caught:
        train_parser([Question("q", "1", "Is there a cup?")])
    assert "no usable training questions" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("setting", [dict(epochs=0), dict(batch_size=-1), dict(lr=0.0), dict(lr=float("nan")),
                                     dict(word_dropout=1.5), dict(hidden_dim=True), dict(min_probability=2)])
def test_unusable_settings_are_refused(setting):
    with pytest.raises(ParserError):
        TrainingSettings(**setting)
