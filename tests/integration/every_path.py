"""Every path of the role run to its end on one sandbox, in the order an operator meets them: what the least-privilege
tests run with nothing but the documented permissions (docs/rbac.yaml's ServiceAccount, docs/iam-policy.json's IAM
user), each path's requests kept by a ``usage`` of the test's (which rule or statement each request needed).

The paths: the plan (its access check finds nothing missing; nothing changed), a second run refused by the lock, an
upgrade stopped by a PodDisruptionBudget, the rollback of that held rollout, a rollout paused from outside once it
cordons its first node, the cancel of it, upgrade_serial over the inventory plugin taking every node back to the first
image, and an upgrade of every node to the new one. Then a rollout back to the first image stopped by the budget
again, which the same run resumes to its end once the budget allows (run, not kept in the tables: what a resumed run
meets depends on where the stopped one left the pods); every node ends on the first image."""

import json

from sandbox.drive.tags import PAUSE_TAG, delete_tag, set_tag
from tests.integration.controls import GROUP, QUICK, Watcher, group_view, lock_holder, node_marks, result_of
from tests.integration.serial_runs import serial
from tests.integration.workloads import hold_for_now, let_go


def cordoned(event):
    """A node cordoned (by the rollout: nothing else cordons while it runs; the reference backend's observer names no
    client for a node's change)."""
    return event["kind"] == "node.cordoned"


def first_image(sandbox):
    """``node_groups`` rolling the sandbox's group back to the image it started on."""
    return [{"name": GROUP, "image_id": sandbox.state["amis"]["old"]}]


PATHS = ("plan", "lock held", "PDB stop", "rollback", "pause", "cancel", "serial", "upgrade")


class Paths:
    """Runs of the role's playbooks on ``sandbox`` (files in ``directory``); ``usage(since)`` says what a run asked of
    the APIs since the sandbox time ``since``, kept in ``used[path]``."""

    def __init__(self, sandbox, directory, usage):
        self.sandbox, self.directory, self.usage = sandbox, directory, usage
        self.used = {}

    def run(self, path, playbook="upgrade.yml", extra=(), check=False, node_groups=None, host_vars=None, record=True):
        """Run ``playbook``; its usage is kept under ``path`` (unless not ``record``); ``(rc, output, result)`` (no
        result file: ``{}``)."""
        report = self.directory / ("%s.json" % path.replace(" ", "-").replace(",", ""))
        if report.exists():
            report.unlink()
        since = self.sandbox.now()
        rc, out = self.sandbox.run_role_playbook(self.directory, playbook=playbook, report=report, check=check,
                                                 extra=QUICK + list(extra), node_groups=node_groups, host_vars=host_vars)
        if record:
            self.keep(path, self.usage(since))
        return rc, out, result_of(report) if report.exists() else {}

    def keep(self, path, usage):
        """Add what a run of ``path`` used (``{rule or statement: set}``) to what earlier runs of it used."""
        kept = self.used.setdefault(path, {})
        for key, values in usage.items():
            kept.setdefault(key, set()).update(values)

    def pdb_stop(self, path, node_groups=None, record=True):
        """A run stopped in its drain by a PodDisruptionBudget that lets nothing go while it runs (web's asks for all
        three of its Ready pods, a fourth never starts): held, the lock released; the budget is put back after it. (One
        that could never let a pod go would stop the run before any change.)"""
        policy = self.sandbox.policy()
        policy.patch_namespaced_pod_disruption_budget("web", "shop", {"spec": {"minAvailable": 3}})
        hold_for_now(self.sandbox, "shop", "web")
        try:
            rc, out, result = self.run(path, extra=["rolling_update_drain_timeout=20s"], node_groups=node_groups, record=record)
        finally:
            policy.patch_namespaced_pod_disruption_budget("web", "shop", {"spec": {"minAvailable": 2}})
            let_go(self.sandbox, "shop", "web")
        assert rc != 0 and result["status"] == "failed" and "shop/web" in json.dumps(result), out[-3000:]
        assert result.get("permission") is None and lock_holder(self.sandbox) is None

    def every_path(self, nodes):
        """Each of PATHS to its end, with what a user would check of each."""
        sandbox = self.sandbox
        original = group_view(sandbox)

        # the plan: the access check finds nothing missing; nothing is changed
        since = sandbox.now()
        rc, out, result = self.run("plan", check=True)
        assert rc == 0 and result["status"] == "planned", out[-3000:]
        assert "every permission the rollout needs is granted" in out, out[-3000:]
        assert sandbox.mutating_requests(since=since) == []

        # the lock: a run while another holds it stops before any change, naming the holder
        holder = {"name": GROUP, "holder": "awx-job-7@elsewhere/0", "duration": "5m"}
        taken = sandbox.run_module("rollout_lock", **holder)
        assert taken["rc"] == 0, taken["output"]
        try:
            since = sandbox.now()
            rc, out, result = self.run("lock held")
            assert rc != 0 and "awx-job-7@elsewhere/0" in out, out[-3000:]
            assert [event for event in sandbox.mutating_requests(since=since) if event.get("resource") != "leases"] == []
        finally:
            assert sandbox.run_module("rollout_lock", state="released", **holder)["rc"] == 0

        # a PodDisruptionBudget that lets nothing go stops the drain: held, the lock released
        self.pdb_stop("PDB stop")

        # the held rollout rolled back to the version the group launched before
        rc, out, result = self.run("rollback", playbook="rollback.yml")
        assert rc == 0 and result["status"] == "rolled back", out[-3000:]

        # a rollout paused from outside once it cordons its first node: it stops cleanly before its next step, with no
        # instance terminated (the drain and a post-drain delay of 5 s leave the pause time to land before it)
        watcher = Watcher(sandbox, sandbox.now(), cordoned, lambda event: set_tag(sandbox, PAUSE_TAG, "true"))
        watcher.start()
        try:
            rc, out, result = self.run("pause", extra=["rolling_update_post_drain_delay=5"])
        finally:
            watcher.stop()
        assert watcher.fired is not None and rc == 0 and result["status"] == "paused", out[-3000:]
        assert result["nodes_replaced"] == 0, result

        # the cancel gives the surge back and releases every node
        rc, out, result = self.run("cancel", playbook="cancel.yml")
        assert rc == 0 and result["status"] == "cancelled", out[-3000:]
        delete_tag(sandbox, PAUSE_TAG)
        assert group_view(sandbox)["sizes"] == original["sizes"] and node_marks(sandbox) == {}

        # upgrade_serial over the inventory plugin (which reads the cluster and AWS as the collection does): every node
        # back on the group's first image
        since = sandbox.now()
        rc, out, results = serial(sandbox, self.directory, image=sandbox.state["amis"]["old"])
        self.keep("serial", self.usage(since))
        assert rc == 0 and results.get(GROUP, {}).get("status") == "replaced", out[-5000:]

        # an upgrade to its end: every node on the new image again
        rc, out, result = self.run("upgrade")
        assert rc == 0 and result["status"] == "replaced" and result["nodes_replaced"] == nodes, out[-3000:]
        assert lock_holder(sandbox) is None and node_marks(sandbox) == {}

        # a rollout back to the first image stopped by the budget, then the same run resumes it to its end once the budget
        # allows (not in the tables: what a resumed run meets depends on where the stopped one left the pods)
        self.pdb_stop("PDB stop", node_groups=first_image(sandbox), record=False)
        rc, out, result = self.run("resume", node_groups=first_image(sandbox), record=False)
        assert rc == 0 and result["status"] == "replaced" and result["plan"]["resumed"] is True, out[-3000:]
        assert lock_holder(sandbox) is None and node_marks(sandbox) == {}
