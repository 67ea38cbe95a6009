"""docs/iam-policy.json, proven by moto's own authorizer (``up --iam``): the collection signs its AWS requests with the keys
of an IAM user that has nothing but the policy, as moto evaluates it (each statement's actions; moto checks no
Resource and no Condition, which docs/iam.md says and the document keeps).

- Every path runs to its end with those keys: the plan, an upgrade stopped by a PodDisruptionBudget, its rollback, an
  upgrade to its end. What each path asked of AWS (the sandbox's request log) is matched to the statements that allow
  it; a request no statement allows fails the test.
- Each statement those paths use taken out, one at a time: the upgrade stops, naming the action refused and the
  statement that allows it, with its lock released and the invariants held; the next run with the whole policy
  finishes the group.

The tables of docs/iam.md are what these runs did, compared (or written, with NODEOPS_REFRESH_DOCS=1).
"""

import json
import os

import pytest

from sandbox.aws import iam
from sandbox.drive.handle import install_collection_loader
from tests.integration.controls import GROUP, QUICK, assert_invariants, group_view, lock_holder, node_marks, result_of
from tests.integration.doc_outputs import check_or_refresh
from tests.integration.serial_runs import DEMO

install_collection_loader()
from ansible_collections.nodeops.rollout.plugins.module_utils import permissions  # noqa: E402 pylint: disable=wrong-import-position

NODES, AZS, MAX_UNAVAILABLE = 3, 3, 1
GENERATOR = "tests/integration/role/test_iam_policy.py"
PATHS = ("plan", "PDB stop", "rollback", "upgrade")
SERVICES = {"elbv2": "elasticloadbalancing", "monitoring": "cloudwatch"}   # the sandbox's service names -> IAM's
USED = {}      # path -> {statement Sid: {action}}
WITHOUT = {}   # Sid -> what the upgrade without it did


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO], iam=True, kube="embedded")


def used_statements(sandbox, since):
    """What the collection asked of AWS since ``since``: ``{Sid: {action}}``; an action no statement allows fails."""
    out = {}
    for event in sandbox.events():
        if event["kind"] != "aws.request" or event["t"] < since or not str(event.get("client")).startswith("nodeops.rollout"):
            continue
        action = "%s:%s" % (SERVICES.get(event["service"], event["service"]), event["action"])
        sids = permissions.aws_statements(action)
        assert sids, "no statement of docs/iam-policy.json allows %s: %s" % (action, event)
        for sid in sids:
            out.setdefault(sid, set()).add(action)
    return out


def run(sandbox, tmp_path, path, playbook="upgrade.yml", extra=(), check=False):
    report = tmp_path / ("%s.json" % path.replace(" ", "-"))
    if report.exists():
        report.unlink()
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, playbook=playbook, report=report, check=check, extra=QUICK + list(extra))
    if path in PATHS:
        USED[path] = used_statements(sandbox, since)
    return rc, out, result_of(report) if report.exists() else {}


def test_every_path_runs_to_its_end_with_only_the_policy(sandbox, tmp_path):
    with open(os.path.join(sandbox.state_dir, "aws.env"), encoding="utf-8") as fh:
        assert "AWS_ACCESS_KEY_ID=testing" not in fh.read()
    since = sandbox.now()
    rc, out, result = run(sandbox, tmp_path, "plan", check=True)
    assert rc == 0 and result["status"] == "planned", out[-3000:]
    assert sandbox.mutating_requests(since=since) == []

    sandbox.policy().patch_namespaced_pod_disruption_budget("web", "shop", {"spec": {"minAvailable": 3}})
    rc, out, result = run(sandbox, tmp_path, "PDB stop", extra=["rolling_update_drain_timeout=20s"])
    assert rc != 0 and result["status"] == "failed" and "shop/web" in json.dumps(result), out[-3000:]
    assert result.get("permission") is None and lock_holder(sandbox) is None
    sandbox.policy().patch_namespaced_pod_disruption_budget("web", "shop", {"spec": {"minAvailable": 2}})

    rc, out, result = run(sandbox, tmp_path, "rollback", playbook="rollback.yml")
    assert rc == 0 and result["status"] == "rolled back", out[-3000:]

    rc, out, result = run(sandbox, tmp_path, "upgrade")
    assert rc == 0 and result["status"] == "replaced", out[-3000:]
    assert lock_holder(sandbox) is None and node_marks(sandbox) == {}
    print("invariants", assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE))


def test_each_statement_the_paths_use_taken_out_stops_the_upgrade_and_the_whole_policy_finishes_it(sandbox, tmp_path):
    used = sorted({sid for each in USED.values() for sid in each}, key=[sid for sid, _actions in permissions.IAM_STATEMENTS].index)
    assert used, USED
    image = {"old": sandbox.state["amis"]["old"], "new": sandbox.state["amis"]["new"]}
    target = "old"
    for sid in used:
        policy = iam.docs_policy()
        policy["Statement"] = [statement for statement in policy["Statement"] if statement.get("Sid") != sid]
        iam.put_policy(sandbox.aws("iam"), policy)
        groups = [{"name": GROUP, "image_id": image[target]}]
        try:
            report = tmp_path / "without.json"
            if report.exists():
                report.unlink()
            rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK, node_groups=groups)
        finally:
            iam.put_policy(sandbox.aws("iam"), iam.docs_policy())
        assert rc != 0 and "statement %s of docs/iam-policy.json" % sid in out, out[-3000:]
        assert lock_holder(sandbox) is None
        if report.exists():
            result = result_of(report)
            assert result["status"] == "failed" and result["permission"]["kind"] == "aws", result
            WITHOUT[sid] = "stops at '%s': %s" % (result["failed_task"], result["reason"])
        else:
            WITHOUT[sid] = "stops while the run checks its groups, before any change"
        # the whole policy again: the next run finishes the group
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK, node_groups=groups)
        assert rc == 0 and result_of(report)["status"] in ("replaced", "up to date"), out[-3000:]
        assert node_marks(sandbox) == {} and group_view(sandbox)["state_tags"] == {}
        target = "new" if target == "old" else "old"
    print("invariants", assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE))


def test_the_tables_of_docs_iam_md_are_what_the_runs_did():
    assert set(USED) == set(PATHS), sorted(USED)
    sids = [sid for sid, _actions in permissions.IAM_STATEMENTS]
    rows = ["| Statement of docs/iam-policy.json | %s |" % " | ".join(PATHS), "|---|" + "---|" * len(PATHS)]
    for sid in sids:
        cells = [", ".join(sorted(action.split(":", 1)[1] for action in USED[path].get(sid, ()))) or "-" for path in PATHS]
        rows.append("| %s | %s |" % (sid, " | ".join(cells)))
    check_or_refresh("docs/iam.md", "used by path", "\n".join(rows), generator=GENERATOR)
    rows = ["| Statement of docs/iam-policy.json | The upgrade without it |", "|---|---|"]
    for sid in sids:
        rows.append("| %s | %s |" % (sid, WITHOUT.get(sid, "not used by these paths (see above)")))
    check_or_refresh("docs/iam.md", "without each statement", "\n".join(rows), generator=GENERATOR)
