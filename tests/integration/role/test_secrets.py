"""Secrets stay secret: an upgrade run with an AWS secret key, a session token and a Kubernetes bearer token, at
-vvv, failing mid-run (a budget that never allows, after the surge and the taint), shows none of them - not in
stdout or stderr, the result fact, the report file or the statistics AWX turns into the job's artifacts."""

import json
import os
import subprocess
import sys
import uuid

import pytest

from sandbox.drive.handle import BIN, ROOT
from tests.integration.modules.conftest import assert_safe
from tests.integration.workloads import pin_a_pod

GROUP = "sandbox-nodes"

# The run ends by printing the result fact; a failed run's play stops before the collection's own "Show the result".
PLAYBOOK = """\
- name: Upgrade, then show what a caller of the role gets back, also after a failure
  hosts: clusters
  connection: local
  gather_facts: false
  tasks:
    - name: Roll every node group of this cluster
      block:
        - name: Roll
          ansible.builtin.include_role:
            name: nodeops.rollout.rolling_update
      always:
        - name: The result fact
          ansible.builtin.debug:
            var: rolling_update_result
"""


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def test_no_secret_appears_anywhere_in_a_failed_run_at_vvv(sandbox, tmp_path):
    # held by a pod that never starts: the run starts, changes the group, then fails at the drain
    pin_a_pod(sandbox, for_now=True)
    secrets = {"secret_key": "awsSECRET" + uuid.uuid4().hex, "session_token": "awsSESSION" + uuid.uuid4().hex,
               "api_key": "k8sTOKEN" + uuid.uuid4().hex}
    report = tmp_path / "result.json"
    host = {
        "ansible_python_interpreter": sys.executable,
        "rolling_update_aws": {"region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"],
                               "access_key": "AKIASANDBOXTESTING00", "secret_key": secrets["secret_key"],
                               "session_token": secrets["session_token"]},
        # the kubeconfig says where; the token rides on top of it, as an AWX credential's would
        "rolling_update_k8s": {"kubeconfig": sandbox.state["kubeconfig"], "api_key": secrets["api_key"]},
        "rolling_update_node_groups": [{"name": GROUP, "image_id": sandbox.state["amis"]["new"]}],
        "rolling_update_report_file": str(report),
        "rolling_update_drain_timeout": "15s", "rolling_update_restart_single_replica": "false",
        "rolling_update_max_unavailable": "3", "rolling_update_post_drain_delay": "1",
    }
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(json.dumps({"clusters": {"hosts": {"cluster": host}}}))
    playbook = tmp_path / "upgrade.yml"
    playbook.write_text(PLAYBOOK)
    env = sandbox.ansible_env({"ANSIBLE_SHOW_CUSTOM_STATS": "1"})   # what AWX stores as the job's artifacts
    for name in ("K8S_AUTH_KUBECONFIG", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-vvv", "-i", str(inventory), str(playbook)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900, check=False)
    out = proc.stdout + proc.stderr
    # the run must have got far enough for the test to mean something: the secrets were used, then it failed mid-run
    assert proc.returncode != 0, out[-3000:]
    assert "pinned" in out and "Upgrade | %s" % GROUP in out, out[-3000:]
    assert "rolling_update_results" in out   # the custom statistics were shown
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in out   # the modules were given the secrets, and censored them
    result = json.loads(report.read_text())
    assert result["node_groups"][0]["status"] == "failed", result
    assert any(e["kind"] == "k8s.request" and str(e.get("client", "")).startswith("nodeops.rollout") and e.get("mutating")
               for e in sandbox.events()), "the rollout made no change: the failure came too early to mean anything"
    for name, value in secrets.items():
        assert value not in out, "%s appears in the output" % name
        assert value not in report.read_text(), "%s appears in the report file" % name
    assert_safe(sandbox.report())
