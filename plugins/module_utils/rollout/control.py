# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The operator's controls over a rollout that is running, decided between its steps, and what a failure leads to. Pure.

Before every step (``rollout_step``, and while it waits):

- an **abort alarm** (a CloudWatch alarm the operator named) in state ``ALARM`` stops the rollout as a failure of
  the new nodes: the role then holds the group or rolls it back (``rolling_update_on_failure``);
- a **pause request**, the tag ``nodeops.rollout/pause`` with a true value on the group (set by an operator or another
  tool; not part of the rollout's state), stops it cleanly: the group is held, and the next run resumes it once the
  tag is gone;
- a **maintenance window** that closes before the next step could finish (its predicted duration) stops it cleanly
  too, until the next run inside a window;
- an **abort alert** (an alert of Alertmanager that the matchers of ``rolling_update_abort_alerts`` match, firing,
  neither silenced nor inhibited) stops it as an abort alarm does; a **pause alert** (``rolling_update_pause_alerts``)
  holds the next step back as a blocking pod does, until it clears (:func:`hold_for_alerts`);
- a **blocking pod** (one that a selector of ``rolling_update_blocking_pods`` selects, as kured's
  ``blockingPodSelector``: a backup, a migration) running anywhere holds the step back: it waits, and goes on once no
  such pod runs (:func:`hold_for_pods`).

Nothing stops a rollout that is done but an alarm or an abort alert: the scale down only gives back.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import permission_text
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import truthy
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.state import TAG_PAUSE
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import WAIT
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.window import closing, local_text, start_refusal as window_refusal
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.window import window_state

PAUSE_TAG = TAG_PAUSE
ALARM = "ALARM"
# what a stopped rollout's result says
PAUSED_REQUESTED = "requested"
PAUSED_WINDOW = "window closed"
PAUSED_ALERT = "alert firing"

ON_FAILURE = ("hold", "rollback")
# failures that say the new nodes are bad, so that rolling back helps (see failure_cause)
NODE_CREATION = "NodeCreationFailure"


def pause_requested(tags):
    """Whether the group's tags (``{key: value}``) ask the rollout to pause."""
    return truthy((tags or {}).get(PAUSE_TAG))


def firing(alarms):
    """The alarms (``[{"name", "state", "reason"}]``, as ``clients.aws.alarm_states`` returns them) in state ALARM."""
    return [alarm for alarm in alarms or () if alarm.get("state") == ALARM]


def alarm_message(alarms):
    """``abort alarm 'api-5xx' is in ALARM (Threshold Crossed: ...)`` for the alarms firing."""
    return "; ".join("abort alarm '%s' is in ALARM%s" % (alarm["name"], " (%s)" % alarm["reason"] if alarm.get("reason") else "")
                     for alarm in alarms)


# how often a step held by blocking pods looks again (seconds)
BLOCKING_POLL_SECONDS = 5


def running_pods(pods):
    """``namespace/name`` of the pods that have not ended (any phase but Succeeded and Failed; a pod on its way out still runs)."""
    return sorted("%s/%s" % ((pod.get("metadata") or {}).get("namespace"), (pod.get("metadata") or {}).get("name"))
                  for pod in pods or () if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def _hold(step, field, names, waiting_for):
    """``step``, which would terminate or drain, made a wait for ``names`` (kept in ``step[field]``), polled every
    BLOCKING_POLL_SECONDS; any other step (a wait, done) is left as it is. Returns the step."""
    if not names or not (step.get("terminate") or step.get("drain")):
        return step
    step.update(action=WAIT, terminate=[], decrement=0, drain=[], validate=[],
                wait_seconds=BLOCKING_POLL_SECONDS if step.get("wait_seconds") is None else min(step["wait_seconds"], BLOCKING_POLL_SECONDS))
    step[field] = sorted(set(names))
    step["waiting_for"] = list(step.get("waiting_for") or []) + list(waiting_for)
    return step


def hold_for_pods(step, found):
    """``step`` held back while blocking pods run: ``found`` is ``[(selector entry {"selector", "namespace"}, [pod
    names running])]``. A step that would terminate or drain becomes a wait, for as long as the pods run, naming them
    (``blocking_pods``); any other step (a wait, done) is left as it is. Returns the step."""
    running = [(entry, names) for entry, names in found if names]

    def said(entry, names):
        where = " in namespace %s" % entry["namespace"] if entry.get("namespace") else ""
        return "%s %s to end (rolling_update_blocking_pods %s%s)" % ("pod" if len(names) == 1 else "pods", ", ".join(names), entry["selector"], where)

    return _hold(step, "blocking_pods", [name for _entry, names in running for name in names],
                 [said(entry, names) for entry, names in running])


def alert_names(alerts):
    """``HighLatency{severity="warning"}`` for each alert (``clients.alertmanager.firing_alerts``'), by name."""
    def one(alert):
        labels = ",".join('%s="%s"' % (key, value) for key, value in sorted((alert.get("labels") or {}).items()) if key != "alertname")
        return "%s{%s}" % (alert["name"], labels) if labels else alert["name"]
    return sorted(set(one(alert) for alert in alerts or ()))


def hold_for_alerts(step, alerts):
    """``step`` held back while pause alerts fire (``alerts``: the gate's firing alerts): a step that would terminate or
    drain becomes a wait naming them (``paused_by_alerts``); any other step is left as it is. Returns the step."""
    names = alert_names(alerts)
    return _hold(step, "paused_by_alerts", names,
                 ["pause alert%s %s to clear (rolling_update_pause_alerts)" % ("" if len(names) == 1 else "s", ", ".join(names))] if names else [])


def alerts_message(alerts, gate="abort"):
    """``abort alert KubePodCrashLooping{severity="critical"} is firing`` for each alert."""
    return "; ".join("%s alert %s is firing" % (gate, name) for name in alert_names(alerts))


def alerts_stop(alerts, paused_seconds, timeout):
    """The clean stop of a step that waited ``paused_seconds`` for pause alerts that still fire, once that reaches
    ``timeout`` (rolling_update_pause_alerts_timeout); None before."""
    if not alerts or paused_seconds < timeout:
        return None
    return {"stop": "pause", "reason": PAUSED_ALERT, "alarms": [],
            "message": "%s after %ds (rolling_update_pause_alerts_timeout); the group is held, run again once it clears to "
                       "resume" % (alerts_message(alerts, "pause"), timeout)}


def stop_before(step, now, alarms=(), pause=False, windows=(), step_seconds=0, abort_alerts=()):
    """Whether the rollout stops before ``step`` (``rollout.steps.next_step``'s): None, or ``{"stop", "reason",
    "message", "alarms"}`` - ``stop`` is ``abort`` (an alarm or an abort alert is firing, ``abort_alerts``; a failure,
    with ``alerts`` naming them) or ``pause`` (``reason`` ``requested`` or ``window closed``; a clean stop)."""
    fired = firing(alarms)
    if fired:
        return {"stop": "abort", "reason": "abort alarm", "alarms": [alarm["name"] for alarm in fired],
                "message": alarm_message(fired)}
    if abort_alerts:
        return {"stop": "abort", "reason": "abort alert", "alarms": [], "alerts": alert_names(abort_alerts),
                "message": alerts_message(abort_alerts)}
    if step.get("action") == "done":
        return None
    if pause:
        return {"stop": "pause", "reason": PAUSED_REQUESTED, "alarms": [],
                "message": "a pause was requested: the group is tagged %s=true; remove the tag (or set it to false) and run "
                           "again to resume" % PAUSE_TAG}
    why = closing(windows, now, step_seconds)
    if why:
        return {"stop": "pause", "reason": PAUSED_WINDOW, "alarms": [], "message": why + "; run again inside it to resume"}
    return None


def start_refusal(now, alarms=(), windows=(), step_seconds=0, abort_alerts=()):
    """Why a rollout may not start now, before any change: an abort alarm or an abort alert firing, or outside the
    maintenance window (or too close to its end for one step); None when it may."""
    fired = firing(alarms)
    if fired:
        return "rolling_update_abort_alarms: %s; the rollout does not start. Nothing was changed" % alarm_message(fired)
    if abort_alerts:
        return "rolling_update_abort_alerts: %s; the rollout does not start. Nothing was changed" % alerts_message(abort_alerts)
    return window_refusal(windows, now, step_seconds)


def window_report(windows, now):
    """The windows as a plan shows them: ``{"windows": [texts], "open", "closes_at", "next_start"}`` (times as a window's
    zone and UTC), or None without windows."""
    state = window_state(windows, now)
    if state is None:
        return None
    return {"windows": [window["text"] for window in windows], "open": state["open"],
            "closes_at": local_text(state["closes_at"], state["next_window"]) if state["open"] else None,
            "next_start": local_text(state["next_start"], state["next_window"]) if state["next_start"] else None}


def refused_in_drain(result):
    """The ``permission`` of the first pod a drain could not move because its identity may not (node_drain's
    ``nodes[*].blocking``), else None."""
    nodes = result.get("nodes")
    for node in (nodes.values() if isinstance(nodes, dict) else []):
        for entry in (node or {}).get("blocking") or []:
            if isinstance(entry, dict) and entry.get("permission"):
                return entry["permission"]
    return None


def failure_cause(action, result, hook=None, run_action=None, on_failure="hold", lock_kept=False):
    """Why a rollout failed, and whether rolling it back is the remedy: ``{"kind", "rollback", "reason"}``.

    ``action`` is the failed task's module, ``result`` its result, ``hook`` what a failed hook recorded (``{"event",
    "file", "message"}``) or nothing. A request the run's identity may not make (the result's ``permission``) is a
    kind of its own, held and never rolled back (the way back needs the same permissions); ``permission`` says which.
    Only failures of the new nodes are rolled back - an abort alarm, a hook (the
    operator's own check), new instances that never became Ready nodes (``NodeCreationFailure``), the validation of new
    nodes; anything else (a drain a budget holds, an API outage, the lock) would fail again on the way back, so the
    group is held for a rerun whatever ``rolling_update_on_failure`` says.

    With ``run_action`` (what the run does with the group: rollout, rollback or cancel) the cause also says what the
    role does now: ``kept`` whether the group was the run's to the end (``lock_kept``: its lock held, not refused or
    lost), and ``roll_back`` whether it is rolled back - a rollout's own failure of the new nodes, with ``on_failure``
    rollback, on a group the run kept. A group that is not kept is another run's to hold.
    """
    cause = _cause(action, result or {}, hook)
    if run_action is not None:
        cause.update(kept=bool(lock_kept), roll_back=bool(cause["rollback"] and run_action == "rollout" and on_failure == "rollback" and lock_kept))
    return cause


def _cause(action, result, hook):
    message = str(result.get("msg") or "").strip()
    if hook:
        return {"kind": "hook", "rollback": True,
                "reason": "the %s hook %s failed: %s" % (hook.get("event"), hook.get("file"), hook.get("message"))}
    if result.get("alarms") or result.get("alerts"):
        return {"kind": "alarm", "rollback": True, "reason": message}
    permission = result.get("permission") or refused_in_drain(result)
    if permission:
        granted = permission.get("granted_by") or "no documented rule or statement"
        return {"kind": "permission", "rollback": False, "permission": permission,
                "reason": "permission refused: %s (granted by %s)" % (permission_text(permission), granted)}
    if message.startswith(NODE_CREATION):
        return {"kind": "node creation", "rollback": True, "reason": message}
    if str(action or "").endswith("cluster_validate"):
        return {"kind": "validation", "rollback": True, "reason": "the new nodes failed validation: %s" % message}
    return {"kind": "other", "rollback": False, "reason": message}
