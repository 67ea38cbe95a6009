"""Runs of nodeops.rollout.upgrade_serial over a sandbox's node groups, as the end-to-end tests of its stops and scope
make them: an inventory of the plugin nodeops.rollout.nodes, the playbook, its recap and result."""

import json
import os
import re
import subprocess

from tests.integration.controls import GROUP
from sandbox.drive.handle import BIN, ROOT, floor_until, promised_floor
from tests.integration.modules.conftest import assert_safe

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
PINNED = os.path.join("sandbox", "workloads", "pinned-by-budget.yaml")
FAST = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]


def inventory(sandbox, directory, groups=(GROUP,), image=None, current=False):
    """The inventory file of the plugin over ``groups``, rolled to ``image`` (the sandbox's new AMI by default), or with
    ``current`` to no target: the version each group launches now (its nodes annotated nodeops.rollout/needs-update are
    the outdated ones)."""
    path = directory / "sandbox.nodes.yml"
    path.write_text(json.dumps({   # JSON is YAML
        "plugin": "nodeops.rollout.nodes", "region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"],
        "kubeconfig": sandbox.collection_kubeconfig,   # the ServiceAccount's where docs/rbac.yaml is enforced
        "node_groups": [{"name": name} if current else {"name": name, "image_id": image or sandbox.state["amis"]["new"]}
                        for name in groups]}))
    return path


def serial(sandbox, directory, *extra, groups=(GROUP,), max_unavailable=1, options=(), image=None, current=False):
    """Run the serial playbook over the sandbox's groups (rolled to ``image``, the new AMI by default, or with ``current``
    to the version they launch now, :func:`inventory`) with the ``-e``
    items ``extra`` and the command line's ``options``; ``(rc, output, {group: result})`` (no result: ``{}``)."""
    report = directory / "result.json"
    if report.exists():
        report.unlink()
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory(sandbox, directory, groups, image, current)),
            os.path.join("playbooks", "upgrade_serial.yml"), "-e", "rolling_update_report_file=%s" % report,
            "-e", "rolling_update_max_unavailable=%d" % max_unavailable]
    for item in FAST + list(extra):
        argv += ["-e", item]
    argv += list(options)
    env = sandbox.ansible_env()
    env.pop("K8S_AUTH_KUBECONFIG", None)   # the inventory file's kubeconfig is the connection
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900, check=False)
    results = {group["name"]: group for group in json.loads(report.read_text())["node_groups"]} if report.exists() else {}
    return proc.returncode, proc.stdout, results


def recap(out):
    """``{host: (ok, failed)}`` from the play recap."""
    return {host: (int(ok), int(failed)) for host, ok, failed in
            re.findall(r"^(\S+) +: ok=(\d+) +changed=\d+ +unreachable=\d+ +failed=(\d+)", out, re.M)}


def assert_floor(sandbox, nodes, max_unavailable, group=GROUP):
    """The invariant report clean, and the group's Ready schedulable nodes never below the floor."""
    assert_safe(sandbox.report())
    assert floor_until(sandbox.events(), sandbox.now())[group] >= promised_floor(nodes, max_unavailable)
