# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The HTML report: a page that parses, needs nothing from the network, shows every node and step, and says first what
stopped a run that did not finish."""

from __future__ import annotations

import base64
import html
import json
from html.parser import HTMLParser

from ansible_collections.nodeops.rollout.plugins.filter.report_html import FilterModule
from ansible_collections.nodeops.rollout.plugins.module_utils.report.page import report_html, section_of
from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import step_record

VOID = {"meta", "br", "rect", "line", "path", "input", "img", "link"}


class Checker(HTMLParser):
    """Collects the text and fails on a tag closed out of order."""

    def __init__(self):
        super().__init__()
        self.stack, self.text, self.tags, self.attrs = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, "</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else None)
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(page):
    checker = Checker()
    checker.feed(page)
    checker.close()
    assert checker.stack == [], checker.stack
    return checker


def rollout_group():
    steps = []
    for index in range(3):
        old = "ip-10-0-%d-1.ec2.internal" % index
        steps.append(step_record(
            {"terminate": ["i-old%d" % (index - 1)] if index else [], "decrement": 0, "validate": ["i-new0"],
             "drain": [{"instance_id": "i-old%d" % index, "az": "az-%d" % index, "node": old}], "outdated_left": 3 - index,
             "waited_seconds": 5.0 if index else 0, "waited_for": ["1 new instance(s) to become Ready nodes"] if index else [],
             "decided_at": "2026-11-25T07:0%d:10Z" % (index + 1)},
            index + 1,
            {"started_at": "2026-11-25T07:0%d:11Z" % (index + 1), "seconds": 30.0,
             "nodes": {old: {"status": "drained", "started_at": "2026-11-25T07:0%d:11Z" % (index + 1),
                             "drained_at": "2026-11-25T07:0%d:40Z" % (index + 1), "seconds": 29.0,
                             "evicted": ["shop/web-%d" % index], "restarted": [], "deleted": [], "blocking": []}}}))
    steps.append(step_record({"action": "done", "terminate": ["i-old2"], "drain": [], "decided_at": "2026-11-25T07:04:10Z",
                              "waited_seconds": 3}, 4))
    return {
        "name": "workers", "status": "replaced", "plan_only": False, "nodes_replaced": 3, "evictions": 3,
        "restarted": [], "deleted": [], "skipped_nodes": [], "seconds": 290.0,
        "phase_seconds": {"setup": 5.0, "scale_up": 50.0, "upgrade": 200.0, "scale_down": 20.0},
        "target": {"launch_template_id": "lt-1", "version": 2},
        "plan": {"outdated": ["i-old0", "i-old1", "i-old2"], "surge": 1, "batch_size": 1, "batch_count": 3, "eta_seconds": 400,
                 "batches": [{"index": n + 1, "instance_ids": ["i-old%d" % n], "azs": ["az-%d" % n],
                              "nodes": ["ip-10-0-%d-1.ec2.internal" % n]} for n in range(3)]},
        "timeline": {"started_at": "2026-11-25T07:00:00Z", "ended_at": "2026-11-25T07:04:50Z",
                     "phases": [{"name": "setup", "started_at": "2026-11-25T07:00:00Z", "ended_at": "2026-11-25T07:00:05Z", "seconds": 5.0},
                                {"name": "upgrade", "started_at": "2026-11-25T07:01:00Z", "ended_at": "2026-11-25T07:04:20Z", "seconds": 200.0}]},
        "steps": steps,
        "new_nodes": [{"instance_id": "i-new%d" % n, "az": "az-%d" % n, "node": "ip-10-0-%d-9.ec2.internal" % n,
                       "launch_time": "2026-11-25T07:0%d:10Z" % (n + 2), "ready_at": "2026-11-25T07:0%d:50Z" % (n + 2)} for n in range(3)],
    }


def failed_group():
    return {"name": "batch-nodes", "status": "failed", "nodes_replaced": 0, "plan": {}, "steps": [], "new_nodes": [],
            "failed_task": "Upgrade | batch-nodes | step 1 | drain 1 nodes",
            "message": "node n-9 not drained: shop/api-1 (PodDisruptionBudget shop/api allows 0) {{ lookup('pipe', 'id') }}"}


def test_the_page_parses_needs_no_network_and_shows_every_node_and_step():
    page = report_html({"started_at": "2026-11-25T07:00:00Z", "node_groups": [rollout_group()]}, "prod-eu")
    checker = parse(page)
    text = " ".join(checker.text)
    for index in range(3):
        assert "ip-10-0-%d-1.ec2.internal" % index in text and "i-old%d" % index in text
        assert "ip-10-0-%d-9.ec2.internal" % index in text        # its replacement
    assert "step 4" in page and "svg" in checker.tags
    # nothing fetched: no script, no stylesheet or image or font from elsewhere
    assert "script" not in checker.tags and "link" not in checker.tags and "img" not in checker.tags
    assert not [value for name, value in checker.attrs if name in ("src", "href") and not str(value).startswith("#")]
    assert "@import" not in page and "url(http" not in page
    assert "Every node group finished." in text and "prod-eu" in text
    assert "6m 40s" in text and "4m 50s" in text                  # predicted beside measured


def test_a_failed_group_says_first_what_stopped_it_and_what_to_do_and_no_template_can_read_the_page():
    page = report_html({"node_groups": [rollout_group(), failed_group()]}, "prod-eu")
    parse(page)
    banner = page.index("What to do next")
    assert banner < page.index('id="group-workers"')
    assert "Upgrade | batch-nodes | step 1 | drain 1 nodes" in page and "shop/api" in page
    assert "{{" not in page and "{%" not in page and "{#" not in page


def test_a_group_stopped_by_a_refused_permission_names_it_the_rule_that_grants_it_and_that_nothing_was_lost():
    permission = {"kind": "kubernetes", "verb": "create", "api_group": "", "resource": "pods/eviction", "namespace": None,
                  "granted_by": 'ClusterRole nodeops-rollout rule {apiGroups: [""], resources: [pods/eviction], '
                                'verbs: [create]} of docs/rbac.yaml', "required": True}
    group = dict(failed_group(), reason="permission denied", permission=permission)
    text = " ".join(parse(report_html({"node_groups": [group]}, "prod-eu")).text)
    assert "create pods/eviction (core API group) in every namespace" in text
    assert text.index("Permission refused") < text.index("create pods/eviction") < text.index("ClusterRole nodeops-rollout rule")
    assert "Grant the permission named here" in text and "Nothing was lost" in text


def test_sections_show_a_json_document_as_tables_and_a_read_that_failed_as_its_reason():
    invariants = {"pdb_violations": 0, "evictions": {"max_evictions_per_pod": 1}, "deployments": {"web": {"zero_ready_seconds": 0}}}
    reads = [
        {"item": {"title": "Invariant report", "url": "http://127.0.0.1:9/report"}, "status": 200, "json": invariants},
        {"item": {"title": "SLO", "file": "/tmp/slo.json"}, "encoding": "base64",
         "content": base64.b64encode(json.dumps({"error_budget_used": "2%"}).encode()).decode()},
        {"item": {"title": "Down", "url": "http://127.0.0.1:9/x"}, "failed": True, "status": -1, "msg": "Connection refused"},
        {"item": {"title": "Off", "file": "/x"}, "skipped": True},
    ]
    page = FilterModule().filters()["report_html"]({"node_groups": []}, "c", reads)
    text = " ".join(parse(page).text)
    assert "Invariant report" in text and "pdb_violations" in text and "max_evictions_per_pod" in text
    assert "error_budget_used" in text and "2%" in text
    assert "Connection refused" in text and "Off" not in text
    assert section_of({"item": {"title": "t", "url": "u"}, "status": 200, "content": "not json"})["error"].startswith("not a JSON")


def test_a_plan_only_result_shows_the_plan_without_a_timeline():
    group = dict(rollout_group(), status="planned", plan_only=True, steps=[], timeline={})
    page = report_html({"node_groups": [group]})
    text = " ".join(parse(page).text)
    assert "Plan only: nothing was changed." in text and "Timeline" not in text and "ip-10-0-2-1.ec2.internal" in text


def _without_zone(value):
    return value[:-1] if isinstance(value, str) and value.endswith("Z") else value


def test_times_without_a_zone_from_results_written_before_are_read_as_utc_and_every_zone_is_compared_as_a_time():
    group = rollout_group()
    zoned = report_html({"started_at": "2026-11-25T07:00:00Z", "node_groups": [group]}, "prod-eu")
    # the role wrote its own times (the run's start, the timeline, the phases) without a zone before
    old = dict(group, timeline={"started_at": _without_zone(group["timeline"]["started_at"]),
                                "ended_at": _without_zone(group["timeline"]["ended_at"]),
                                "phases": [{key: _without_zone(value) for key, value in phase.items()}
                                           for phase in group["timeline"]["phases"]]})
    assert report_html({"started_at": "2026-11-25T07:00:00", "node_groups": [old]}, "prod-eu") == zoned
    assert "ended 2026-11-25 07:04:50 UTC" in zoned
    # the last group to end is found by time, not by the text: 09:00+03:00 is 06:00 UTC, 07:04:50.5Z comes after 07:04:50Z
    other = dict(group, name="other", timeline=dict(group["timeline"], ended_at="2026-11-25T09:00:00+03:00"))
    later = dict(group, name="later", timeline=dict(group["timeline"], ended_at="2026-11-25T07:04:50.500Z"))
    page = report_html({"started_at": "2026-11-25T07:00:00", "node_groups": [group, other, later]})
    assert "ended 2026-11-25 07:04:50 UTC" in page and "ended 2026-11-25 06:00" not in page
    page = report_html({"started_at": "2026-11-25T07:00:00", "node_groups": [later, other]})
    assert "ended 2026-11-25 07:04:50 UTC" in page


def test_a_paused_or_rolled_back_group_says_why_and_a_cancelled_one_is_finished():
    paused = {"name": "workers", "status": "paused", "reason": "window closed", "plan": {}, "steps": [], "new_nodes": [],
              "message": "the maintenance window closes Tue 2026-12-01 05:00 UTC, before the next step could finish"}
    page = report_html({"node_groups": [paused]}, "prod-eu")
    parse(page)
    assert "Why: <b>window closed</b>" in page and "again in the next window" in page and "banner held" in page
    cancelled = {"name": "workers", "status": "cancelled", "reason": "cancelled", "plan": {}, "steps": [], "new_nodes": []}
    assert "Every node group finished." in report_html({"node_groups": [cancelled]}, "prod-eu")


def test_a_plan_only_page_shows_the_pre_flight_s_blockers_and_warnings_grouped_by_kind_with_their_budget():
    preflight = {
        "ip-10-0-0-1.ec2.internal": {"blocking": [
            {"pod": "shop/api-1", "kind": "pdb_zero", "severity": "error", "pdb": "shop/api",
             "reason": "PodDisruptionBudget shop/api allows 0 disruptions: it needs 2 healthy pods and has 2"},
            {"pod": "shop/cache-0", "kind": "single_replica", "severity": "warning", "pdb": None,
             "reason": "single replica: down while its pod moves"}]},
        "ip-10-0-1-1.ec2.internal": {"blocking": []},
    }
    group = dict(rollout_group(), status="planned", plan_only=True, steps=[], timeline={})
    group["plan"] = dict(group["plan"], preflight=preflight)
    page = report_html({"node_groups": [group]})
    text = " ".join(parse(page).text)
    assert "Blockers and warnings" in text
    assert "pdb_zero" in text and "<td>shop/api</td>" in page and "PodDisruptionBudget shop/api" in text
    assert page.index("pdb_zero") < page.index("single_replica")          # the blockers, then the warnings
    assert "shop/cache-0" in text and "ip-10-0-0-1.ec2.internal" in text
    # a plan whose pre-flight found nothing says so; a rollout's plan without a pre-flight says that, and what held its drains
    group["plan"]["preflight"] = {}
    assert "found no blocker and no warning" in report_html({"node_groups": [group]})
    page = report_html({"node_groups": [rollout_group()]})
    assert "Blockers and warnings" in page and "carried no drain pre-flight" in page and "No drain was held." in page


def test_the_waves_table_says_the_hold_after_a_wave_only_when_a_wave_holds():
    group = rollout_group()
    assert "<th>then</th>" not in report_html({"node_groups": [group]})
    group["plan"] = dict(group["plan"], batches=[dict(batch, hold_seconds=1800 if batch["index"] == 1 else 0)
                                                 for batch in group["plan"]["batches"]])
    page = report_html({"node_groups": [group]})
    parse(page)
    assert "<th>then</th>" in page and "hold 30m 00s" in page and "<td>-</td>" in page


SURGE_CHOICES = [
    {"surge": 1, "choices": ["configured"], "eta_seconds": 400, "wave_count": 3, "extra_instance_minutes": 9.5},
    {"surge": 3, "choices": ["EKS default", "100%"], "eta_seconds": 250, "wave_count": 1,
     "extra_instance_minutes": 11.2}]


def test_the_surge_priced_is_shown_beside_what_the_run_took_on_the_surge_it_used():
    group = rollout_group()
    assert "The surge priced" not in report_html({"node_groups": [group]})     # a result written before has none
    group["plan"] = dict(group["plan"], surge_choices=SURGE_CHOICES)
    page = report_html({"node_groups": [group]})
    parse(page)
    assert "The surge priced" in page and "<th>measured duration</th>" in page
    assert ('<tr><td>1 (configured)</td><td>6m 40s</td><td class="num">9.5</td><td>4m 50s</td></tr>' in page)
    assert '<tr><td>3 (EKS default, 100%)</td><td>4m 10s</td><td class="num">11</td><td></td></tr>' in page
    # a plan has nothing measured yet
    planned = dict(group, status="planned", plan_only=True, steps=[], timeline={})
    page = report_html({"node_groups": [planned]})
    assert '<tr><td>1 (configured)</td><td>6m 40s</td><td class="num">9.5</td></tr>' in page
    assert "measured duration</th>" not in page.split("The surge priced")[1].split("</table>")[0]


def _stopped(status, **fields):
    return dict({"name": "workers", "status": status, "plan": {}, "steps": [], "new_nodes": []}, **fields)


def test_a_clean_stop_is_not_drawn_as_a_failure_and_each_says_what_ends_it():
    limited = report_html({"node_groups": [_stopped("paused", reason="limited", message="3 outdated node(s) were not replaced")]}, "prod")
    parse(limited)
    assert '<div class="banner held">' in limited and "banner stopped" not in limited
    assert "The run was limited to some of the outdated nodes" in limited and "Find out why" not in limited
    paused = report_html({"node_groups": [_stopped("paused", reason="requested")]}, "prod")
    assert '<div class="banner held">' in paused and "Remove the request" in paused
    failed = report_html({"node_groups": [_stopped("failed", reason="drain", message="node n1 not drained")]}, "prod")
    assert '<div class="banner stopped">' in failed and "banner held" not in failed


def test_a_rollback_the_playbook_was_asked_for_does_not_say_the_new_nodes_failed():
    asked = html.unescape(report_html({"node_groups": [_stopped("rolled back")]}, "prod"))
    parse(asked)
    assert '<div class="banner rolled-back">' in asked and "banner stopped" not in asked
    assert "The rollback playbook moved the group back" in asked and "new version's nodes failed" not in asked
    # rolled back by the run itself after a failure of the new nodes: the cause is named, and that is what to look at
    after = html.unescape(report_html({"node_groups": [_stopped("rolled back", reason="node creation failure", failed_task="scale up",
                                                                message="NodeCreationFailure")]}, "prod"))
    assert '<div class="banner rolled-back">' in after and "why the new version's nodes failed" in after


def test_the_title_names_the_cluster_or_without_one_the_node_groups():
    assert "<h1>Node rollout of cluster prod-eu</h1>" in report_html({"node_groups": [_stopped("replaced")]}, "prod-eu")
    assert "<h1>Node rollout of node group workers</h1>" in report_html({"node_groups": [_stopped("replaced")]}, None)
    two = report_html({"node_groups": [_stopped("replaced"), _stopped("replaced", name="spot")]}, None)
    assert "<h1>Node rollout of node groups workers, spot</h1>" in two


def test_the_quarantined_nodes_come_first_in_the_banner_each_with_what_holds_it_and_what_to_do():
    group = dict(failed_group(), quarantined=[{"node": "n-7", "blocked_by": "shop/pinned-0 (PodDisruptionBudget shop/pinned-0)"},
                                              {"node": "n-9", "blocked_by": "shop/pinned-1 (PodDisruptionBudget shop/pinned-1)"}])
    page = report_html({"node_groups": [group]}, "prod-eu")
    parse(page)
    first = page.index("2 node(s) quarantined: their drain was skipped")
    assert first < page.index("Stopped at") < page.index("What to do next")
    assert page.index("n-7") > first and "PodDisruptionBudget shop/pinned-1" in page and "run the upgrade again" in page[first:]
