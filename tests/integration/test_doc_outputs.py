"""The outputs the docs show (docs/quick-start.md, README.md) are printed by the documented commands on the sandbox,
run here as the demo runs them (scripts/demo.sh: its inventory, host ``sandbox``, skipped tasks hidden): the plan, the
upgrade, the rerun that finds nothing to do, the outcome line and the result's JSON; and a rollout stopped by a budget
that allows no disruption, then its rerun once the budget allows one, and the line docs/awx.md's workflow playbook
prints from that stopped run's artifact. Each test compares the doc's
generated block with what its command printed now, durations, times, ids and generated names aside
(doc_outputs.normalise), and fails with the command that refreshes the docs when they differ:

    NODEOPS_REFRESH_DOCS=1 python -m pytest -p no:cacheprovider tests/integration/test_doc_outputs.py

The upgrade's number of steps depends on when each drain ends (a step terminates the nodes whose post-drain delay has
passed): its block shows the first step and the last, the rerun's steps are not compared, and neither are these runs'
recap ok/changed/skipped counts. The plan's, the finished group's rerun's and the stopped run's are.
"""

import json
import os
import re
import subprocess

import pytest

from sandbox.drive.handle import BIN, ROOT
from tests.integration.awx_artifact import AWX_DOC, artifact, report_lines
from tests.integration.doc_outputs import check_or_refresh, excerpt, fenced, sections
from tests.integration.modules.conftest import assert_safe
from tests.integration.workloads import let_go

QUICK_START = "docs/quick-start.md"
# the quick start's pod that holds the web budget while it waits (its "When a rollout stops" rehearsal)
WEB_WAITING = os.path.join(ROOT, "sandbox", "workloads", "web-waiting.yaml")


def demo_sandbox(start_sandbox, tmp_path_factory, name):
    """A sandbox started as the demo starts it, the demo's inventory (written into a new directory) and environment."""
    sandbox = start_sandbox(nodes=6, azs=3, speed=10, workloads=[os.path.join("sandbox", "workloads", "demo.yaml"),
                                                                 os.path.join("sandbox", "workloads", "worker.yaml")])
    directory = tmp_path_factory.mktemp(name)
    state = sandbox.state
    inventory = {"clusters": {"hosts": {"sandbox": {
        "ansible_python_interpreter": os.path.join(BIN, "python"),
        "rolling_update_aws": {"region": state["region"], "endpoint_url": state["aws_url"]},
        "rolling_update_k8s": {"kubeconfig": state["kubeconfig"]},
        "rolling_update_node_groups": [{"name": state["groups"][0]["name"], "ssm_parameter": state["ssm_parameter"]}],
        "rolling_update_max_unavailable": 1, "rolling_update_post_drain_delay": 3, "rolling_update_validate_passes": 2,
        "rolling_update_validate_interval": "1s", "rolling_update_report_file": str(directory / "result.json"),
        "rolling_update_report_sections": [{"title": "Sandbox invariant report",
                                            "url": state["control_url"] + "/report?client_prefix=nodeops.rollout"}]}}}}
    (directory / "inventory.yml").write_text(json.dumps(inventory, indent=2))
    env = sandbox.ansible_env({"ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false"})
    env.pop("K8S_AUTH_KUBECONFIG", None)
    return sandbox, directory, env


def playbook(directory, env, *args):
    """``ansible-playbook -i inventory.yml <args>`` in ``directory``, as the docs write it: ``(rc, output)``."""
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "inventory.yml"] + list(args), cwd=directory, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, check=False)
    return proc.returncode, proc.stdout


@pytest.fixture(scope="module")
def demo(start_sandbox, tmp_path_factory):
    """The demo's three commands; their outputs, the result and the invariant report."""
    sandbox, directory, env = demo_sandbox(start_sandbox, tmp_path_factory, "demo")
    outputs = {}
    for name, command in (("plan", "nodeops.rollout.plan"), ("upgrade", "nodeops.rollout.upgrade"), ("rerun", "nodeops.rollout.upgrade")):
        rc, outputs[name] = playbook(directory, env, command)
        assert rc == 0, outputs[name][-4000:]
        if name == "upgrade":
            outputs["result"] = json.loads((directory / "result.json").read_text())
            outputs["invariants"] = sandbox.report()
    return outputs


def recap(output):
    return [lines for header, lines in sections(output) if header.startswith("PLAY RECAP")][-1]


def test_the_plan_block_is_what_the_plan_prints_and_it_changes_nothing(demo):
    assert re.search(r"changed=0 ", " ".join(recap(demo["plan"]))), recap(demo["plan"])
    # the plan's lines down to its first warnings: the waves, the surge priced (three lines), the pre-flight's start
    shown = excerpt(demo["plan"], [r"\| show the plan\]", r"^TASK \[Sum up the plan\]"], max_items=12)
    check_or_refresh(QUICK_START, "plan", fenced(shown))


def test_the_upgrade_block_is_what_the_upgrade_prints(demo):
    assert_safe(demo["invariants"])
    steps = sorted(set(int(number) for number in re.findall(r"\| sandbox-nodes \| step (\d+) \|", demo["upgrade"])))
    first, last = steps[0], steps[-1]
    shown = excerpt(demo["upgrade"], [
        r"Setup \| sandbox-nodes \| resolve the target", r"Scale up \| sandbox-nodes \| (surge by|wait for|taint)",
        r"Upgrade \| sandbox-nodes \| step %d \| (decide|progress|validate|drain)" % first,
        r"Upgrade \| sandbox-nodes \| step %d \| (decide|done)" % last, r"Scale down \| sandbox-nodes \| restore"])
    # what follows the number of steps is not compared: the last step's number, the recap's ok/changed/skipped counts
    check_or_refresh(QUICK_START, "upgrade", fenced(shown), loose=(
        (r"\| step (?!%d \|)\d+ \|" % first, "| step <last> |"), (r"\b(ok|changed|skipped)=\d+", r"\1=<steps>")))


def test_a_rerun_finds_every_node_up_to_date_and_its_block_says_so(demo):
    shown = excerpt(demo["rerun"], [r"\| if every node is up to date, say so\]"])
    assert "all 6 instances run launch template version" in shown, demo["rerun"][-3000:]
    check_or_refresh(QUICK_START, "rerun", fenced(shown))


def test_the_outcome_line_and_the_result_json_are_what_the_run_wrote(demo):
    group = demo["result"]["node_groups"][0]
    line = [lines for header, lines in sections(demo["upgrade"]) if "each node group's outcome" in header][-1]
    outcome = next(text for text in line if "sandbox-nodes: replaced" in text).strip().strip('",')
    assert outcome.startswith("sandbox-nodes: replaced, 6 of 6 nodes replaced in ") and outcome.endswith(" %d evictions" % group["evictions"])
    check_or_refresh(QUICK_START, "outcome", fenced(outcome))
    picked = {key: group[key] for key in ("name", "status", "nodes_replaced", "evictions", "restarted", "phase_seconds", "seconds")}
    check_or_refresh(QUICK_START, "result", fenced(json.dumps(picked, indent=2, sort_keys=False), "json"))


def test_the_readme_s_progress_line_is_the_upgrade_s_first(demo):
    first = re.search(r'^\s*("msg": "sandbox-nodes: step 1: .*")$', demo["upgrade"], re.M).group(1)
    check_or_refresh("README.md", "progress", fenced(first))


@pytest.fixture(scope="module")
def stopped(start_sandbox, tmp_path_factory):
    """The quick start's stop and rerun: web's budget at minAvailable 3 over its 3 Ready replicas and a fourth web pod that
    never starts (sandbox/workloads/web-waiting.yaml) holds the drain of the nodes running a web pod past a 30s timeout;
    the budget set back to 2 and that pod taken away, the same command finishes the rollout."""
    sandbox, directory, env = demo_sandbox(start_sandbox, tmp_path_factory, "stopped")
    sandbox.policy().patch_namespaced_pod_disruption_budget("web", "shop", {"spec": {"minAvailable": 3}})
    sandbox.apply(WEB_WAITING)
    # the job's artifact printed at its end, as AWX would keep it (docs/awx.md's failed rollout)
    rc, stop = playbook(directory, dict(env, ANSIBLE_SHOW_CUSTOM_STATS="true"), "nodeops.rollout.upgrade", "-e",
                        "rolling_update_drain_timeout=30s")
    assert rc != 0, stop[-4000:]
    failed = (directory / "result.json").read_text()
    sandbox.policy().patch_namespaced_pod_disruption_budget("web", "shop", {"spec": {"minAvailable": 2}})
    let_go(sandbox, "shop", "web")
    rc, resume = playbook(directory, env, "nodeops.rollout.upgrade")
    assert rc == 0, resume[-4000:]
    return {"stop": stop, "resume": resume, "invariants": sandbox.report(), "failed": json.loads(failed), "env": env,
            "directory": directory}


def test_the_stop_block_is_what_a_held_drain_prints_and_the_resume_block_what_the_rerun_prints(stopped):
    assert_safe(stopped["invariants"])
    stop = excerpt(stopped["stop"], [r"\| step 1 \| drain \d+ nodes\]", r"\| keep the surge, resume the processes",
                                     r"\| stop, saying what blocked and what to do\]"])
    assert "PodDisruptionBudget shop/web allows 0 disruption(s)" in stop and "failed=1" in stop, stop
    check_or_refresh(QUICK_START, "stop", fenced(stop))
    resume = excerpt(stopped["resume"], [r"Scale up \| sandbox-nodes \| (surge by|taint)", r"Upgrade \| sandbox-nodes \| step \d+ \| (decide|terminate|drain)",
                                         r"Scale down \| sandbox-nodes \| restore"])
    # the steps of the rerun depend on when each drain ends: their sequence and the recap's counts are not compared
    check_or_refresh(QUICK_START, "resume", fenced(resume), loose=(
        (r"(?s)(TASK \[[^\n]*Upgrade \| sandbox-nodes \| step .*\n)(?=(\.\.\.\n)?TASK \[[^\n]*Scale down)", "<steps>\n"),
        (r"\b(ok|changed|skipped)=\d+", r"\1=<steps>")))


def test_the_awx_report_playbook_s_line_of_a_failed_rollout_is_what_it_prints_after_the_stop(stopped):
    """docs/awx.md's line of ``playbooks/report.yml`` after a failed rollout: that playbook run with the stopped run's
    artifact (its ``rolling_update_results``, which holds the group's result as the result file has it)."""
    stats = artifact(stopped["stop"])
    assert stats["rolling_update_results"] == {"sandbox": stopped["failed"]}, stats
    lines = report_lines(stats, str(stopped["directory"]), stopped["env"])
    assert len(lines) == 1 and re.search(r'"msg": "sandbox / sandbox-nodes: failed, \d+ nodes replaced - node ', lines[0]), lines
    assert "PodDisruptionBudget shop/web allows 0 disruption(s)" in lines[0], lines
    check_or_refresh(AWX_DOC, "report-failed", fenced(lines[0]))


def test_what_the_pace_decides_is_shown_and_compared_as_n():
    """A step terminates the drained instances whose post-drain delay has passed: how many, and the numbers of the steps
    after the first, differ from run to run; the docs show them as ``<n>`` and two runs that differ only there compare
    equal, while the first step and what the run was asked (the post-drain delay, the group's size) still count."""
    from tests.integration.doc_outputs import normalise, paced  # pylint: disable=import-outside-toplevel
    one = ("TASK [Upgrade | sandbox-nodes | step 2 | terminate 2 instances drained 1s or more ago (0 paying back surge, "
           "the others replaced)] ***\nTASK [Upgrade | sandbox-nodes | step 3 | decide (4/6 done)] ***")
    other = ("TASK [Upgrade | sandbox-nodes | step 3 | terminate 1 instance drained 1s or more ago (1 paying back surge, "
             "the others replaced)] ***\nTASK [Upgrade | sandbox-nodes | step 4 | decide (5/6 done)] ***")
    assert normalise(one) == normalise(other)
    assert paced(one) == ("TASK [Upgrade | sandbox-nodes | step <n> | terminate <n> instance(s) drained 1s or more ago (<n> paying "
                          "back surge, the others replaced)] ***\nTASK [Upgrade | sandbox-nodes | step <n> | decide (<n>/6 done)] ***")
    assert paced(paced(one)) == paced(one) and normalise(paced(one)) == normalise(one)   # what a doc shows compares equal
    assert paced("| step 1 | decide (0/6 done)") == "| step 1 | decide (0/6 done)"
    assert normalise("| step 1 | drain 6 nodes") != normalise("| step 1 | drain 5 nodes")
