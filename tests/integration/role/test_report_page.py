"""What a person sees of a rollout in its HTML report, rendered by headless chromium from real sandbox runs.

A failed run (drain timeout 20s, a budget at minAvailable 3 over 3 Ready pods and one that never starts): the stuck
nodes are drawn in the "drain failed" colour of the legend, never the red of a termination, with the pod and budget holding them beside
them; the evictions the page counts are the evictions the sandbox saw, the failed drains' included. A finished run:
every phase labelled in its own colour, every step labelled, and the sandbox clock's speed said beside the measured
duration.

Screenshots go to the test's directory; with NODEOPS_REFRESH_DOCS=1 they also replace docs/images/report.png and
docs/images/report-failure.png (docs/quick-start.md says so).
"""

import json
import os
import shutil

import pytest

from sandbox.drive.handle import ROOT, wait_until
from tests.integration.browser import probe, render
from tests.integration.modules.conftest import assert_safe

SPEED = 20
FAST = ["rolling_update_post_drain_delay=2", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]
# a budget that allows no disruption while the run lasts: minAvailable 3 over the 3 Ready replicas and a fourth pod that
# never starts (it asks for a node label no node has). One that can never allow one (minAvailable equal to the
# replicas) would stop the upgrade before any change, with no page of a drain to draw.
LEDGER = """
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: ledger, namespace: shop}
    spec:
      replicas: 3
      selector: {matchLabels: {app: ledger}}
      template:
        metadata: {labels: {app: ledger}}
        spec:
          containers: [{name: ledger, image: ledger:1, resources: {requests: {cpu: 100m}}}]
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: ledger-waiting, namespace: shop}
    spec:
      replicas: 1
      selector: {matchLabels: {app: ledger, waiting: "true"}}
      template:
        metadata: {labels: {app: ledger, waiting: "true"}}
        spec:
          nodeSelector: {sandbox.nodeops.io/no-such-node: "true"}
          containers: [{name: ledger, image: ledger:1}]
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: ledger, namespace: shop}
    spec: {minAvailable: 3, selector: {matchLabels: {app: ledger}}}
"""

# What chromium computed: the fill of each timeline drawn by its title, each legend swatch's background by its label, the
# summary table's cells and the labels of the timeline's rows.
MEASURE = """function (document, window) {
  var style = function (node, name) { return window.getComputedStyle(node)[name]; };
  var bars = [], legend = {}, rows = [];
  document.querySelectorAll("svg rect").forEach(function (rect) {
    var title = rect.querySelector("title");
    if (title) { bars.push({title: title.textContent, fill: style(rect, "fill"), width: rect.getBBox().width}); }
  });
  document.querySelectorAll(".legend span").forEach(function (span) {
    legend[span.textContent] = style(span.querySelector("i"), "backgroundColor");
  });
  document.querySelectorAll("svg text").forEach(function (text) { rows.push(text.textContent); });
  var header = Array.prototype.map.call(document.querySelectorAll("body > table thead th"), function (th) { return th.textContent; });
  var summary = Array.prototype.map.call(document.querySelectorAll("body > table tbody tr:first-child td"), function (td) { return td.innerText; });
  return {bars: bars, legend: legend, texts: rows, summary: summary, header: header, body: document.body.innerText};
}"""


def run(start_sandbox, tmp_path_factory, name, extra, prepare=None):
    sandbox = start_sandbox(nodes=6, azs=3, speed=SPEED, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])
    if prepare:
        prepare(sandbox)
    directory = tmp_path_factory.mktemp(name)
    report = directory / "result.json"
    sections = [{"title": "Sandbox invariant report", "url": sandbox.state["control_url"] + "/report?client_prefix=nodeops.rollout"}]
    rc, out = sandbox.run_role_playbook(directory, extra=FAST + extra, report=report, host_vars={"rolling_update_report_sections": sections})
    html = directory / "result.html"
    return {"rc": rc, "out": out, "group": json.loads(report.read_text())["node_groups"][0], "html": html,
            "invariants": sandbox.report(), "page": probe(html, MEASURE, directory), "directory": directory}


def add_ledger(sandbox):
    sandbox.apply(LEDGER)
    wait_until("3 ledger pods Ready", lambda: (sandbox.apps().read_namespaced_deployment("ledger", "shop").status.ready_replicas or 0) == 3)


@pytest.fixture(scope="module")
def failure(start_sandbox, tmp_path_factory):
    return run(start_sandbox, tmp_path_factory, "failure", ["rolling_update_drain_timeout=20s"], add_ledger)


@pytest.fixture(scope="module")
def success(start_sandbox, tmp_path_factory):
    return run(start_sandbox, tmp_path_factory, "success", [])


def screenshot(result, doc_image):
    """The page as a person sees it (top 1500 px): into the test's directory, and into docs/images when asked."""
    png = result["directory"] / os.path.basename(doc_image)
    assert render(result["html"], png, width=1180, height=1500) == []
    if os.environ.get("NODEOPS_REFRESH_DOCS") == "1":
        shutil.copyfile(png, os.path.join(ROOT, doc_image))
    return png


def summary(page):
    return dict(zip(page["header"], page["summary"]))


def test_a_failed_drain_is_drawn_in_its_own_colour_beside_what_holds_it_and_the_counts_match_the_sandbox(failure):
    group, page, invariants = failure["group"], failure["page"], failure["invariants"]
    assert failure["rc"] != 0 and group["status"] == "failed", failure["out"][-3000:]
    assert_safe(invariants)
    drains = [node for step in group["steps"] for node in step["nodes"]]
    stuck = sorted(node["node"] for node in drains if node["status"] == "failed")
    assert len(stuck) == 3, drains
    # each stuck node's drawn: the legend's "drain failed" colour, as wide as its 20 s drain, not the terminated red
    failed_colour = page["legend"]["drain failed: stuck, pods left"]
    assert failed_colour not in (page["legend"]["terminated"], page["legend"]["drain (cordon to drained)"]), page["legend"]
    for node in stuck:
        bars = [drawn for drawn in page["bars"] if drawn["title"].startswith(node + ": drain failed")]
        assert len(bars) == 1 and bars[0]["fill"] == failed_colour and bars[0]["width"] > 20, (node, page["bars"])
        assert "shop/ledger" in bars[0]["title"]
        # beside it, the pod and the budget that hold it
        assert any(text.startswith("stuck: shop/ledger-") and "PDB shop/ledger" in text for text in page["texts"]), page["texts"]
    assert not [drawn for drawn in page["bars"] if drawn["fill"] == page["legend"]["terminated"]]   # nothing was terminated
    # the counts add up: the evictions the sandbox saw, the drained and the stuck nodes apart
    counts = summary(page)
    assert counts["evictions"] == str(invariants["evictions"]["total"]) and invariants["evictions"]["total"] > 0, (counts, invariants["evictions"])
    assert (counts["drained"], counts["drain failed"], counts["skipped"]) == (str(len(drains) - 3), "3", "0"), counts
    assert counts["replaced"] == "0 of 6"
    assert "3 node(s) stuck, cordoned with pods left" in page["body"]
    assert page["body"].index("3 node(s) stuck") < page["body"].index("Timeline")
    # the upgrade it stopped in is drawn, and labelled so
    assert any(text.startswith("phase upgrade (stopped)") for text in page["texts"]), page["texts"]
    assert screenshot(failure, "docs/images/report-failure.png").stat().st_size < 400_000


def test_a_finished_run_labels_every_phase_in_its_own_colour_and_every_step_and_says_the_sandbox_clock(success):
    group, page, invariants = success["group"], success["page"], success["invariants"]
    assert success["rc"] == 0 and group["status"] == "replaced", success["out"][-3000:]
    assert_safe(invariants)
    phases = {drawn["title"].split(":")[0]: drawn["fill"] for drawn in page["bars"]
              if drawn["title"].split(":")[0] in ("setup", "scale up", "upgrade", "scale down")}
    assert sorted(phases) == ["scale down", "scale up", "setup", "upgrade"], page["bars"]
    assert len(set(phases.values())) == 4 and page["legend"]["replacement: launched to Ready"] not in phases.values()
    for name, fill in phases.items():
        assert page["legend"][name] == fill, (name, page["legend"])
        assert any(text.startswith("phase %s, " % name) for text in page["texts"]), page["texts"]
    for step in group["steps"]:
        assert any(text.startswith("step %d: " % step["index"]) for text in page["texts"]), page["texts"]
    counts = summary(page)
    assert counts["evictions"] == str(invariants["evictions"]["total"]) and counts["replaced"] == "6 of 6", counts
    assert counts["drain failed"] == "0" and counts["drained"] == "6"
    assert "Sandbox clock ×%d (from Sandbox invariant report)" % SPEED in page["body"]
    # the surge priced by the plan, beside the measured duration of the one the run used
    assert "The surge priced" in page["body"] and "(configured" in page["body"], page["body"][:3000]
    # the invariant report reads as tables with a row per deployment, not as tables inside tables
    assert "shop/web" in page["body"] and "zero_ready_seconds" in page["body"]
    assert screenshot(success, "docs/images/report.png").stat().st_size < 400_000
