# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet_state module's work: each action one change of the ledger (``fleet.ledger``) through the store
(``clients.fleet_store``), and the waits of a worker for the plan to be pinned and for its cluster's turn."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import aws_client
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.fleet_store import FleetStore
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.fleet import ledger
from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.waves import checked_forks, checked_settings, pinned_groups, wave_of
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import report_html_file


def utc_now():
    return datetime.now(timezone.utc)


def _need(params, *names):
    missing = [name for name in names if params.get(name) in (None, "")]
    if missing:
        raise RolloutError("%s: required for action=%s" % (", ".join(missing), params["action"]))


def _waited(store, decide, settled, params, sleep, clock, what):
    """Change the ledger with ``decide`` until ``settled(answer)``, every poll_interval, at most timeout."""
    poll = parse_duration(params["poll_interval"], "poll_interval", minimum=1)
    timeout = parse_duration(params["timeout"], "timeout", minimum=1)
    start = clock()
    while True:
        answer, document = store.change(decide)
        if settled(answer):
            return answer, document
        if clock() - start > timeout:
            raise RolloutError("waited %s for %s: %s" % (human_duration(timeout), what, answer[1] if isinstance(answer, tuple) else answer),
                               fleet=ledger.summary(document))
        sleep(poll)


def _join(params, store, sleep, clock):
    _need(params, "cluster", "worker_hosts")
    settings = checked_settings(params["waves"], params["max_failed_clusters"], params["workers"])
    checked_forks(params["forks"], len(params["worker_hosts"]))
    cluster = params["cluster"]
    wave = wave_of(cluster, params["groups"], settings["waves"])
    now = utc_now()

    def decide(document):
        document = document or ledger.new(params["fleet"], settings, now)
        if not document["pinned_at"] and cluster not in document["clusters"]:
            # pinned now, the first time the cluster joins: a rerun keeps what the plan pinned, whatever the SSM
            # parameter or $Latest name today
            try:
                node_groups, before = pinned_groups(params["node_groups"], params["targets"])
                unresolved = None
            except PlanError as exc:
                # the cluster joins all the same, left out with the reason: the other workers wait for no one
                node_groups, before, unresolved = [], [], exc.msg
            ledger.join(document, settings, cluster, wave, "+".join(sorted(params["worker_hosts"])), params["worker_hosts"],
                        node_groups, before, utc_now(), unresolved=unresolved)
        return document["pinned_at"], document

    pinned, document = _waited(store, decide, bool, params, sleep, clock, "every worker of fleet %s to join" % params["fleet"])
    entry = document["clusters"].get(cluster)
    return {"changed": store.writes > 0, "pinned_at": pinned, "in_plan": entry is not None,
            "cluster": entry, "fleet": ledger.summary(document)}


def _claim(params, store, sleep, clock):
    _need(params, "cluster", "run")
    gate_timeout = parse_duration(params["gate_timeout"], "gate_timeout", minimum=1)

    def decide(document):
        if document is None or not document["pinned_at"]:
            raise RolloutError("fleet %s has no pinned plan: its workers join it first (action=join)" % params["fleet"])
        return ledger.claim(document, params["cluster"], params["run"], utc_now(), gate_timeout, holder=params["holder"]), document

    (decision, why), document = _waited(store, decide, lambda answer: answer[0] != ledger.WAIT, params, sleep, clock,
                                        "the turn of cluster %s" % params["cluster"])
    entry = document["clusters"].get(params["cluster"]) or {}
    result = {"changed": store.writes > 0, "decision": decision, "reason": why, "node_groups": entry.get("node_groups"),
              "stopped_holder": entry.get("stopped_holder") if decision == ledger.START else None,
              "fleet": ledger.summary(document)}
    if decision == ledger.GATE:
        wave = entry["wave"] - 1
        gate = os.path.expanduser(document["waves"][wave]["gate"])
        result["gate"] = {"wave": wave, "name": document["waves"][wave]["name"],
                          "file": os.path.join(params["base_dir"] or "", gate)}
    return result


def _finish(params, store, sleep, clock):  # pylint: disable=unused-argument
    _need(params, "cluster", "run")
    outcome, reason, after = ledger.outcome_of(params["result"], params["failure"], params["busy"])
    page = report_html_file(params["report_file"]) or None

    def decide(document):
        return None, ledger.finish(document, params["cluster"], params["run"], outcome, reason, after, page, utc_now())

    _answer, document = store.change(decide)
    return {"changed": True, "outcome": outcome, "reason": reason, "fleet": ledger.summary(document)}


def _gate(params, store, sleep, clock):  # pylint: disable=unused-argument
    _need(params, "run", "wave")

    def decide(document):
        return None, ledger.record_gate(document, params["wave"], params["run"], params["passed"], params["gate_message"], utc_now())

    _answer, document = store.change(decide)
    return {"changed": True, "fleet": ledger.summary(document)}


def _report(params, store, sleep, clock):  # pylint: disable=unused-argument
    document, _version = store.read()
    entry = ((document or {}).get("clusters") or {}).get(params["cluster"])
    return {"changed": False, "fleet": ledger.summary(document), "cluster": entry,
            "published": {params["cluster"]: dict(entry, name=params["cluster"])} if entry else {}}


ACTIONS = {"join": _join, "claim": _claim, "finish": _finish, "gate": _gate, "report": _report}


@reports_errors
def run_fleet_state(module, sleep=time.sleep, clock=time.monotonic):
    params = module.params
    store = FleetStore(aws_client(module, "dynamodb"), params["table"], params["fleet"], sleep)
    diff = module._diff  # pylint: disable=protected-access
    before = ledger.summary(store.read()[0]) if diff else None
    result = ACTIONS[params["action"]](params, store, sleep, clock)
    if diff and result["changed"]:
        # the fleet as the ledger had it when the task started, and as the action left it
        header = "fleet %s (DynamoDB table %s)" % (params["fleet"], params["table"])
        result["diff"] = {"before_header": header, "after_header": header, "before": before, "after": result["fleet"]}
    module.exit_json(**result)
