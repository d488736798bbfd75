"""Questions in words answered through the pipeline: a parser's exact match and execution
accuracy (checked against answering each program by hand), and one question about one image."""
import pytest

from nablafol.asking import Asker, UnanswerableQuestionError, evaluate_parser
from nablafol.asking.execution import Outcome, answer_questions, golden_perception
from nablafol.data import load_scene_graphs
from nablafol.dsl import parse_program
from nablafol.scoring import vocabulary_match
from nablafol.semantic_parser import UnreadableQuestionError, same_program

from conftest import simple_questions

# its fixtures train or generate for the whole module: among the longest of a measured run
pytestmark = pytest.mark.slow


def test_exact_match_and_execution_accuracy_count_what_they_say(trained, dataset):
    parser, _ = trained
    questions = simple_questions(dataset / "val_balanced_questions.json")
    graphs = load_scene_graphs(dataset / "val_sceneGraphs.json")
    result = evaluate_parser(parser, questions, scene_graphs=graphs)
    assert result.questions == result.with_program == result.executed == len(questions)
    # by hand: each program read, compared and answered one question at a time
    perception = golden_perception(graphs)
    exact = correct = 0
    for question in questions:
        read = parser.parse(question.question)
        exact += same_program(read.program, parse_program(question.semantic_str))
        asked = type(question)(question.id, question.image_id, question.question, question.answer,
                               semantic_str=read.text)
        (outcome,) = answer_questions(perception, [asked])
        correct += isinstance(outcome, Outcome) and vocabulary_match(outcome.prediction, question.answer)
    assert (result.exact, result.correct) == (exact, correct)
    assert result.golden_correct == len(questions)  # generated data: the golden programs answer everything
    assert result.correct >= result.exact * 0.9  # a program read exactly is answered as the gold one is
    assert set(result.to_dict()) >= {"exact_match", "execution_accuracy", "golden_accuracy", "mistakes"}


def test_without_scene_graphs_only_exact_match_is_reported(trained, dataset):
    parser, _ = trained
    result = evaluate_parser(parser, simple_questions(dataset / "val_balanced_questions.json")[:10])
    assert result.executed is None and result.execution_accuracy is None and result.with_program == 10
    assert not any("execution" in line for line in result.lines())


def test_asking_one_question_about_one_image(trained, dataset):
    parser, _ = trained
    graphs = load_scene_graphs(dataset / "val_sceneGraphs.json")
    question = next(q for q in simple_questions(dataset / "val_balanced_questions.json")
                    if parse_program(q.semantic_str).steps[1].operation == "query")
    reply = Asker(parser, golden_perception(graphs), top=3).ask(question.image_id, question.question)
    assert reply.program_text == parser.parse(question.question).text
    assert reply.formula and reply.answer == reply.candidates[0][0]
    assert reply.probability == dict(reply.candidates)[reply.answer] and len(reply.candidates) <= 3
    ids = {o.id: o.name for o in graphs[question.image_id].objects}
    for object_id, name, attention in reply.grounding:
        assert attention >= 0.5 and (object_id == "scene" or ids[object_id] == name)
    assert set(reply.attention) <= set(ids) | {"scene"}
    assert reply.to_dict()["program"] == reply.program_text and len(reply.lines()) == 6


def test_an_answer_without_evidence_says_it_is_a_guess(trained, dataset):
    """Asked the color of a thing the image does not hold, every candidate has probability 0: the
    reply still answers (the first candidate) but says it is a guess; a grounded answer does not."""
    parser, _ = trained
    graphs = load_scene_graphs(dataset / "val_sceneGraphs.json")
    asker = Asker(parser, golden_perception(graphs), top=3)
    image, graph = next(iter(graphs.items()))
    present = {o.name for o in graph.objects}
    absent = next(o.name for g in graphs.values() for o in g.objects if o.name not in present)
    missing = asker.ask(image, f"What color is the {absent}?")
    assert missing.program_text.startswith(f"select: {absent}->")
    assert missing.guessed and missing.probability == 0.0 and not any(p for _, p in missing.candidates)
    assert "a guess" in missing.lines()[3] and missing.to_dict()["guessed"] is True
    assert not missing.fallback and missing.to_dict()["presuppositionFallback"] is False  # a select is not widened
    there = asker.ask(image, f"Is there a {graph.objects[0].name}?")
    assert not there.guessed and "a guess" not in there.lines()[3]


def test_what_cannot_be_read_or_answered_is_one_clear_line(trained, dataset):
    parser, _ = trained
    graphs = load_scene_graphs(dataset / "val_sceneGraphs.json")
    image = next(iter(graphs))
    asker = Asker(parser, golden_perception(graphs))
    with pytest.raises(UnreadableQuestionError, match="no words"):
        asker.ask(image, "?!")
    with pytest.raises(UnanswerableQuestionError, match="no scene for image 'nowhere'"):
        asker.ask("nowhere", "Is the cup red?")
    # the open vocabulary (docs/compiling-gqa.md): a name no scene graph has is a predicate no object satisfies
    assert asker.ask(image, "Is the blorptangle red?").answer == "no"


def test_from_folders_needs_one_source_and_a_model_only_with_features(parser_folder, dataset):
    with pytest.raises(UnanswerableQuestionError):
        Asker.from_folders(parser_folder)
    with pytest.raises(UnanswerableQuestionError, match="need a trained model"):
        Asker.from_folders(parser_folder, features=dataset / "features")
    with pytest.raises(UnanswerableQuestionError, match="leave the model out"):
        Asker.from_folders(parser_folder, scene_graphs=dataset / "val_sceneGraphs.json", model=dataset)


def test_a_presupposition_fallback_says_so():
    from nablafol.asking.ask import Reply
    reply = Reply("What place is he on?", "1", "select: he->relate: place,on,o [0]->query: name [1]", None, 0.9,
                  "formula", "train car", 1.0, (("train car", 1.0),), (), fallback=True)
    assert "a presupposition fallback" in reply.lines()[3] and reply.to_dict()["presuppositionFallback"] is True
    from dataclasses import replace
    assert "presupposition" not in replace(reply, fallback=False).lines()[3]
