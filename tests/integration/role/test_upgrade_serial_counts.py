"""The serial playbook batches each node group by its own resolved count: rolling_update_max_unavailable given as a
percentage (50 %, of each group's size) and a group whose own max_unavailable, given in the inventory plugin's
node_groups, differs from the role's. Each batch holds
the hosts of one group - a canary of one first, then at most the group's count - and the run converges with the
invariants held and each group above its own floor."""

import json
import os
import re
import subprocess

import pytest

from sandbox.drive.convergence import problems, sizes
from sandbox.drive.handle import BIN, ROOT, floor_until, promised_floor
from tests.integration.modules.conftest import assert_safe

GROUPS = ("sandbox-nodes", "sandbox-nodes-2")
NODES, AZS = 4, 2
# the role's 50 % of 4 nodes is 2; the second group's own count is 3
COUNTS = {GROUPS[0]: 2, GROUPS[1]: 3}
FAST = ["rolling_update_max_unavailable=50%", "rolling_update_post_drain_delay=2",
        "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, groups=len(GROUPS), speed=20)


@pytest.fixture(scope="module")
def inventory(sandbox, tmp_path_factory):
    path = tmp_path_factory.mktemp("serial-counts") / "sandbox.nodes.yml"
    path.write_text(json.dumps({   # JSON is YAML
        "plugin": "nodeops.rollout.nodes", "region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"],
        "kubeconfig": sandbox.state["kubeconfig"],
        # the second group's own max_unavailable, over the role's, given where the inventory names the groups
        "node_groups": [{"name": GROUPS[0], "image_id": sandbox.state["amis"]["new"]},
                        {"name": GROUPS[1], "image_id": sandbox.state["amis"]["new"], "max_unavailable": COUNTS[GROUPS[1]]}]}))
    return path


def _run(sandbox, argv):
    env = sandbox.ansible_env()
    env.pop("K8S_AUTH_KUBECONFIG", None)   # the inventory file's kubeconfig is the connection
    return subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=1200, check=False)


def _hostvars(sandbox, inventory):
    proc = _run(sandbox, [os.path.join(BIN, "ansible-inventory"), "-i", str(inventory), "--list"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    listed = json.loads(proc.stdout)
    order = listed["outdated"]["hosts"]
    groups = {host: listed["_meta"]["hostvars"][host]["node_group"] for host in order}
    return order, {host: group.get("__ansible_unsafe", group) if isinstance(group, dict) else group
                   for host, group in groups.items()}


def batches(out):
    """Each batch of the play that replaces the nodes: the hosts its first task names, in the play's order."""
    found = []
    for section in re.split(r"^PLAY \[", out, flags=re.M)[1:]:
        if not section.startswith("Replace the outdated nodes"):
            continue
        task = re.split(r"^TASK \[", section, flags=re.M)[1]
        task = re.split(r"^(?:TASK|PLAY|RUNNING HANDLER) \[", task, flags=re.M)[0]
        hosts = []
        for host in re.findall(r"^(?:ok|changed|skipping|included|fatal): \[([^\]]+)\]", task, re.M) + \
                re.findall(r"^included: \S+ for (\S+)", task, re.M):
            if host not in hosts:
                hosts.append(host)
        found.append(hosts)
    return found


@pytest.fixture(scope="module")
def run(sandbox, inventory, tmp_path_factory):
    report = tmp_path_factory.mktemp("serial-counts-run") / "result.json"
    original = {name: sizes(sandbox, name) for name in GROUPS}
    order, group_of_host = _hostvars(sandbox, inventory)
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), os.path.join("playbooks", "upgrade_serial.yml"),
            "-e", "rolling_update_report_file=%s" % report]
    for item in FAST:
        argv += ["-e", item]
    proc = _run(sandbox, argv)
    result = json.loads(report.read_text()) if report.exists() else {}
    return {"rc": proc.returncode, "out": proc.stdout, "result": result, "original": original, "order": order,
            "group_of": group_of_host, "events": sandbox.events(), "report": sandbox.report(), "now": sandbox.now()}


def test_a_percentage_and_a_group_s_own_count_converge_every_group_replaced(run, sandbox):
    assert run["rc"] == 0, run["out"][-5000:]
    groups = {group["name"]: group for group in run["result"]["node_groups"]}
    assert sorted(groups) == sorted(GROUPS), run["result"]
    for name in GROUPS:
        assert groups[name]["status"] == "replaced" and groups[name]["nodes_replaced"] == NODES, groups[name]
        assert problems(sandbox, run["original"][name], 2, name=name) == []


def test_each_batch_holds_one_group_s_hosts_a_canary_then_at_most_its_own_count(run):
    found = batches(run["out"])
    # the play's hosts in their order, cut into each group's batches: a canary of one, then the group's own count (4
    # nodes: 50 % is 1 + 2 + 1; the second group's 3 is 1 + 3)
    expected, taken = [], 0
    for name in GROUPS:
        hosts = [host for host in run["order"] if run["group_of"][host] == name]
        assert hosts == run["order"][taken:taken + NODES], run["order"]   # the inventory keeps each group's hosts together
        taken += NODES
        cut = [1] + [COUNTS[name]] * ((NODES - 1) // COUNTS[name]) + ([(NODES - 1) % COUNTS[name]] if (NODES - 1) % COUNTS[name] else [])
        for size in cut:
            expected.append(sorted(hosts[:size]))
            hosts = hosts[size:]
    assert [sorted(batch) for batch in found] == expected, found


def test_the_invariants_hold_and_each_group_stays_above_its_own_floor(run):
    assert_safe(run["report"])
    assert run["report"]["evictions"]["max_evictions_per_pod"] <= 1, run["report"]["evictions"]
    floors = floor_until(run["events"], run["now"])
    for name in GROUPS:
        assert floors[name] >= promised_floor(NODES, COUNTS[name]), floors
