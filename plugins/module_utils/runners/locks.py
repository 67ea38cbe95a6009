# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Hold or give up a node group's Lease: read it, decide (``lease_lock``), write with the resourceVersion read.

Two runs that read the same Lease and both decide to take it race on the write: the API accepts the first and
answers the second 409 (AlreadyExists on create, Conflict on a stale resourceVersion). The loser reads the Lease
again and decides again, so it now sees the winner as the holder and is refused.
"""

from __future__ import annotations

import datetime
import json
import os
import socket

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import ApiException, KubeApi, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import backoff_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import parse_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import lease_lock

# Reads and writes of one decision before a run of 409s is reported.
CONFLICT_ATTEMPTS = 5
MANAGED_BY = {"app.kubernetes.io/managed-by": "nodeops.rollout"}
GROUP_ANNOTATION = "nodeops.rollout/node-group"
# The holder's process, written when a run takes the Lease: {"host", "boot_id", "pid", "start"} as JSON. The unlock of a
# run said to be gone, started on the same machine (same host name and boot), sees whether that process still runs.
PROCESS_ANNOTATION = "nodeops.rollout/holder-process"
# how far up from the module's process the run's ansible-playbook is looked for (the task's worker, the controller)
ANCESTORS = 8


class LockHeld(RolloutError):
    """Another run holds the Lease; the message names it and says until when, the details say who and the Lease."""

    def __init__(self, message, state, namespace, name):
        super().__init__(message, action="refuse", holder=state["holder"],
                         lease={"name": name, "namespace": namespace, "holder": state["holder"],
                                "expires_at": lease_lock.micro_time(state["expires"]) if state["expires"] else None})
        self.state = state


class LockGone(RolloutError):
    """A renewal found the Lease no longer ours: released, deleted, or free after it expired (``renew_only``)."""


class LockContended(RolloutError):
    """Every write met a concurrent writer (409) until the attempts ran out."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def _read(api, namespace, name):
    try:
        return api.get_lease(namespace, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def proc_stat(pid):
    """The fields of /proc/<pid>/stat after the command's name (state first), or None where it cannot be read."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError):
        return None


def command_line(pid):
    """The command line of process ``pid`` from /proc, its arguments space-separated; empty where it cannot be read."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def this_machine():
    """``{"host", "boot_id"}`` of the machine this runs on (boot_id None where the kernel does not say it)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as handle:
            boot_id = handle.read().strip() or None
    except OSError:
        boot_id = None
    return {"host": socket.gethostname(), "boot_id": boot_id}


def run_process():
    """The run's own process as the Lease records it - the topmost ansible-playbook above this module (the controller
    of the run; its task workers are forks of it) with its start time, which a reused pid does not have - or None where
    it cannot be told (no /proc, no ansible-playbook above)."""
    machine = this_machine()
    found, pid = None, os.getpid()
    for _step in range(ANCESTORS):
        stat = proc_stat(pid)
        if stat is None:
            break
        if "ansible-playbook" in command_line(pid):
            found = (pid, stat[19])
        pid = int(stat[1])
        if pid <= 1:
            break
    if found is None or machine["boot_id"] is None:
        return None
    return dict(machine, pid=found[0], start=found[1])


def holder_process(lease):
    """What can be seen from here of the holder's process the Lease records: None when it records none (or not in a
    form this collection writes), else ``{"here", "alive", "pid", "host"}`` - ``here`` when it is on this machine (same
    host name, same boot), and then ``alive`` whether that process still runs (the same pid with the same start time,
    not a zombie)."""
    annotations = ((lease or {}).get("metadata") or {}).get("annotations") or {}
    try:
        recorded = json.loads(annotations.get(PROCESS_ANNOTATION) or "null")
        pid = int(recorded["pid"])
    except (ValueError, TypeError, KeyError):
        return None
    machine = this_machine()
    here = machine["boot_id"] is not None and (recorded.get("host"), recorded.get("boot_id")) == (machine["host"], machine["boot_id"])
    alive = None
    if here:
        stat = proc_stat(pid)
        alive = stat is not None and stat[0] not in ("Z", "X") and stat[19] == str(recorded.get("start"))
    return {"here": here, "alive": alive, "pid": pid, "host": recorded.get("host")}


def _body(lease, namespace, name, group, spec, process=None):
    """The Lease to write: ``spec`` over the one read; ``process`` (:func:`run_process`) recorded as the new holder's, or,
    with False, the record of the holder that lets it go taken off."""
    if lease is None:
        annotations = {GROUP_ANNOTATION: group}
        if process:
            annotations[PROCESS_ANNOTATION] = json.dumps(process, sort_keys=True)
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY), "annotations": annotations},
                "spec": spec}
    body = dict(lease, apiVersion="coordination.k8s.io/v1", kind="Lease")
    body["spec"] = dict(lease.get("spec") or {}, **spec)   # fields this collection does not know are kept
    if process is not None:
        metadata = dict(lease.get("metadata") or {})
        annotations = dict(metadata.get("annotations") or {})
        annotations.pop(PROCESS_ANNOTATION, None)
        if process:
            annotations[PROCESS_ANNOTATION] = json.dumps(process, sort_keys=True)
        metadata["annotations"] = annotations
        body["metadata"] = metadata
    return body


def _write(api, lease, namespace, name, body):
    """Create or replace; None when a concurrent writer won (409) or the Lease went away (404 on replace)."""
    try:
        if lease is None:
            return api.create_lease(namespace, body)
        return api.replace_lease(namespace, name, body)
    except ApiException as exc:
        if exc.status == 409 or (exc.status == 404 and lease is not None):
            return None
        raise


def _outcome(action, namespace, name, written, decision, now):
    state = decision["state"] or {}
    result = {"changed": action in ("create", "acquire", "take_over", "renew", "release"), "action": action,
              "lease": dict(lease_lock.lease_result(written, now), name=name, namespace=namespace),
              "previous_holder": state.get("holder") or None}
    if action == "renew":
        result["was_expired"] = bool(state.get("expired"))
    return result


def hold(api, group, namespace, holder, duration, check_mode=False, now=utc_now, attempts=CONFLICT_ATTEMPTS, sleep=None,
         renew_only=False, fresh_for=None, process=None):
    """Acquire, take over or renew the Lease of ``group`` for ``duration`` seconds (only renew it, ``renew_only``; and
    with ``fresh_for``, not while the Lease read stays ours for that many seconds more: another process of this run
    renewed it, and ``action`` is ``keep``). A Lease this call takes records ``process`` (:func:`run_process`) as its
    holder's; a renewal keeps what the Lease records.

    Returns the module's result (``changed``, ``action``, ``lease``, ``previous_holder``). Raises LockHeld when
    another run holds it, LockGone when ``renew_only`` finds it no longer ours, LockContended after ``attempts`` lost
    races, ApiException for other API errors. In check mode the Lease is read and the decision reported; nothing is
    written."""
    name = lease_lock.lease_name(group)
    for attempt in range(attempts):
        lease = _read(api, namespace, name)
        moment = now()
        decision = lease_lock.decide_acquire(lease, holder, moment, duration)
        if decision["action"] == "refuse":
            raise LockHeld(lease_lock.refusal_message(group, namespace, name, decision["state"], moment), decision["state"],
                           namespace, name)
        if fresh_for is not None and decision["action"] == "renew" and decision["state"]["expires"] is not None \
                and (decision["state"]["expires"] - moment).total_seconds() >= fresh_for:
            return _outcome("keep", namespace, name, lease, decision, moment)
        if renew_only and decision["action"] != "renew":
            raise LockGone("Lease %s/%s of node group %s is no longer held by %s (%s)"
                           % (namespace, name, group, holder, "it is gone" if lease is None
                              else "held by %s now" % (decision["state"]["holder"] or "nobody")))
        taken = decision["action"] in ("create", "acquire", "take_over")
        body = _body(lease, namespace, name, group, decision["spec"], (process or False) if taken else None)
        if check_mode:
            return _outcome(decision["action"], namespace, name, body, decision, moment)
        written = _write(api, lease, namespace, name, body)
        if written is not None:
            return _outcome(decision["action"], namespace, name, written, decision, moment)
        if sleep is not None:
            sleep(backoff_delay(attempt + 1, base=0.1, cap=1.0))
    raise LockContended("Lease %s/%s of node group %s: %d writes in a row met a concurrent change (409); giving up"
                        % (namespace, name, group, attempts))


class LockAlive(RolloutError):
    """The release of a run said to be gone was refused: its holder renewed the Lease lately."""


def release(api, group, namespace, holder, check_mode=False, now=utc_now, attempts=CONFLICT_ATTEMPTS, sleep=None,
            quiet_for=None):
    """Clear ``holder``'s hold on the Lease of ``group`` (a Lease that is not its is left alone); the module's result.
    With ``quiet_for`` (the release of a run said to be gone, by another process), raises LockAlive when that run is alive as
    far as can be known (``lease_lock.decide_release``): its process, recorded in the Lease, runs on this machine, or,
    recorded elsewhere or not at all, the holder renewed it within ``quiet_for`` seconds (``"renewals"``: the longest a
    live holder of its duration goes without). The result's ``reason`` then says why the run was taken for gone."""
    name = lease_lock.lease_name(group)
    for attempt in range(attempts):
        lease = _read(api, namespace, name)
        moment = now()
        process = holder_process(lease) if quiet_for is not None else None
        decision = lease_lock.decide_release(lease, holder, moment, quiet_for, process)
        if decision["action"] == "refuse":
            raise LockAlive(lease_lock.release_refusal(group, namespace, name, decision["state"], quiet_for, moment, process),
                            action="refuse", holder=decision["state"]["holder"])
        if decision["action"] == "none":
            result = _outcome("none", namespace, name, lease, decision, moment)
            result["reason"] = decision["reason"]
            return result
        body = _body(lease, namespace, name, group, decision["spec"], False)
        if check_mode:
            return dict(_outcome("release", namespace, name, body, decision, moment), **_gone_reason(decision))
        written = _write(api, lease, namespace, name, body)
        if written is not None:
            return dict(_outcome("release", namespace, name, written, decision, moment), **_gone_reason(decision))
        if sleep is not None:
            sleep(backoff_delay(attempt + 1, base=0.1, cap=1.0))
    raise LockContended("Lease %s/%s of node group %s: %d releases in a row met a concurrent change (409); giving up"
                        % (namespace, name, group, attempts))


def _gone_reason(decision):
    return {"reason": decision["reason"]} if decision.get("reason") else {}


@reports_errors
def run_rollout_lock(module, make_client, now=utc_now):
    """rollout_lock: validate, build the client (``make_client(module)``), hold or release; exits the module."""
    params = module.params
    holder = lease_lock.check_holder(params["holder"])
    name = lease_lock.lease_name(params["name"])
    duration = None
    namespace = params["namespace"]
    min_valid_for = None if params.get("min_valid_for") is None else parse_duration(params["min_valid_for"], "min_valid_for")
    quiet_for = None
    if params.get("unless_renewed_within") is not None:
        if params["state"] != "released":
            raise lease_lock.LockError("unless_renewed_within: not allowed with state=acquired; it guards the release of a "
                                       "run that is gone (state=released)")
        # empty: the longest a live holder goes without renewing a Lease of the duration it wrote
        quiet_for = ("renewals" if str(params["unless_renewed_within"]).strip() == ""
                     else parse_duration(params["unless_renewed_within"], "unless_renewed_within", minimum=1))
    if params["state"] == "acquired":
        duration = lease_lock.check_duration(_duration_seconds(params["duration"]))
        if lease_lock.still_held(params.get("held_until"), min_valid_for, now()):
            module.exit_json(changed=False, action="keep", previous_holder=holder,
                             lease={"name": name, "namespace": namespace, "holder": holder,
                                    "expires_at": params["held_until"]})
    elif params.get("held_until") is not None or min_valid_for is not None:
        raise lease_lock.LockError("held_until, min_valid_for: not allowed with state=released; a release always writes")
    api = KubeApi(make_client(module))
    verb = "take" if params["state"] == "acquired" else "release"
    with kube_errors(verb, "Lease %s/%s of node group %s" % (namespace, name, params["name"]), detailed=True):
        if params["state"] == "acquired":
            result = hold(api, params["name"], namespace, holder, duration, module.check_mode, now=now, sleep=api.sleep,
                          process=run_process())
        else:
            result = release(api, params["name"], namespace, holder, module.check_mode, now=now, sleep=api.sleep,
                             quiet_for=quiet_for)
    if module._diff and result["changed"]:  # pylint: disable=protected-access
        header = "Lease %s/%s of node group %s" % (namespace, name, params["name"])
        lease = result["lease"]
        result["diff"] = {"before_header": header, "after_header": header, "before": {"holder": result["previous_holder"]},
                          "after": {"holder": lease.get("holder"), "expires_at": lease.get("expires_at")}}
    module.exit_json(**result)


def _duration_seconds(value):
    """``duration``: seconds or a duration string, or a list of them added up."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise lease_lock.LockError("duration: an empty list is not allowed; use a duration such as '30m'")
    return sum(parse_duration(item, "duration") for item in values)
