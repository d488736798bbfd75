"""A model's vocabulary grows from the data and is recorded; a concept it never learned makes a
listed skip `concept not learned: X` (issue 16)."""
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from nablafol.compiler import Compiler
from nablafol.compiler.vocabulary import ConceptInventory, known_values
from nablafol.data import load_questions, question_from_record
from nablafol.dsl import Ontology
from nablafol.ir import Predicate
from nablafol.neural import ConceptVocabulary, load_model, save_model
from nablafol.pipeline.answering import Answerer
from nablafol.pipeline.evaluation import answer_all
from nablafol.pipeline.perception import FeaturePerception

from neural_helpers import TINY_ONTOLOGY, random_batch, small_model

REAL = Path(__file__).parents[1] / "fixtures" / "real_gqa"


def test_the_vocabulary_grows_with_every_concept_the_data_names():
    questions = load_questions(REAL / "gqa_ood_questions.sample.json")
    inventory = ConceptInventory().update(questions.values())
    grown = Ontology.gqa().joined(known_values(inventory))
    vocabulary = ConceptVocabulary.from_ontology(grown)
    compiler = Compiler(grown)
    for question in questions.values():
        program = compiler.compile_semantic(list(question.semantic)).program
        unknown = [p for p in program.predicates() if not vocabulary.knows(p)]
        assert unknown == [], (question.id, unknown)
    plain = ConceptVocabulary.from_ontology(Ontology.gqa())
    assert not plain.knows(Predicate("long sleeved", 1, "attr")) and vocabulary.knows(Predicate("long sleeved", 1, "attr"))


def test_pronouns_the_data_names_join_a_vocabulary_that_lacked_them():
    assert not TINY_ONTOLOGY.pronouns
    grown = TINY_ONTOLOGY.joined({"name": ["she", "chair", "stool"]})
    vocabulary = ConceptVocabulary.from_ontology(grown)
    assert grown.pronouns == {"she"} and grown.uncategorized == {"stool"}
    assert vocabulary.knows(Predicate("she", 1, "name")) and vocabulary.knows(Predicate("stool", 1, "class"))
    assert not vocabulary.knows(Predicate("he", 1, "name"))


def test_the_model_folder_records_the_grown_vocabulary_and_ontology(tmp_path):
    grown = TINY_ONTOLOGY.joined({"name": ["stool"], "material": ["granite"], None: ["shiny"], "relation": ["atop"]})
    model = small_model(vocabulary=ConceptVocabulary.from_ontology(grown))
    save_model(tmp_path, model, extra={"ontology": grown.to_data()})
    loaded, vocabulary, extra = load_model(tmp_path)
    again = Ontology.from_data(**extra["ontology"])
    assert vocabulary == model.vocabulary and again.uncategorized == {"stool"}
    assert again.values_of("material") == {"granite"} and "shiny" in again.untyped and again.is_relation("atop")


class _Model(FeaturePerception):
    """A trained model's perception over random features instead of a feature store."""

    def __init__(self, model):
        super().__init__(None, model, TINY_ONTOLOGY)

    def has_image(self, image_id):
        return True

    def object_count(self, image_id):
        return 3

    def oracle(self, image_ids):
        oracle = self.model.bind(random_batch([3] * len(image_ids)))
        oracle.object_ids = lambda b: ("0", "1", "2", "scene")
        return oracle


@given(st.sampled_from(["unicorn", "stool", "he"]))
def test_a_concept_never_learned_is_a_listed_skip(word):
    perception = _Model(small_model())
    questions = [question_from_record(q, {"imageId": "1", "semanticStr": line, "answer": "no"}) for q, line in (
        ("learned", "select: chair->filter color: red [0]->exist: ? [1]"),
        ("new name", f"select: {word}->exist: ? [0]"),
        ("new value", "select: chair->filter material: granite [0]->exist: ? [1]"))]
    run = answer_all(questions, Answerer(perception, compiler=Compiler(TINY_ONTOLOGY)))
    assert set(run.predictions) == {"learned"}
    assert {(s.question_id, s.reason, s.detail) for s in run.skips} == {
        ("new name", "concept not learned", f"concept not learned: name {word!r}"),
        ("new value", "concept not learned", "concept not learned: attr 'granite'")}
