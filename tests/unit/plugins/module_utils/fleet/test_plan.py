# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's plan: each wave's clusters and limits, and its time from the clusters' own plans."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.plan import cluster_estimate, fleet_plan, packed

WAVES = [{"name": "canary", "clusters": ["canary"], "soak": "10m", "gate": "/gates/ok.yml"},
         {"name": "rest", "clusters": ["c-*"], "max_concurrency": "50%", "max_failed_clusters": 1}]


def test_a_waves_clusters_are_packed_into_its_places_longest_first():
    assert packed([600, 300, 300, 200], 2) == 800
    assert packed([600, 300], 5) == 600
    assert packed([], 1) == 0


def test_a_clusters_time_is_its_groups_in_turn():
    assert cluster_estimate({"node_groups": [{"plan": {"eta_seconds": 400}}, {"plan": {"eta_seconds": 200}}, {"plan": {}}]}) == 600


def test_the_plan_names_each_wave_its_limits_and_the_fleets_time():
    clusters = {"c-1": {"groups": ["canary"], "seconds": 300}, "c-2": {"groups": [], "seconds": 600},
                "c-3": {"groups": [], "seconds": 300}, "c-4": {"groups": [], "seconds": 300},
                "c-5": {"groups": [], "seconds": 200}, "x-1": {"groups": [], "seconds": 100}}
    assert fleet_plan(WAVES, "20%", clusters) == [
        "fleet: 5 clusters in 2 waves, about 28m 20s plus the gates; the run stops beyond 1 failed cluster",
        "wave canary: c-1 - 1 at once, 0 failures allowed, soak 10m 00s, then gate /gates/ok.yml: 5m 00s + soak",
        "wave rest: c-2, c-3, c-4, c-5 - 2 at once, 1 failure allowed: 13m 20s",
        "matched by no wave (left out): x-1",
    ]
