"""What docs/awx.md shows of a job's artifact: the ``rolling_update_results`` statistic a run published with
``set_stats`` (``ANSIBLE_SHOW_CUSTOM_STATS=true`` prints it under ``RUN:``), trimmed as the doc trims it, and the lines
the doc's workflow playbook ``playbooks/report.yml`` prints from it, run as a workflow node runs it (the artifact as
extra variables)."""

import json
import os
import re
import subprocess

from sandbox.drive.handle import BIN, ROOT

AWX_DOC = "docs/awx.md"
# the group's fields the doc's sample keeps, in this order; its batches are shown as ["..."]
KEPT = ("name", "status", "nodes_replaced", "evictions", "batches", "phase_seconds")


def artifact(output):
    """The run's global statistics (``{"rolling_update_results": ...}``) from an ansible-playbook output printed with
    ``ANSIBLE_SHOW_CUSTOM_STATS=true``; AssertionError when there are none."""
    found = re.search(r"^\s*RUN: (\{.*\})\s*$", output, re.M)
    assert found, "no RUN: statistics in the output (ANSIBLE_SHOW_CUSTOM_STATS=true?): %s" % output[-2000:]
    return json.loads(found.group(1))


def trimmed(stats):
    """``stats`` as the doc shows them: per cluster ``changed`` and each node group's :data:`KEPT` fields, its batches
    as ``["..."]``."""
    results = {}
    for cluster, result in stats["rolling_update_results"].items():
        groups = [{key: _shown(key, group[key]) for key in KEPT if key in group} for group in result["node_groups"]]
        results[cluster] = {"changed": result["changed"], "node_groups": groups}
    return {"rolling_update_results": results}


def _shown(key, value):
    if key == "batches":
        return ["..."]
    return dict(sorted(value.items())) if isinstance(value, dict) else value


def shown_json(stats):
    """:func:`trimmed` ``stats`` as JSON the way the doc prints them: indented, each group's batches and phase seconds
    on one line."""
    text = json.dumps(trimmed(stats), indent=2)
    text = re.sub(r'"batches": \[\s*"\.\.\."\s*\]', '"batches": ["..."]', text)
    return re.sub(r'("phase_seconds": )\{([^{}]*)\}', lambda found: found.group(1) + "{" + ", ".join(
        part.strip() for part in found.group(2).split(",")) + "}", text)


def report_playbook():
    """The workflow playbook of the doc: its YAML block that names the play ``Report the rollout of every cluster``."""
    with open(os.path.join(ROOT, AWX_DOC), encoding="utf-8") as fh:
        text = fh.read()
    blocks = [block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if "name: Report the rollout of every cluster" in block]
    assert len(blocks) == 1, "%s: one YAML block naming the play 'Report the rollout of every cluster', found %d" % (AWX_DOC, len(blocks))
    return blocks[0]


def report_lines(stats, directory, env):
    """The ``"msg": ...`` lines ``playbooks/report.yml`` prints when ``stats`` (a run's artifact) are its extra
    variables, run in ``directory`` (written there) with ``env``."""
    playbook, variables = os.path.join(directory, "report.yml"), os.path.join(directory, "artifact.json")
    with open(playbook, "w", encoding="utf-8") as fh:
        fh.write(report_playbook())
    with open(variables, "w", encoding="utf-8") as fh:
        json.dump(stats, fh)
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", playbook, "-e", "@" + variables],
                          cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return [line.rstrip() for line in proc.stdout.splitlines() if re.match(r'^\s+"msg": ', line)]
