"""Nodes as hosts: the inventory plugin nodeops.rollout.nodes lists the group's instances as hosts (outdated or not,
consecutive hosts alternating AZs), and nodeops.rollout.upgrade_serial replaces the outdated ones a canary of one, then
rolling_update_max_unavailable at a time, each batch exactly its hosts, each host with its own status. A run limited to
one node replaces that node alone and leaves the group paused (surged, its rollout recorded); the next run finishes it.
Through both runs the invariants hold: the capacity floor, no PodDisruptionBudget violated, no pod ended without
eviction, no pod moved twice."""

import json
import os
import re
import subprocess

import pytest

from tests.integration.browser import HELD_BANNER, banners
from tests.integration.controls import node_marks
from tests.integration.doc_outputs import check_or_refresh, excerpt, fenced
from sandbox.drive.convergence import group_of, problems, record, sizes
from sandbox.drive.handle import BIN, ROOT, floor_until, promised_floor
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
NODES, AZS, MAX_UNAVAILABLE = 4, 2, 2
FAST = ["rolling_update_max_unavailable=%d" % MAX_UNAVAILABLE, "rolling_update_post_drain_delay=2",
        "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


@pytest.fixture(scope="module")
def inventory(sandbox, tmp_path_factory):
    directory = tmp_path_factory.mktemp("serial")
    path = directory / "sandbox.nodes.yml"
    path.write_text(json.dumps({   # JSON is YAML
        "plugin": "nodeops.rollout.nodes", "region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"],
        "kubeconfig": sandbox.state["kubeconfig"],
        "node_groups": [{"name": GROUP, "image_id": sandbox.state["amis"]["new"]}]}))
    return path


def _run(sandbox, argv):
    env = sandbox.ansible_env()
    env.pop("K8S_AUTH_KUBECONFIG", None)   # the inventory file's kubeconfig is the connection
    return subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900, check=False)


def _plain(value):
    """ansible-inventory's JSON with its {"__ansible_unsafe": value} wrappers taken off."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def hosts(sandbox, inventory):
    """``(groups, hostvars)``: each group's hosts in the inventory's order, and every host's variables."""
    proc = _run(sandbox, [os.path.join(BIN, "ansible-inventory"), "-i", str(inventory), "--list"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    listed = _plain(json.loads(proc.stdout))
    return {name: group.get("hosts", []) for name, group in listed.items() if name != "_meta"}, listed["_meta"]["hostvars"]


def upgrade(sandbox, inventory, report, *extra):
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), os.path.join("playbooks", "upgrade_serial.yml"),
            "-e", "rolling_update_report_file=%s" % report]
    for item in FAST:
        argv += ["-e", item]
    proc = _run(sandbox, argv + list(extra))
    return proc.returncode, proc.stdout, json.loads(report.read_text())["node_groups"][0]


def _cordoned(events, since):
    return [(e["t"], e["node"]) for e in events if e["t"] >= since and e["kind"] == "node.cordoned"
            and str(e.get("client") or "").startswith("nodeops.rollout")]


@pytest.fixture(scope="module")
def runs(sandbox, inventory, tmp_path_factory):
    directory = tmp_path_factory.mktemp("serial-runs")
    original = sizes(sandbox)
    listed, hostvars = hosts(sandbox, inventory)
    outdated = listed["outdated"]
    first = outdated[0]
    since = sandbox.now()
    limited = upgrade(sandbox, inventory, directory / "limited.json", "--limit", first)
    between = {"now": sandbox.now(), "group": group_of(sandbox), "listed": hosts(sandbox, inventory)[0], "marks": node_marks(sandbox)}
    rest = upgrade(sandbox, inventory, directory / "rest.json")
    return {"sandbox": sandbox, "original": original, "listed": listed, "hostvars": hostvars, "outdated": outdated, "first": first,
            "since": since, "limited": limited, "between": between, "rest": rest, "events": sandbox.events(),
            "report": sandbox.report(), "html": directory / "rest.html"}


def test_the_inventory_lists_every_instance_as_a_host_alternating_azs(runs):
    hostvars, outdated = runs["hostvars"], runs["outdated"]
    assert len(outdated) == NODES and runs["listed"].get("up_to_date", []) == []
    azs = [hostvars[host]["availability_zone"] for host in outdated]
    assert all(a != b for a, b in zip(azs, azs[1:])), azs
    for host in outdated:
        facts = hostvars[host]
        assert facts["node_name"] == host and facts["instance_id"].startswith("i-") and facts["outdated"] is True
        assert facts["node_group"] == GROUP and facts["launch_template_version"] == "1"
        assert facts["target_launch_template_version"] == 2 and facts["outdated_reasons"], facts
        assert host in runs["listed"]["node_group_sandbox_nodes"]
        assert host in runs["listed"]["az_" + facts["availability_zone"].replace("-", "_")]
        # the role rolls the groups the inventory names, over the connection it was given
        assert facts["rolling_update_node_groups"] == [{"name": GROUP, "image_id": runs["sandbox"].state["amis"]["new"]}]
        assert facts["rolling_update_k8s"] == {"kubeconfig": runs["sandbox"].state["kubeconfig"]}


def test_a_run_limited_to_one_node_replaces_that_node_alone_and_leaves_the_group_paused(runs):
    rc, out, group = runs["limited"]
    assert rc == 0, out[-4000:]
    first, hostvars = runs["first"], runs["hostvars"]
    assert group["status"] == "paused" and group["nodes_replaced"] == 1, group
    assert "outside this run" in group["message"]
    assert [e["node"] for e in group["steps"][0]["nodes"]] == [first]
    # its page, as a person opens it: titled by the node group (the hosts are nodes, not the cluster), and a clean stop
    # drawn in the colour of a pause, not the failure's red, saying what ends it
    page = banners(runs["html"].parent / "limited.html", runs["html"].parent)
    assert page["title"] == "Node rollout of node group %s" % GROUP, page
    assert [banner["background"] for banner in page["banners"]] == [HELD_BANNER], page
    assert "The run was limited to some of the outdated nodes" in page["banners"][0]["text"], page
    cordoned = {node for t, node in _cordoned(runs["events"], runs["since"]) if t <= runs["between"]["now"]}
    assert cordoned == {first}, cordoned
    # the recap names the one host; the group stays surged with its rollout recorded, for the next run to go on
    assert re.search(r"^%s +: ok=\d+ +changed=\d+ +unreachable=0 +failed=0" % re.escape(first), out, re.M), out[-2000:]
    assert len(re.findall(r"^ip-\S+ +: ok=", out, re.M)) == 1
    tags = {tag["Key"] for tag in runs["between"]["group"]["Tags"]}
    assert any(key.startswith("nodeops.rollout/") for key in tags), tags
    # held as a pause holds a group: its processes resumed, the nodes left out neither tainted nor cordoned
    assert runs["between"]["group"]["SuspendedProcesses"] == [] and runs["between"]["marks"] == {}, runs["between"]
    assert sorted(runs["between"]["listed"]["outdated"]) == sorted(host for host in runs["outdated"] if host != first)
    assert hostvars[first]["instance_id"] in [i for step in group["steps"] for i in step["terminated"]]


def test_the_next_run_replaces_the_rest_a_canary_then_batches_each_host_with_its_own_status(runs):
    rc, out, group = runs["rest"]
    assert rc == 0, out[-4000:]
    assert group["status"] == "replaced" and group["nodes_replaced"] == NODES - 1, group
    rest = runs["between"]["listed"]["outdated"]
    assert sorted(rest) == sorted(host for host in runs["outdated"] if host != runs["first"])
    for host in rest:
        assert '"msg": "%s (%s) replaced"' % (host, runs["hostvars"][host]["instance_id"]) in out, out[-3000:]
        assert re.search(r"^%s +: ok=\d+ +changed=\d+ +unreachable=0 +failed=0" % re.escape(host), out, re.M)
    # a canary of one, then the other two together: each batch's nodes are cordoned only after the batch before it
    # is replaced (its instances terminated)
    events = runs["events"]
    cordons = _cordoned(events, runs["between"]["now"])
    order = [node for _t, node in sorted(cordons)]
    assert order[0] == rest[0] and sorted(order[1:]) == sorted(rest[1:]), order
    node_of = {e["provider_id"].rsplit("/", 1)[-1]: e["node"] for e in events if e["kind"] == "node.added" and e.get("provider_id")}
    canary_gone = min(e["t"] for e in events if e["kind"] == "instance.terminated" and node_of.get(e["instance_id"]) == rest[0])
    assert min(t for t, node in cordons if node != rest[0]) > canary_gone
    assert problems(runs["sandbox"], runs["original"], 2) == []


def test_the_invariants_hold_through_both_runs_and_the_report_says_so(runs, sandbox):
    report = runs["report"]
    assert_safe(report)
    assert report["evictions"]["max_evictions_per_pod"] <= 1, report["evictions"]
    assert report["evictions"]["evicted_pre_existing"] > 0, report["evictions"]   # the workload moved
    assert floor_until(runs["events"], sandbox.now())[GROUP] >= promised_floor(NODES, MAX_UNAVAILABLE)
    page = runs["html"].read_text()
    for host in runs["outdated"][1:]:
        assert host in page
    record("upgrade-serial", sandbox, outcome="limited run: %s" % runs["limited"][2]["status"], rerun=runs["rest"][2]["status"])


def test_the_quick_start_shows_what_the_second_run_prints_for_each_node(runs):
    """The docs' sample of the serial playbook's end is this run's: each host's line and the recap (whose counts depend
    on how many steps the batches took)."""
    _rc, out, _group = runs["rest"]
    shown = excerpt(out, [r"TASK \[Whether this node was replaced\]"])
    assert shown.count(" replaced") >= len(runs["outdated"]) - 1, shown
    check_or_refresh("docs/quick-start.md", "serial", fenced(shown), loose=((r"(ok|changed|skipped)=\d+", r"\1=N"),))


def test_a_batch_s_last_step_says_the_batch_is_done_and_what_is_left_of_the_group(runs):
    """The serial playbook's batches each end with a step 'done' of rollout_step: the progress line says the batch is
    done and the time the group still needs, never the group 'done' before its last node."""
    _rc, out, group = runs["rest"]
    lines = re.findall(r'"msg": "(\S+: step \d+: [^"]*)"', out)
    assert lines, out[-3000:]
    batch_ends = [line for line in lines if ", batch done" in line]
    assert batch_ends and all(re.search(r", about \S+( \S+)? left", line) for line in batch_ends), lines
    # with nodes to go, at least their waves' post-drain delays are left (never "about 1s left" with 2 nodes to go)
    delay = int(next(item.split("=")[1] for item in FAST if item.startswith("rolling_update_post_drain_delay=")))
    for line in lines:
        found = re.search(r": step \d+: (\d+) of (\d+) nodes replaced.*, about (?:(\d+)m )?(\d+)s left", line)
        if found and int(found.group(1)) < int(found.group(2)):
            waves = -(-(int(found.group(2)) - int(found.group(1))) // MAX_UNAVAILABLE)
            assert int(found.group(3) or 0) * 60 + int(found.group(4)) >= waves * delay, line
    assert not [line for line in lines if line.endswith(" done") and ("%d of" % group["nodes_replaced"]) not in line], lines
