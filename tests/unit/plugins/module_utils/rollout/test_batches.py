# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/batches.py: the canary, then batches spread across Availability Zones."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings, strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.batches import next_batch, plan_batches
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import assert_plan_error, instance


# ---------------------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------------------

def ids(batch):
    return [item["instance_id"] for item in batch]


def test_canary_of_one_when_nothing_is_up_to_date():
    outdated = [instance("i-a1", "a", minutes=5), instance("i-a2", "a", minutes=1), instance("i-b1", "b", minutes=0)]
    batch = next_batch(outdated, 0, 10)
    assert ids(batch) == ["i-a2"]  # the AZ with the most outdated, its oldest instance
    assert len(next_batch(outdated, 1, 10)) == 3


def test_batches_spread_across_azs_most_outdated_first():
    outdated = [instance("i-a%d" % n, "a", minutes=n) for n in range(3)]
    outdated += [instance("i-b%d" % n, "b", minutes=n) for n in range(2)]
    outdated += [instance("i-c0", "c")]
    assert ids(next_batch(outdated, 1, 3)) == ["i-a0", "i-b0", "i-c0"]
    assert ids(next_batch(outdated, 1, 4)) == ["i-a0", "i-b0", "i-c0", "i-a1"]
    assert ids(next_batch(outdated, 1, 2)) == ["i-a0", "i-b0"]


def test_batches_order_oldest_first_then_instance_id():
    outdated = [instance("i-2", "a", minutes=0), instance("i-1", "a", minutes=0), instance("i-0", "a", minutes=9)]
    assert ids(next_batch(outdated, 1, 3)) == ["i-1", "i-2", "i-0"]


def test_batches_compare_times_across_formats_and_offsets():
    outdated = [dict(instance("i-z"), launch_time="2024-05-01T12:30:00+02:00"),   # 10:30 UTC
                dict(instance("i-y"), launch_time="2024-05-01T11:00:00.123Z"),
                dict(instance("i-x"), launch_time=datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)),
                dict(instance("i-w"), launch_time="2024-05-01 10:15:00"),           # no offset: UTC
                dict(instance("i-v"), launch_time=None)]                              # unknown: last
    assert ids(next_batch(outdated, 1, 5)) == ["i-x", "i-w", "i-z", "i-y", "i-v"]


def test_batches_refuse_bad_times_and_sizes():
    bad = [instance("i-1"), dict(instance("i-2"), launch_time="yesterday")]
    assert_plan_error(lambda: next_batch(bad, 1, 1), "outdated[1].launch_time", "ISO 8601")
    assert_plan_error(lambda: next_batch([instance("i-1")], 1, 0), "batch_size", "integer >= 1")
    assert_plan_error(lambda: next_batch([instance("i-1")], -1, 1), "up_to_date_count")
    assert_plan_error(lambda: plan_batches([instance("i-1")], [True]), "sizes[0]")


def test_plan_batches_cut_the_drain_order_into_the_waves_given():
    outdated = [instance("i-%s%d" % (az, n), az, minutes=n) for az in "abc" for n in range(3)]
    batches = plan_batches(outdated, [1, 3, 3, 2])
    assert [len(batch) for batch in batches] == [1, 3, 3, 2]
    assert ids(batches[0]) == ["i-a0"]
    assert ids(batches[1]) == ["i-b0", "i-c0", "i-a1"]
    # sizes that fall short: a last wave takes the rest; sizes left over are not used
    assert [len(batch) for batch in plan_batches(outdated, [4])] == [4, 5]
    assert [len(batch) for batch in plan_batches(outdated, [8, 8])] == [8, 1]
    assert plan_batches([], [3]) == []


outdated_groups = st.lists(
    st.tuples(st.sampled_from(["eu-west-1a", "eu-west-1b", "eu-west-1c", "eu-west-1d"]), st.integers(min_value=0, max_value=50)),
    min_size=0, max_size=40)


def _instances_from(specs):
    return [instance("i-%03d" % index, az, minutes=minutes) for index, (az, minutes) in enumerate(specs)]


@settings(max_examples=200)
@given(outdated_groups, st.integers(min_value=0, max_value=5), st.integers(min_value=1, max_value=12))
def test_next_batch_properties(specs, up_to_date, batch_size):
    outdated = _instances_from(specs)
    batch = next_batch(outdated, up_to_date, batch_size)
    limit = 1 if up_to_date == 0 else batch_size
    assert len(batch) == min(limit, len(outdated))
    assert len(set(ids(batch))) == len(batch)
    taken = {}
    for item in batch:
        taken[item["az"]] = taken.get(item["az"], 0) + 1
    with_outdated = set(item["az"] for item in outdated)
    if any(count >= 2 for count in taken.values()):
        # Never two from one AZ while another AZ with outdated instances is untouched.
        assert with_outdated <= set(taken)
    # Within each AZ the batch takes that AZ's oldest instances.
    for az, count in taken.items():
        ranked = sorted((item for item in outdated if item["az"] == az), key=lambda item: (item["launch_time"], item["instance_id"]))
        assert set(ids(ranked[:count])) == set(ids(item for item in batch if item["az"] == az))
    # Per AZ counts differ by at most one unless the AZ ran out.
    if taken:
        most = max(taken.values())
        for az in with_outdated:
            available = sum(1 for item in outdated if item["az"] == az)
            assert taken.get(az, 0) >= min(available, most - 1)


@settings(max_examples=200)
@given(outdated_groups, st.integers(min_value=0, max_value=3), st.integers(min_value=1, max_value=12), st.randoms())
def test_plan_batches_cover_every_instance_once_deterministically(specs, up_to_date, batch_size, rnd):
    outdated = _instances_from(specs)
    sizes = [1] + [batch_size] * len(outdated) if up_to_date == 0 else [batch_size] * len(outdated)
    batches = plan_batches(outdated, sizes)
    flat = [item for batch in batches for item in ids(batch)]
    assert sorted(flat) == sorted(ids(outdated))
    assert len(flat) == len(set(flat))
    assert [len(batch) for batch in batches[:-1]] == sizes[:len(batches) - 1]
    shuffled = list(outdated)
    rnd.shuffle(shuffled)
    assert [ids(batch) for batch in plan_batches(shuffled, sizes)] == [ids(batch) for batch in batches]
    # plan_batches is next_batch applied repeatedly.
    remaining, done = list(outdated), up_to_date
    for batch, size in zip(batches, sizes):
        assert ids(next_batch(remaining, 1, size)) == ids(batch)
        chosen = set(ids(batch))
        remaining = [item for item in remaining if item["instance_id"] not in chosen]
        done += len(batch)
