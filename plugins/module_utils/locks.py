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

from ansible_collections.nodeops.rollout.plugins.module_utils import lease_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.backoff import backoff_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import ApiException, KubeApi, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.values import parse_duration

# Reads and writes of one decision before a run of 409s is reported.
CONFLICT_ATTEMPTS = 5
MANAGED_BY = {"app.kubernetes.io/managed-by": "nodeops.rollout"}
GROUP_ANNOTATION = "nodeops.rollout/node-group"


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


def _body(lease, namespace, name, group, spec):
    if lease is None:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY),
                             "annotations": {GROUP_ANNOTATION: group}},
                "spec": spec}
    body = dict(lease, apiVersion="coordination.k8s.io/v1", kind="Lease")
    body["spec"] = dict(lease.get("spec") or {}, **spec)   # fields this collection does not know are kept
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
         renew_only=False, fresh_for=None):
    """Acquire, take over or renew the Lease of ``group`` for ``duration`` seconds (only renew it, ``renew_only``; and
    with ``fresh_for``, not while the Lease read stays ours for that many seconds more: another process of this run
    renewed it, and ``action`` is ``keep``).

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
        body = _body(lease, namespace, name, group, decision["spec"])
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
    With ``quiet_for`` (the release of a run that is gone), raises LockAlive when the holder renewed it within that many
    seconds."""
    name = lease_lock.lease_name(group)
    for attempt in range(attempts):
        lease = _read(api, namespace, name)
        moment = now()
        decision = lease_lock.decide_release(lease, holder, moment, quiet_for)
        if decision["action"] == "refuse":
            raise LockAlive(lease_lock.release_refusal(group, namespace, name, decision["state"], quiet_for, moment),
                            action="refuse", holder=decision["state"]["holder"])
        if decision["action"] == "none":
            result = _outcome("none", namespace, name, lease, decision, moment)
            result["reason"] = decision["reason"]
            return result
        body = _body(lease, namespace, name, group, decision["spec"])
        if check_mode:
            return _outcome("release", namespace, name, body, decision, moment)
        written = _write(api, lease, namespace, name, body)
        if written is not None:
            return _outcome("release", namespace, name, written, decision, moment)
        if sleep is not None:
            sleep(backoff_delay(attempt + 1, base=0.1, cap=1.0))
    raise LockContended("Lease %s/%s of node group %s: %d releases in a row met a concurrent change (409); giving up"
                        % (namespace, name, group, attempts))


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
        quiet_for = (lease_lock.DEFAULT_SECONDS if str(params["unless_renewed_within"]).strip() == ""
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
            result = hold(api, params["name"], namespace, holder, duration, module.check_mode, now=now, sleep=api.sleep)
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
