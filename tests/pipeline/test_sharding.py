"""The rules that split a run: images into training shards, steps into shard parts, evaluation
chunks into shards; each checked against a brute-force statement of what it must give."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nablafol.pipeline.distributed import Launch
from nablafol.pipeline.sharding import EvalShard, ImagePlan, ShardingError, StepPlan, played_shards

image_counts = st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3), st.integers(1, 30), min_size=1,
                               max_size=40)


@given(image_counts, st.integers(1, 8), st.randoms(use_true_random=False))
def test_images_are_cut_into_contiguous_blocks_of_about_equal_questions(counts, shards, random):
    positions = {image: (random.randrange(3), random.randrange(100)) for image in counts}
    plan = ImagePlan.cut(counts, positions.__getitem__, shards)
    order = sorted(counts, key=lambda image: (positions[image], image))
    owners = [plan.shard_of(image) for image in order]
    assert owners == sorted(owners), "a shard is one contiguous block of the features' order"
    total, biggest = sum(counts.values()), max(counts.values())
    for shard in range(shards):
        held = sum(counts[image] for image in order if plan.shard_of(image) == shard)
        assert abs(held - total / shards) <= biggest + 1e-9  # within one image of an equal share


@given(st.integers(1, 12), st.integers(1, 12))
def test_processes_play_contiguous_blocks_covering_every_shard_once(world, shards):
    if world > shards:
        with pytest.raises(ShardingError):
            played_shards(0, world, shards)
        return
    blocks = [played_shards(rank, world, shards) for rank in range(world)]
    assert [s for block in blocks for s in block] == list(range(shards))
    assert max(map(len, blocks)) - min(map(len, blocks)) <= 1 and min(map(len, blocks)) >= 1


@given(st.lists(st.integers(0, 9), min_size=1, max_size=5), st.integers(1, 4), st.integers(0, 3), st.integers(0, 3))
def test_every_step_takes_as_many_questions_from_every_shard_and_covers_each_pool(sizes, per_shard, seed, epoch):
    shards = len(sizes)
    if 0 in sizes and any(sizes):
        with pytest.raises(ShardingError):
            _plan(sizes, per_shard, seed, epoch)
        return
    pools, plan = _plan(sizes, per_shard, seed, epoch)
    steps = [plan[t] for t in range(len(plan))]
    for parts in steps:
        assert len({len(part) for part in parts}) == 1 and len(parts[0]) <= per_shard
    longest = max(sizes)
    assert sum(len(parts[0]) for parts in steps) == longest and plan.examples == longest * shards
    for shard, pool in pools.items():
        taken = np.concatenate([parts[shard] for parts in steps]) if steps else np.zeros(0, int)
        # a shard gives its whole pool, once, then starts its order again to reach the longest
        assert sorted(taken[:len(pool)].tolist()) == sorted(pool.tolist())
        assert taken.tolist() == [taken[i % max(len(pool), 1)] for i in range(len(taken))]


def _plan(sizes, per_shard, seed, epoch):
    pools, start = {}, 0
    for shard, size in enumerate(sizes):
        pools[shard] = np.arange(start, start + size)
        start += size
    return pools, StepPlan(pools, len(sizes), per_shard * len(sizes), seed, epoch, max(sizes))


def test_one_shard_draws_the_order_an_unsplit_run_drew():
    pool = np.array([4, 7, 9, 12, 15])
    plan = StepPlan({0: pool}, shards=1, batch=2, seed=3, epoch=1, longest=5)
    order = pool[np.random.default_rng([3, 1]).permutation(5)]
    assert [plan[t][0].tolist() for t in range(len(plan))] == [order[0:2].tolist(), order[2:4].tolist(), [order[4]]]


@given(st.integers(0, 60), st.integers(1, 7), st.integers(1, 5))
def test_eval_shards_partition_the_stream_by_chunk_and_interleave_back(n, chunk, count):
    questions = list(range(n))
    shards = [list(EvalShard(i, count).take(iter(questions), chunk)) for i in range(count)]
    chunks = [[q[i:i + chunk] for i in range(0, len(q), chunk)] for q in shards]  # as answer_stream chunks them
    merged, k = [], 0
    while chunks[k % count]:
        merged.extend(chunks[k % count].pop(0))
        k += 1
    assert merged == questions and not any(chunks)


@pytest.mark.parametrize("text", ["2/2", "-1/3", "a/b", "3", "1/0"])
def test_a_shard_that_does_not_exist_is_refused(text):
    with pytest.raises(ShardingError):
        EvalShard.parse(text)


@pytest.mark.parametrize("environ", [{"RANK": "2", "WORLD_SIZE": "2"}, {"WORLD_SIZE": "two"}, {"WORLD_SIZE": "0"}])
def test_a_broken_launch_environment_is_refused_in_one_line(environ):
    with pytest.raises(ShardingError) as error:
        Launch.from_environment(environ)
    assert len(str(error.value).splitlines()) == 1
