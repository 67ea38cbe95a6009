"""A run that stopped cleanly or was rolled back on request is not drawn as a failure: the page's banner of a paused
group (a pause request, a run limited to some nodes) and of a group the rollback playbook rolled back has its own
colour, not the failure's red, and says what ends it - rendered in headless Chromium as a person opens the page.

The results are the fields the role writes for those stops (status and reason), rendered by the role's own filter in
one ansible-playbook run, as the role writes its page."""

import json
import os
import subprocess
import sys

from sandbox.drive.handle import BIN, ROOT
from tests.integration.browser import FAILED_BANNER, HELD_BANNER, ROLLED_BACK_BANNER, banners

WRITE = """\
- name: Write each page with the role's filter
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Write a page
      ansible.builtin.copy:
        content: "{{ item.result | nodeops.rollout.report_html(item.cluster) }}"
        dest: "{{ item.path }}"
        mode: "0644"
      loop: "{{ pages }}"
"""


def group(status, reason=None, message=None, **fields):
    entry = dict({"name": "sandbox-nodes", "status": status, "plan": {"outdated": ["i-1", "i-2", "i-3"]}, "steps": [],
                  "new_nodes": [], "nodes_replaced": 1, "seconds": 42.0,
                  "timeline": {"started_at": "2026-12-01T08:00:00Z", "ended_at": "2026-12-01T08:00:42Z", "phases": []}}, **fields)
    if reason:
        entry.update(reason=reason, message=message)
    return entry


def write_pages(tmp_path, pages):
    """``{name: (group entry, cluster)}`` -> ``{name: path}``: each page written by the filter nodeops.rollout.report_html."""
    entries = [{"path": str(tmp_path / ("%s.html" % name)), "cluster": cluster,
                "result": {"started_at": "2026-12-01T08:00:00Z", "node_groups": [entry]}} for name, (entry, cluster) in pages.items()]
    playbook, extra = tmp_path / "write.yml", tmp_path / "pages.json"
    playbook.write_text(WRITE)
    extra.write_text(json.dumps({"pages": entries}))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(playbook), "-e", "@" + str(extra),
                           "-e", "ansible_python_interpreter=" + sys.executable],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return {name: tmp_path / ("%s.html" % name) for name in pages}


def banner(tmp_path, page):
    found = banners(page, tmp_path)["banners"]
    assert len(found) == 1, json.dumps(found)
    return found[0]


def test_a_paused_a_limited_and_a_rolled_back_page_are_not_drawn_in_the_failure_s_red(tmp_path):
    pages = write_pages(tmp_path, {
        "failed": (group("failed", "drain", "node ip-10-0-0-5.ec2.internal not drained after 30s"), "sandbox"),
        "paused": (group("paused", "requested", "a pause was requested (tag nodeops.rollout/pause)"), "sandbox"),
        # the serial playbook's page: no cluster, the title names the node group
        "limited": (group("paused", "limited", "2 outdated node(s) were not replaced: they were outside this run (the play "
                          "was limited); run again to go on"), None),
        "rolled-back": (group("rolled back"), "sandbox")})
    failed, paused, limited, rolled = (banner(tmp_path, pages[name]) for name in ("failed", "paused", "limited", "rolled-back"))
    assert "<h1>Node rollout of node group sandbox-nodes</h1>" in pages["limited"].read_text()
    # the failure's red is the failure's alone; a clean stop has one colour, a rollback another
    assert failed["background"] == FAILED_BANNER, failed
    assert paused["background"] == limited["background"] == HELD_BANNER, (paused, limited)
    assert rolled["background"] == ROLLED_BACK_BANNER, rolled
    # and each says what ends it, in words that fit what happened
    assert "Remove the request and run the same playbook again" in paused["text"], paused["text"]
    assert "The run was limited to some of the outdated nodes" in limited["text"], limited["text"]
    assert "Node group sandbox-nodes: rolled back" in rolled["text"] and "The rollback playbook moved the group back" in rolled["text"]
    assert "nodes failed" not in rolled["text"], rolled["text"]
    assert "Fix the cause" in failed["text"], failed["text"]
