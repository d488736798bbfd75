"""`nablafol parser train|eval|apply` and `nablafol answer` as a user meets them: outputs, exit
statuses, one-line errors."""
import json

import pytest
import torch

from nablafol.cli import main
from nablafol.data import load_questions
from nablafol.dsl import Ontology, parse_program
from nablafol.neural import ConceptVocabulary, NeuralOracleModel, save_model
from nablafol.semantic_parser import load_parser

from conftest import simple_questions

# its fixtures train or generate for the whole module: among the longest of a measured run
pytestmark = pytest.mark.slow


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err):
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_parser_train_writes_a_folder_that_loads(dataset, tmp_path, capsys):
    out = tmp_path / "p"
    code, printed, _ = run_cli(capsys, "parser", "train", "--questions", dataset / "train_balanced_questions.json",
                               "--val", dataset / "val_balanced_questions.json", "--out", out, "--epochs", "1",
                               "--hidden-dim", "16", "--batch-size", "64")
    assert code == 0
    assert "epoch 1: loss" in printed and "validation exact match" in printed and "trained on" in printed
    parser = load_parser(out)
    assert parser.info["best_epoch"] == 1 and parser.network.config.hidden_dim == 16


def test_parser_eval_prints_exact_match_and_execution_accuracy(dataset, parser_folder, tmp_path, capsys):
    figures = tmp_path / "eval.json"
    code, printed, _ = run_cli(capsys, "parser", "eval", "--questions", dataset / "val_balanced_questions.json",
                               "--parser", parser_folder, "--scene-graphs", dataset / "val_sceneGraphs.json",
                               "--json", figures)
    assert code == 0
    assert "exact match (ids ignored):" in printed and "execution accuracy (golden oracle):" in printed
    assert "with the golden programs 100.00%" in printed
    saved = json.loads(figures.read_text())
    assert saved["questions"] == len(load_questions(dataset / "val_balanced_questions.json"))
    assert f"{100 * saved['execution_accuracy']:.2f}%" in printed


def test_parser_apply_writes_questions_with_the_programs_read(dataset, parser_folder, tmp_path, capsys):
    out = tmp_path / "read_questions.json"
    code, printed, _ = run_cli(capsys, "parser", "apply", "--questions", dataset / "val_balanced_questions.json",
                               "--parser", parser_folder, "--out", out)
    assert code == 0 and "unreadable" in printed
    given, read = load_questions(dataset / "val_balanced_questions.json"), load_questions(out)
    assert list(given) == list(read)
    for question in read.values():
        assert question.extra["goldSemanticStr"] == given[question.id].semantic_str
        assert parse_program(question.semantic_str).to_semantic() == list(question.semantic)
    # the file is a questions file as any other: nablafol eval answers it
    code, printed, _ = run_cli(capsys, "eval", "--questions", out, "--scene-graphs", dataset / "val_sceneGraphs.json",
                               "--predictions", tmp_path / "predictions.json")
    assert code == 0 and "answered" in printed


def test_parser_apply_refuses_a_question_id_given_twice(dataset, parser_folder, tmp_path, capsys):
    """Found by fuzzing the command: the streamed questions do not see a top-level id given twice,
    and the writer's refusal came out as a traceback."""
    text = (dataset / "val_balanced_questions.json").read_text()
    first_id, record = next(iter(json.loads(text).items()))
    questions = tmp_path / "q.json"
    questions.write_text(text.rstrip().removesuffix("}") + f", {json.dumps(first_id)}: {json.dumps(record)}}}")
    out = tmp_path / "read.json"
    code, _, err = run_cli(capsys, "parser", "apply", "--questions", questions, "--parser", parser_folder, "--out", out)
    one_line_error(code, err)
    assert str(questions) in err and f"question {first_id}" in err and "appears twice" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.json"]


def test_eval_with_a_parser_answers_the_programs_it_reads(dataset, parser_folder, tmp_path, capsys):
    """`eval --parser P` gives the predictions of `parser apply` then `eval`; a question the parser
    cannot read is a listed skip ("unreadable question"), and the journal knows the parser."""
    import dataclasses
    from nablafol.data import write_questions
    given = list(load_questions(dataset / "val_balanced_questions.json").values())
    given[0] = dataclasses.replace(given[0], question="?!")  # no words: unreadable
    questions = tmp_path / "questions.json"
    write_questions(questions, given)
    sg = dataset / "val_sceneGraphs.json"
    code, printed, _ = run_cli(capsys, "eval", "--questions", questions, "--scene-graphs", sg, "--parser",
                               parser_folder, "--predictions", tmp_path / "with_parser.json")
    assert code == 0 and "unreadable question" in printed
    skipped = json.loads((tmp_path / "with_parser.skipped.json").read_text())
    assert {"questionId": given[0].id, "reason": "unreadable question",
            "detail": "cannot read the question '?!': it has no words"} in skipped
    run_cli(capsys, "parser", "apply", "--questions", questions, "--parser", parser_folder, "--out", tmp_path / "read.json")
    code, _, _ = run_cli(capsys, "eval", "--questions", tmp_path / "read.json", "--scene-graphs", sg,
                         "--predictions", tmp_path / "applied.json")
    assert code == 0
    with_parser = json.loads((tmp_path / "with_parser.json").read_text())
    assert with_parser and with_parser == json.loads((tmp_path / "applied.json").read_text())


def test_eval_with_a_parser_refuses_cric_questions(parser_folder, tmp_path, capsys):
    cric = "tests/fixtures/cric"
    code, _, err = run_cli(capsys, "eval", "--questions", f"{cric}/val_questions.json", "--scene-graphs",
                           f"{cric}/scene_graphs.json", "--knowledge", f"{cric}/knowledge_graph.json", "--parser",
                           parser_folder, "--predictions", tmp_path / "p.json")
    one_line_error(code, err)
    assert "a semantic parser writes GQA programs" in err


def test_answer_prints_the_program_formula_answer_candidates_and_grounding(dataset, parser_folder, capsys):
    question = simple_questions(dataset / "val_balanced_questions.json")[0]
    args = ["answer", "--parser", parser_folder, "--scene-graphs", dataset / "val_sceneGraphs.json",
            "--image", question.image_id, question.question]
    code, printed, _ = run_cli(capsys, *args)
    assert code == 0
    for label in ("program:", "FOL:", "answer:", "top:", "grounding (attention >= 0.5):"):
        assert label in printed
    code, printed, _ = run_cli(capsys, *args, "--json")
    reply = json.loads(printed)
    assert code == 0 and reply["imageId"] == question.image_id and reply["program"] == \
        load_parser(parser_folder).parse(question.question).text
    assert reply["answer"] == reply["candidates"][0]["answer"]
    assert "explanation" not in reply


def test_answer_explain_says_why(dataset, parser_folder, capsys):
    """``--explain``: each step's most attended objects and the facts whose removal moves the answer
    most, printed and in the JSON, the facts' effects those of leaving each out and answering again."""
    from nablafol.asking import Asker
    from nablafol.asking.execution import golden_perception
    question = simple_questions(dataset / "val_balanced_questions.json")[0]
    args = ["answer", "--parser", parser_folder, "--scene-graph", dataset / "val_sceneGraphs.json",
            "--image", question.image_id, question.question, "--explain", "2"]
    code, printed, _ = run_cli(capsys, *args)
    assert code == 0 and "why " in printed and "facts moving it most (leaving each fact out):" in printed
    code, printed, _ = run_cli(capsys, *args, "--json")
    why = json.loads(printed)["explanation"]
    assert code == 0 and why["method"] == "remove" and len(why["facts"]) <= 2 and why["steps"]
    reply = Asker(load_parser(parser_folder), golden_perception(dataset / "val_sceneGraphs.json")).ask(
        question.image_id, question.question, explain=2)
    assert reply.explanation.answer == reply.answer and reply.explanation.to_dict() == why


def test_answer_with_features_and_a_trained_model(dataset, parser_folder, tmp_path, capsys):
    ontology = Ontology.from_folder(dataset / "ontology")
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology), feature_dim=8, hidden_dim=8)
    save_model(tmp_path / "model", model, extra={"ontology": ontology.to_data()})
    question = simple_questions(dataset / "val_balanced_questions.json")[0]
    code, printed, err = run_cli(capsys, "answer", "--parser", parser_folder, "--features", dataset / "features",
                                 "--model", tmp_path / "model", "--image", question.image_id, question.question,
                                 "--json")
    assert code == 0, err
    reply = json.loads(printed)
    assert set(reply["attention"]) <= {str(i) for i in range(100)} | {"scene"}  # feature rows, not ids
    assert 0.0 <= reply["probability"] <= 1.0


def test_answer_a_question_it_cannot_read_or_answer_is_one_line(dataset, parser_folder, tmp_path, capsys):
    image = next(iter(json.loads((dataset / "val_sceneGraphs.json").read_text())))
    code, printed, err = run_cli(capsys, "answer", "--parser", parser_folder, "--scene-graphs",
                                 dataset / "val_sceneGraphs.json", "--image", image, "?!")
    one_line_error(code, err)
    assert "cannot read the question '?!': it has no words" in err and printed == ""
    # read, but a trained model never learned a blorptangle (the scene graphs' open vocabulary answers it)
    ontology = Ontology.from_folder(dataset / "ontology")
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology), feature_dim=8, hidden_dim=8)
    save_model(tmp_path / "model", model, extra={"ontology": ontology.to_data()})
    code, printed, err = run_cli(capsys, "answer", "--parser", parser_folder, "--features", dataset / "features",
                                 "--model", tmp_path / "model", "--image", image, "Is the blorptangle red?")
    one_line_error(code, err)
    assert "concept not learned" in err and "blorptangle" in err and printed == ""


def test_unusable_inputs_are_one_line(dataset, parser_folder, tmp_path, capsys):
    sg = dataset / "val_sceneGraphs.json"
    code, _, err = run_cli(capsys, "answer", "--parser", tmp_path / "none", "--scene-graphs", sg, "--image", "1", "Is it?")
    one_line_error(code, err)
    assert "no such folder" in err
    code, _, err = run_cli(capsys, "answer", "--parser", parser_folder, "--scene-graphs", sg, "--model", tmp_path,
                           "--image", "1", "Is it?")
    one_line_error(code, err)
    assert "--model goes with --features" in err
    code, _, err = run_cli(capsys, "answer", "--parser", parser_folder, "--scene-graphs", sg, "--image", "nowhere",
                           "Is the cup red?")
    one_line_error(code, err)
    assert "no scene for image 'nowhere'" in err
    code, _, err = run_cli(capsys, "parser", "eval", "--questions", tmp_path / "missing.json", "--parser", parser_folder)
    one_line_error(code, err)
    code, _, err = run_cli(capsys, "parser", "train", "--questions", sg, "--out", tmp_path / "p")
    one_line_error(code, err)


def test_answer_refuses_a_reading_below_min_probability_with_the_closest_guess(dataset, parser_folder, capsys):
    question = simple_questions(dataset / "val_balanced_questions.json")[0]
    code, printed, err = run_cli(capsys, "answer", "--parser", parser_folder, "--scene-graphs",
                                 dataset / "val_sceneGraphs.json", "--image", question.image_id, question.question,
                                 "--min-probability", "1")
    one_line_error(code, err)
    assert "the closest program (select: " in err and "below 1" in err and printed == ""
