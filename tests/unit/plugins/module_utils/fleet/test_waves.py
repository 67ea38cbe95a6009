# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's settings, checked and resolved: its waves (a bad value refused naming its field), each cluster's wave,
the counts in clusters once the waves' sizes are known, and each cluster's targets pinned as they resolve today."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.waves import (
    checked_budget, checked_forks, checked_settings, checked_waves, pinned_groups, resolved_budget, resolved_waves, wave_of)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError

WAVES = [{"name": "canary", "clusters": ["canary"]},
         {"name": "early", "clusters": ["early"], "max_concurrency": "50%", "soak": "10m"},
         {"name": "rest", "clusters": ["c-*"], "max_concurrency": 2}]


def test_a_wave_s_defaults_roll_one_cluster_at_a_time_with_no_failure_allowed():
    checked = checked_waves(WAVES)
    assert checked[0] == {"name": "canary", "clusters": ["canary"], "max_concurrency": ["int", 1],
                          "max_failed_clusters": ["int", 0], "soak": 0, "gate": None}
    assert (checked[1]["max_concurrency"], checked[1]["soak"]) == (["percent", 50], 600)
    assert checked_waves([{"name": "one", "clusters": "prod-*"}])[0]["clusters"] == ["prod-*"]


@pytest.mark.parametrize("waves, message", [
    ([], r"fleet_waves: \[\] is not allowed"),
    ([{"name": "a", "clusters": ["x"], "max_concurrency": 0}], r"fleet_waves\[0\].max_concurrency: 0 is not allowed"),
    ([{"name": "a", "clusters": ["x"], "soak": "ten"}], r"fleet_waves\[0\].soak: 'ten' is not allowed"),
    ([{"name": "a", "clusters": []}], r"fleet_waves\[0\].clusters: \[\] is not allowed"),
    ([{"name": "a", "clusters": ["x"], "size": 3}], r"fleet_waves\[0\].size: not a key of a wave"),
    ([{"name": "a", "clusters": ["x"]}, {"name": "a", "clusters": ["y"]}], r"fleet_waves\[1\].name: 'a' is not allowed"),
])
def test_bad_waves_are_refused_naming_the_field(waves, message):
    with pytest.raises(PlanError, match=message):
        checked_waves(waves)


def test_percentages_round_down_and_a_wave_rolls_at_least_one():
    waves = resolved_waves(checked_waves([{"name": "a", "clusters": ["x"], "max_concurrency": "10%", "max_failed_clusters": "50%"}]), [5])
    assert (waves[0]["max_concurrency"], waves[0]["max_failed_clusters"]) == (1, 2)


def test_targets_are_pinned_as_resolved_today():
    specs = [{"name": "a", "ssm_parameter": "/eks/ami", "max_unavailable": 2}, {"name": "b", "launch_template_version": "$Latest"}]
    targets = [{"target": {"image_id": "ami-1", "version": 7}, "previous_image_id": "ami-0", "previous_version": 6},
               {"target": {"image_id": "ami-2", "version": 9}, "previous_image_id": "ami-2", "previous_version": 8}]
    groups, before = pinned_groups(specs, targets)
    assert groups == [{"name": "a", "max_unavailable": 2, "image_id": "ami-1"}, {"name": "b", "launch_template_version": "9"}]
    assert before == [{"name": "a", "image_id": "ami-0", "version": 6}, {"name": "b", "image_id": "ami-2", "version": 8}]
    with pytest.raises(PlanError, match="a: its target did not resolve: SSM parameter not found"):
        pinned_groups(specs[:1], [{"msg": "SSM parameter not found"}])


def test_a_worker_needs_a_fork_for_each_of_its_clusters():
    assert checked_forks(6, 6) == 6 and checked_forks(None, 9) is None
    with pytest.raises(PlanError, match=r"forks: 5 is not allowed for a worker of 6 clusters; .* give at least 6"):
        checked_forks(5, 6)


@pytest.mark.parametrize("workers", [0, -1, "3", True])
def test_the_number_of_workers_is_a_whole_number_of_at_least_one(workers):
    with pytest.raises(PlanError, match=r"fleet_workers: .* is not allowed; give how many workers"):
        checked_settings(WAVES, None, workers)


@pytest.mark.parametrize("host, groups, expected", [
    ("c-1", ["canary"], 0),          # a group named by the first wave
    ("c-2", ["early", "canary"], 0),  # the first wave that holds it wins
    ("c-3", ["early"], 1),
    ("c-4", [], 2),                   # a host name pattern
    ("prod-1", None, None),           # in no wave
])
def test_a_cluster_belongs_to_the_first_wave_that_names_it(host, groups, expected):
    assert wave_of(host, groups, checked_waves(WAVES)) == expected


def test_a_wave_s_counts_are_resolved_against_its_size():
    waves = resolved_waves(checked_waves(WAVES), [1, 4, 10])
    assert [(wave["size"], wave["max_concurrency"], wave["max_failed_clusters"]) for wave in waves] == [(1, 1, 0), (4, 2, 0), (10, 2, 0)]


@pytest.mark.parametrize("value, size, expected", [(None, 10, None), ("", 10, None), (0, 10, 0), (3, 10, 3), ("25%", 10, 2)])
def test_the_run_s_failure_budget_in_clusters(value, size, expected):
    assert resolved_budget(checked_budget(value), size) == expected


def test_the_run_s_failure_budget_is_refused_naming_its_field():
    with pytest.raises(PlanError, match=r"^fleet_max_failed_clusters: "):
        checked_budget("many")


def test_the_settings_every_worker_gives_alike():
    assert checked_settings(WAVES, "10%", 3) == {"waves": checked_waves(WAVES), "max_failed_clusters": ["percent", 10], "workers": 3}


def test_every_group_needs_its_resolved_target():
    with pytest.raises(PlanError, match=r"^node_groups: 2 groups but 1 resolved targets"):
        pinned_groups([{"name": "a"}, {"name": "b"}], [{"target": {"image_id": "ami-1", "version": 1}}])
