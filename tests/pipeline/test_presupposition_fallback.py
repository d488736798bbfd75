"""An open question whose presupposed objects are none falls back to its relate's category widened
to every class (compiler.presupposition), checked against crisp evaluation of random scenes."""
from hypothesis import given
from hypothesis import strategies as st

from nablafol.data import question_from_record, scene_graph_from_record
from nablafol.dsl import Ontology
from nablafol.pipeline.answering import Answerer
from nablafol.pipeline.perception import SceneGraphPerception

GQA = Ontology.gqa()
NAMES = ["man", "train car", "road", "street", "bus", "sky", "chair"]  # road, street: places; bus: a vehicle
RELATIONS = ["on", "near"]


@st.composite
def scenes(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5))
    relations = draw(st.lists(st.tuples(st.integers(0, len(names) - 1), st.sampled_from(RELATIONS),
                                        st.integers(0, len(names) - 1)), max_size=6))
    return names, sorted(set((s, r, o) for s, r, o in relations if s != o))


def _graph(names, relations):
    return scene_graph_from_record("g", {"width": 900, "height": 400, "objects": {
        str(i): {"name": n, "x": 10 + 120 * i, "y": 50, "w": 100, "h": 80, "attributes": [],
                 "relations": [{"name": r, "object": str(o)} for s, r, o in relations if s == i]}
        for i, n in enumerate(names)}})


@given(scenes(), st.sampled_from(RELATIONS), st.sampled_from(["place", "vehicle"]), st.booleans())
def test_a_fallback_answers_what_the_relation_alone_gives_and_only_when_the_category_gives_nothing(
        scene, relation, category, keep):
    names, relations = scene
    line = f"select: man->relate: {category},{relation},o [0]->query: name [1]"
    exist = f"select: man->relate: {category},{relation},o [0]->exist: ? [1]"
    questions = [question_from_record(k, {"imageId": "g", "semanticStr": s}) for k, s in (("q", line), ("e", exist))]
    answerer = Answerer(SceneGraphPerception({"g": _graph(names, relations)}), keep_outcomes=keep)
    query, exists = answerer.answer_chunk(questions)
    # crisp truth: the objects in the relation with a man, and those of them under the category
    related = {names[o] for s, r, o in relations if r == relation and names[s] == "man"}
    under = {n for n in related if n in GQA.classes_under(category)}
    assert exists.prediction == ("yes" if under else "no") and not exists.fallback
    if under:
        assert (query.prediction in under, query.fallback, query.guessed) == (True, False, False)
    elif related:
        assert (query.prediction in related, query.fallback, query.guessed) == (True, True, False)
    else:
        assert (query.fallback, query.guessed) == (False, True)
