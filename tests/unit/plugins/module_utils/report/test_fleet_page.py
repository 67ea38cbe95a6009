# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's page: what stopped the run and what to do next, each wave with its limits and gate, each cluster's row."""

from __future__ import annotations

import datetime

from ansible_collections.nodeops.rollout.plugins.module_utils.fleet import ledger
from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.waves import checked_waves
from ansible_collections.nodeops.rollout.plugins.module_utils.report.fleet_page import fleet_html

T0 = datetime.datetime(2026, 11, 29, 8, 0, 0, tzinfo=datetime.timezone.utc)


def stopped_fleet():
    conf = {"waves": checked_waves([{"name": "canary", "clusters": ["c-1"], "gate": "/g.yml"}, {"name": "rest", "clusters": ["c-*"]}]),
            "max_failed_clusters": None, "workers": 1}
    doc = ledger.new("fleet-1", conf, T0)
    for index, name in enumerate(("c-1", "c-2", "c-3")):
        ledger.join(doc, conf, name, 0 if index == 0 else 1, "w", ["c-1", "c-2", "c-3"],
                    [{"name": "ng", "image_id": "ami-new"}], [{"name": "ng", "image_id": "ami-old", "version": 3}], T0)
    ledger.claim(doc, "c-1", "run-1", T0, 3600)
    ledger.finish(doc, "c-1", "run-1", "failed", "ng: shop/web <b>held</b>", [{"name": "ng", "image_id": "ami-new", "version": 4}],
                  "/reports/result-c-1.html", T0 + datetime.timedelta(minutes=3))
    ledger.claim(doc, "c-2", "run-1", T0 + datetime.timedelta(minutes=4), 3600)
    return ledger.summary(doc)


def test_a_stopped_run_says_why_and_what_to_do_and_escapes_what_it_shows():
    page = fleet_html(stopped_fleet(), base="/reports")
    assert "Stopped: the failure budget of wave canary is spent: c-1 failed (0 allowed)" in page
    assert "run the same job again" in page
    assert "shop/web &lt;b&gt;held&lt;/b&gt;" in page and "<b>held</b>" not in page
    assert '<a href="result-c-1.html">page</a>' in page
    assert page.count('<tr class="cluster"') == 3
    assert 'data-state="not started"' in page and "ng: ami-old (v3)" in page and "ng: ami-new (v4)" in page
    assert "/g.yml: not run" in page


def test_a_finished_fleet_says_so():
    fleet = stopped_fleet()
    fleet.update(stopped=None, counts={"succeeded": 3})
    assert "Every cluster is on its pinned target" in fleet_html(fleet)


def test_a_busy_cluster_is_shown_busy_and_the_page_says_to_run_again_once_the_other_run_ended():
    conf = {"waves": checked_waves([{"name": "all", "clusters": ["c-*"]}]), "max_failed_clusters": None, "workers": 1}
    doc = ledger.new("fleet-1", conf, T0)
    for name in ("c-1", "c-2"):
        ledger.join(doc, conf, name, 0, "w", ["c-1", "c-2"], [{"name": "ng", "image_id": "ami-new"}], [], T0)
    ledger.claim(doc, "c-1", "run-1", T0, 3600)
    ledger.finish(doc, "c-1", "run-1", "busy", "c-1 is busy, not failed: node group ng is locked by another run, alice@laptop/1",
                  [], None, T0)
    ledger.claim(doc, "c-2", "run-1", T0, 3600)
    ledger.finish(doc, "c-2", "run-1", "succeeded", None, [], None, T0)
    page = fleet_html(ledger.summary(doc))
    assert 'data-state="busy"' in page and "locked by another run, alice@laptop/1" in page
    assert "<h2>Busy clusters</h2>" in page and "Stopped:" not in page
