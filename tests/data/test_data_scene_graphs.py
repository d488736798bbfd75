"""Scene graphs, plain and probabilistic: fixtures, decisions, bad input, round trip."""
from __future__ import annotations

import copy
import sys
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.data import (scene_graph_from_record, SceneGraph, SceneGraphTexts, SceneObject, SceneRelation, iter_scene_graphs,
                           load_scene_graphs, write_scene_graphs)
from nablafol.errors import InputFileError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
PLAIN = FIXTURES / "val_sceneGraphs.json"
PREDICTED = FIXTURES / "predicted_sceneGraphs.json"


def raw(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write(tmp_path: Path, graphs: dict, name: str = "sg.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(graphs), encoding="utf-8")
    return path


def test_plain_fixture_reads_as_certain_facts():
    graphs = load_scene_graphs(PLAIN)
    assert list(graphs) == ["2354786", "n161313", "2417468"]
    street = graphs["2354786"]
    assert (street.width, street.height, street.location, street.weather) == (500, 333, None, None)
    assert street.object_ids == ("3817110", "3817112", "3817113", "3817114", "3817115")
    man = street.find("3817110")
    assert man.name == "man" and man.names == {"man": 1.0}
    assert (man.x, man.y, man.w, man.h) == (190, 60, 90, 200)
    assert man.attributes == {"young": 1.0}
    assert man.relations == (SceneRelation("riding", "3817112"), SceneRelation("wearing", "3817113"),
                             SceneRelation("to the left of", "3817114"))
    assert graphs["2417468"].location == "beach" and graphs["2417468"].weather == "sunny"
    assert all(graph.is_plain for graph in graphs.values())
    assert street.find("no such id") is None


def test_probabilistic_fixture_keeps_every_probability_and_the_label():
    graphs = load_scene_graphs(PREDICTED)
    street = graphs["2354786"]
    man, horse, helmet, fence = street.objects
    assert man.name == "man" and man.names == {"man": 0.82, "person": 0.11, "boy": 0.04}
    assert horse.name == "horse"  # names only: the label is the most probable name
    assert horse.attributes == {"brown": 0.93, "white": 0.05}
    assert helmet.is_plain and not man.is_plain and not street.is_plain
    assert [r.p for r in man.relations] == [0.91, 0.77, 0.95]
    assert helmet.relations == (SceneRelation("on", "3817110", 1.0),)  # "p" defaults to 1
    beach = graphs["2417468"]
    surfer = beach.find("1589341")
    assert surfer.name == "man" and surfer.names["person"] == 0.6  # names need not sum to 1
    assert [(r.name, r.p) for r in surfer.relations] == [("holding", 0.88), ("wearing", 0.5),
                                                         ("holding", 0.3)]  # kept as listed
    assert beach.find("1589342").extra == {"score": 0.93}
    assert beach.find("1589342").attributes == {}


def test_a_plain_graph_is_the_probabilistic_graph_whose_facts_all_have_p_1(tmp_path):
    explicit = copy.deepcopy(raw(PLAIN))
    for graph in explicit.values():
        for obj in graph["objects"].values():
            obj["names"] = {obj.pop("name"): 1}
            obj["attributes"] = {value: 1.0 for value in obj["attributes"]}
            for relation in obj["relations"]:
                relation["p"] = 1
    assert load_scene_graphs(write(tmp_path, explicit)) == load_scene_graphs(PLAIN)


def test_streaming_equals_loading_and_plain_records_are_written_back_verbatim(tmp_path):
    graphs = list(iter_scene_graphs(PREDICTED))
    assert graphs == list(load_scene_graphs(PREDICTED).values())
    for image_id, record in raw(PLAIN).items():
        assert load_scene_graphs(PLAIN)[image_id].to_record() == record


def test_a_tie_in_names_is_labelled_with_the_first_listed():
    assert SceneObject("1", {"cat": 0.5, "dog": 0.5}, 0, 0, 1, 1).name == "cat"
    with pytest.raises(ValueError, match="name 'cow' is not among names"):
        SceneObject("1", {"cat": 0.5}, 0, 0, 1, 1, name="cow")


def base_graph() -> dict:
    return {"2354786": {"width": 500, "height": 333, "objects": {
        "1": {"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"],
              "relations": [{"name": "near", "object": "2"}]},
        "2": {"name": "dog", "x": 5, "y": 6, "w": 7, "h": 8, "attributes": [], "relations": []}}}}


def broken(where: str, change) -> dict:
    graphs = base_graph()
    target = graphs["2354786"] if where == "graph" else graphs["2354786"]["objects"]["1"]
    change(target)
    return graphs


BAD_GRAPHS = [
    (broken("object", lambda o: o.update(names={"man": 1.5})), "image 2354786, object 1",
     "names['man'] must be a probability in [0, 1], found 1.5"),
    (broken("object", lambda o: o.update(attributes={"tall": -0.1})), "image 2354786, object 1",
     "attributes['tall'] must be a probability in [0, 1], found -0.1"),
    (broken("object", lambda o: o.update(attributes={"tall": "high"})), "image 2354786, object 1",
     "attributes['tall'] must be a probability (a number in [0, 1]), found a string"),
    (broken("object", lambda o: o["relations"][0].update(p=float("nan"))), "image 2354786, object 1",
     "relations[0].p must be a probability in [0, 1], found nan"),
    (broken("object", lambda o: o["relations"][0].update(p=True)), "image 2354786, object 1",
     "relations[0].p must be a probability (a number in [0, 1]), found a boolean"),
    (broken("object", lambda o: o.update(names={"cat": 0.9})), "image 2354786, object 1",
     "name 'man' is not among names ['cat']"),
    (broken("object", lambda o: o.update(names={})), "image 2354786, object 1", "names is empty"),
    (broken("object", lambda o: o.pop("name")), "image 2354786, object 1", "has neither name nor names"),
    (broken("object", lambda o: o["relations"][0].update(object="99")), "image 2354786, object 1",
     "relation 'near' points to object 99, which is not an object of this image"),
    (broken("object", lambda o: o["relations"][0].pop("object")), "image 2354786, object 1",
     "relations[0].object is missing"),
    # a bad relation after good ones of the same look (read on the fast path until then)
    (broken("object", lambda o: o["relations"].extend([{"name": "near", "object": "2"}, {"name": 5, "object": "2"}])),
     "image 2354786, object 1", "relations[2].name must be a string, found a number"),
    (broken("object", lambda o: o["relations"].extend([{"name": "near", "object": "2"}, ["near", "2"]])),
     "image 2354786, object 1", "relations[2] must be a JSON object, found a list"),
    (broken("object", lambda o: o["relations"].extend([{"name": "near", "object": "2"}, {"name": ["near"], "object": "2"}])),
     "image 2354786, object 1", "relations[2].name must be a string, found a list"),
    (broken("object", lambda o: o["relations"].extend([{"name": "near", "object": "2"}, {"name": "near", "object": 2}])),
     "image 2354786, object 1", "relations[2].object must be a string, found a number"),
    (broken("object", lambda o: o.update(x="12")), "image 2354786, object 1",
     "x must be a number, found a string"),
    (broken("object", lambda o: o.pop("h")), "image 2354786, object 1", "h is missing"),
    (broken("object", lambda o: o.update(w=-3)), "image 2354786, object 1", "w must be >= 0, found -3"),
    (broken("object", lambda o: o.update(y=float("inf"))), "image 2354786, object 1",
     "y must be a finite number, found inf"),
    (broken("object", lambda o: o.update(attributes="tall")), "image 2354786, object 1",
     "attributes must be a list or {value: p}, found a string"),
    (broken("object", lambda o: o.update(relations={"near": "2"})), "image 2354786, object 1",
     'relations must be a list of {"name", "object"} objects'),
    (broken("graph", lambda g: g.update(width=0)), "image 2354786", "width must be > 0, found 0"),
    (broken("graph", lambda g: g.pop("objects")), "image 2354786", "objects is missing"),
    (broken("graph", lambda g: g.update(objects=[])), "image 2354786",
     "objects must be a JSON object, found a list"),
    (broken("graph", lambda g: g.update(weather=3)), "image 2354786",
     "weather must be a string, found a number"),
]


@pytest.mark.parametrize("graphs, location, problem", BAD_GRAPHS)
def test_bad_graphs_name_file_image_object_and_problem(tmp_path, graphs, location, problem):
    path = write(tmp_path, graphs)  # json.dumps writes NaN and Infinity literals, as some tools do
    with pytest.raises(InputFileError) as caught:
        load_scene_graphs(path)
    assert str(caught.value) == f"{path} ({location}): {problem}"


@pytest.mark.parametrize("graphs, location, problem", BAD_GRAPHS)
def test_scenes_kept_as_text_report_the_same_problems_when_read(tmp_path, graphs, location, problem):
    # the lazy reading checks a scene's content when it is first asked for, with the same words
    path = write(tmp_path, graphs)
    with pytest.raises(InputFileError) as caught:
        SceneGraphTexts(path)["2354786"]
    assert str(caught.value) == f"{path} ({location}): {problem}"


def test_scenes_kept_as_text_read_as_the_loaded_ones():
    for name in ("val_sceneGraphs.json", "predicted_sceneGraphs.json"):  # plain and probabilistic
        path = FIXTURES / name
        loaded, texts = load_scene_graphs(path), SceneGraphTexts(path, cache_size=2)
        assert list(texts) == list(loaded) and len(texts) == len(loaded)
        for image_id, graph in loaded.items():
            assert texts[image_id] == graph and texts.object_count(image_id) == len(graph.objects)
        assert len(texts._cache) == 2 and "nope" not in texts


def test_base_graph_itself_is_valid(tmp_path):
    assert load_scene_graphs(write(tmp_path, base_graph()))["2354786"].find("1").relations[0].p == 1.0


@pytest.mark.parametrize("read", [load_scene_graphs, SceneGraphTexts])  # the lazy reading refuses on opening
def test_unusable_files_and_duplicate_images(tmp_path, read):
    path = tmp_path / "list.json"
    path.write_text("[]")
    with pytest.raises(InputFileError, match=r"found a list"):
        read(path)
    path.write_text('{"1": ' + json.dumps(base_graph()["2354786"]) + ', "1": {}}')
    with pytest.raises(InputFileError, match=r"list\.json \(image 1\): appears twice"):
        read(path)
    path.write_text('{"1": ' + json.dumps(base_graph()["2354786"]) + ', "2": {"objects": ')
    with pytest.raises(InputFileError, match=r"not valid JSON"):
        read(path)


names = st.text(st.sampled_from("abcdefgh "), min_size=1, max_size=6)
probabilities = st.floats(0, 1) | st.just(1.0)
coordinates = st.integers(0, 2000) | st.floats(0, 2000)


@st.composite
def scene_graphs(draw) -> SceneGraph:
    ids = draw(st.lists(st.text("0123456789", min_size=1, max_size=7), unique=True, max_size=5))
    objects = []
    for object_id in ids:
        name_distribution = draw(st.dictionaries(names, probabilities, min_size=1, max_size=3))
        label = draw(st.sampled_from(sorted(name_distribution)))
        relations = tuple(draw(st.lists(st.builds(SceneRelation, names, st.sampled_from(ids),
                                                  probabilities), max_size=3)))
        objects.append(SceneObject(
            object_id, name_distribution, draw(coordinates), draw(coordinates), draw(coordinates),
            draw(coordinates), draw(st.dictionaries(names, probabilities, max_size=3)), relations,
            name=label))
    return SceneGraph(draw(st.text("n0123456789", min_size=1, max_size=8)),
                      draw(st.integers(1, 2000)), draw(st.integers(1, 2000)), tuple(objects),
                      draw(st.none() | names), draw(st.none() | names))


@pytest.mark.slow
@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graphs=st.lists(scene_graphs(), max_size=3, unique_by=lambda g: g.image_id))
def test_write_then_read_gives_the_same_graphs(tmp_path, graphs):
    path = tmp_path / "round_sceneGraphs.json"
    write_scene_graphs(path, graphs)
    assert list(iter_scene_graphs(path)) == graphs


class _NotPlainDict(dict):
    """A record the fast path of GQA's plain objects does not take (it reads only exact dicts)."""


_INTEGER = st.one_of(st.integers(-2, 9), st.integers(2 ** 53 - 1, 2 ** 53 + 1))
_RELATIONS = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["near", "on"]), "object": st.sampled_from(["1", "2"])},
                                            optional={"p": st.floats(0, 1)}), max_size=3)
_WILD = st.one_of(_INTEGER, st.floats(allow_nan=True), st.text(max_size=2), st.booleans(), st.none(),
                  st.lists(st.integers(), min_size=1, max_size=1), st.just({"man": 1.0}))


@pytest.mark.slow
@settings(max_examples=examples(200), deadline=None)
@given(st.fixed_dictionaries(
    {"name": st.sampled_from(["man", "cup"]), "x": _INTEGER, "y": _INTEGER, "w": _INTEGER, "h": _INTEGER,
     "attributes": st.lists(st.sampled_from(["tall", "red"]), max_size=3), "relations": _RELATIONS}),
    st.lists(st.tuples(st.sampled_from(["name", "x", "y", "w", "h", "attributes", "relations", "names", "other"]),
                       _WILD), max_size=1))
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []},
         [("relations", [{"name": "near", "object": "2"}, {"name": "on", "object": "2"}, {"name": "near", "object": "2"},
                         {"name": "near", "object": 2}])])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []},
         [("relations", [{"name": "near", "object": "2"}, {"name": "on", "object": "1"}, {"name": "near", "object": "2"}])])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []}, [("attributes", [5])])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []}, [("w", -1)])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []}, [("x", True)])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []}, [("name", 5)])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []}, [("relations", "near")])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []}, [("other", 1)])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []}, [("y", 2.5)])
@example({"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall"], "relations": []}, [("h", 2 ** 60)])
def test_plain_objects_read_on_the_fast_path_as_the_full_check_reads_them(record, spoilt):
    record.update(spoilt)  # GQA's plain object, or one field changed (or added) to anything
    # GQA's own objects skip the field-by-field check: whatever either reading gives (an
    # object, or the same one-line refusal), the other gives too
    def read(obj):
        graph = {"width": 10, "height": 10, "objects": {"1": obj, "2": {"name": "cup", "x": 0, "y": 0, "w": 1, "h": 1}}}
        try:
            return scene_graph_from_record("7", graph)
        except InputFileError as e:
            return str(e)
    def full(obj):  # every dict a _NotPlainDict: the object and each of its relations take the full check
        obj = _NotPlainDict(obj)
        if isinstance(obj.get("relations"), list):
            obj["relations"] = [_NotPlainDict(r) if type(r) is dict else r for r in obj["relations"]]
        return obj
    assert read(dict(record)) == read(full(record))


def test_a_plain_gqa_object_takes_the_fast_path_and_keeps_every_fact():
    record = {"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["tall", "tall", "old"],
              "relations": [{"name": "near", "object": "2"}]}
    fast = scene_graph_from_record("7", {"width": 9, "height": 9, "objects": {"1": record, "2": dict(record, relations=[])}})
    full = scene_graph_from_record("7", {"width": 9, "height": 9, "objects": {"1": _NotPlainDict(record),
                                                                            "2": dict(record, relations=[])}})
    assert fast == full and fast.objects[0].attributes == {"tall": 1.0, "old": 1.0}


def test_a_scene_holds_one_relation_per_plain_pair_its_strings_interned():
    # memory at GQA's size: subjects listing the same (name, object) share one SceneRelation
    near = "".join(["ne", "ar"])  # built at run time: not the compiler's interned constant
    objects = {"1": {"name": "man", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": [],
                     "relations": [{"name": near, "object": "3"}, {"name": "on", "object": "3"}]},
               "2": {"name": "cup", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": [],
                     "relations": [{"name": near, "object": "3"}, {"name": "near", "object": "1"}]},
               "3": {"name": "table", "x": 0, "y": 0, "w": 9, "h": 9, "attributes": [], "relations": []}}
    graph = scene_graph_from_record("7", {"width": 9, "height": 9, "objects": objects})
    first, second = graph.objects[0].relations, graph.objects[1].relations
    assert first[0] is second[0] and first[0] == SceneRelation("near", "3")
    assert len({id(r) for obj in graph.objects for r in obj.relations}) == 3
    assert all(sys.intern(r.name) is r.name and sys.intern(r.object_id) is r.object_id for r in first + second)
