"""Termination lifecycle hooks as AWS runs them (moto stores the hooks and does nothing with them).

AWS behaviour restored here:

* A group with a hook on ``autoscaling:EC2_INSTANCE_TERMINATING`` does not terminate an instance at once (whether
  ``TerminateInstanceInAutoScalingGroup`` or a scale-in chose it): the instance goes to ``Terminating:Wait`` and stays
  there, still running (its node with it), until every such hook of the group is done with it. It no longer counts
  toward the desired capacity, so the group launches a replacement meanwhile when the desired capacity asks for one.
* A hook is done with an instance when its owner calls ``CompleteLifecycleAction`` (by instance id or by the action's
  token), or when its ``HeartbeatTimeout`` (default 3600 s) passes without a ``RecordLifecycleActionHeartbeat``; its
  ``DefaultResult`` then applies. For termination both results end the wait; ``ABANDON`` also skips the group's other
  hooks. A heartbeat restarts the timeout, never beyond the global timeout (100 times the heartbeat timeout, at most
  48 hours, from the start of the wait).
* Then the instance goes ``Terminating:Proceed``, is terminated and leaves the group.
* ``CompleteLifecycleAction`` and ``RecordLifecycleActionHeartbeat`` for an instance no hook of that name holds are a
  ValidationError; ``PutLifecycleHook`` refuses a heartbeat timeout outside 30-7200 seconds and an unknown
  transition or default result.

Events: ``instance.lifecycle_wait`` {instance_id, group, hooks, until} when a hook holds an instance;
``instance.lifecycle_done`` {instance_id, group, hook, result, how: completed | timeout | heartbeat} as each hook lets
it go. Launch hooks (``Pending:Wait``) are stored but not run: no scenario of the sandbox needs them.
"""

import uuid

from moto.autoscaling import models as asg_models
from moto.autoscaling import responses as asg_responses
from moto.autoscaling.exceptions import ValidationError
from moto.core.responses import EmptyResult

from . import fidelity
from .patching import once

TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
LAUNCHING = "autoscaling:EC2_INSTANCE_LAUNCHING"
RESULTS = ("CONTINUE", "ABANDON")
GLOBAL_TIMEOUT_CAP = 172800.0
_WAIT = "_sb_lifecycle_wait"   # on a held InstanceState: {"hooks": {name: deadline}, "started", "reason", "token", "group"}


def _now():
    ctx = fidelity._CTX  # pylint: disable=protected-access
    return ctx.clock.now() if ctx is not None else 0.0


def _emit(kind, **fields):
    ctx = fidelity._CTX  # pylint: disable=protected-access
    if ctx is not None:
        ctx.emit(kind, **fields)


def termination_hooks(backend, group_name):
    return [hook for hook in backend.lifecycle_hooks.values()
            if hook.auto_scaling_group_name == group_name and hook.lifecycle_transition == TERMINATING]


def hold(group, states, reason):
    """TERMINATION_HOLDS entry: the group's termination hooks keep ``states`` in ``Terminating:Wait``."""
    hooks = termination_hooks(group.autoscaling_backend, group.name)
    if not hooks:
        return []
    now = _now()
    for state in states:
        state.lifecycle_state = "Terminating:Wait"
        state.__dict__[_WAIT] = {"hooks": {hook.name: now + hook.heartbeat_timeout for hook in hooks}, "started": now,
                                 "reason": reason, "token": str(uuid.uuid4()), "group": group.name}
        _emit("instance.lifecycle_wait", instance_id=state.instance.id, group=group.name, hooks=sorted(h.name for h in hooks),
              until=round(max(now + hook.heartbeat_timeout for hook in hooks), 3))
    return list(states)


def _finish(group, state):
    """Every hook let the instance go: Terminating:Proceed, terminated, out of the group."""
    wait = state.__dict__.pop(_WAIT)
    state.lifecycle_state = "Terminating:Proceed"
    group.instance_states = [s for s in group.instance_states if s is not state]
    with fidelity._Reason(wait["reason"]):  # pylint: disable=protected-access
        group.autoscaling_backend.ec2_backend.terminate_instances([state.instance.id])


def _let_go(group, state, hook_name, result, how):
    wait = state.__dict__[_WAIT]
    wait["hooks"].pop(hook_name, None)
    _emit("instance.lifecycle_done", instance_id=state.instance.id, group=group.name, hook=hook_name, result=result, how=how)
    if result == "ABANDON" or not wait["hooks"]:
        _finish(group, state)


def _held(group, hook_name, instance_id=None, token=None):
    for state in group.instance_states:
        wait = state.__dict__.get(_WAIT)
        if wait and hook_name in wait["hooks"] and (state.instance.id == instance_id or (token and wait["token"] == token)):
            return state
    raise ValidationError("No active Lifecycle Action found with instance ID %s" % (instance_id or token,))


def tick(backend, now):
    """RECONCILE_HOOKS entry: each hook whose heartbeat timeout passed lets its instance go with its DefaultResult."""
    hooks = {(hook.auto_scaling_group_name, hook.name): hook for hook in backend.lifecycle_hooks.values()}
    for group in list(backend.autoscaling_groups.values()):
        for state in list(group.instance_states):
            wait = state.__dict__.get(_WAIT)
            if not wait:
                continue
            for name, deadline in sorted(wait["hooks"].items()):
                if now >= deadline and _WAIT in state.__dict__:
                    hook = hooks.get((group.name, name))
                    _let_go(group, state, name, hook.default_result if hook else "CONTINUE", "timeout")


def complete_lifecycle_action(self, group_name, hook_name, result, instance_id=None, token=None):
    """CompleteLifecycleAction."""
    group = fidelity._group(self, group_name)  # pylint: disable=protected-access
    if result not in RESULTS:
        raise ValidationError("Valid values for LifecycleActionResult are CONTINUE and ABANDON, got %s" % (result,))
    state = _held(group, hook_name, instance_id, token)
    _let_go(group, state, hook_name, result, "completed")


def record_lifecycle_action_heartbeat(self, group_name, hook_name, instance_id=None, token=None):
    """RecordLifecycleActionHeartbeat: the hook's timeout starts again, within the global timeout."""
    group = fidelity._group(self, group_name)  # pylint: disable=protected-access
    state = _held(group, hook_name, instance_id, token)
    hook = next(h for h in termination_hooks(self, group_name) if h.name == hook_name)
    wait = state.__dict__[_WAIT]
    limit = wait["started"] + min(100.0 * hook.heartbeat_timeout, GLOBAL_TIMEOUT_CAP)
    wait["hooks"][hook_name] = min(_now() + hook.heartbeat_timeout, limit)


def _before_put_hook(backend, a):
    fidelity._group(backend, a["as_name"])  # pylint: disable=protected-access
    if a["transition"] not in (TERMINATING, LAUNCHING):
        raise ValidationError("Invalid Lifecycle Transition: %s" % (a["transition"],))
    if a["timeout"] is not None and not 30 <= int(a["timeout"]) <= 7200:
        raise ValidationError("Heartbeat timeout must be between 30 and 7200 seconds, got %s" % (a["timeout"],))
    if a["result"] is not None and a["result"] not in RESULTS:
        raise ValidationError("Valid values for DefaultResult are CONTINUE and ABANDON, got %s" % (a["result"],))


def _complete_response(self):
    self.autoscaling_backend.complete_lifecycle_action(
        self._get_param("AutoScalingGroupName"), self._get_param("LifecycleHookName"),  # pylint: disable=protected-access
        self._get_param("LifecycleActionResult"), instance_id=self._get_param("InstanceId"),  # pylint: disable=protected-access
        token=self._get_param("LifecycleActionToken"))  # pylint: disable=protected-access
    return EmptyResult()


def _heartbeat_response(self):
    self.autoscaling_backend.record_lifecycle_action_heartbeat(
        self._get_param("AutoScalingGroupName"), self._get_param("LifecycleHookName"),  # pylint: disable=protected-access
        instance_id=self._get_param("InstanceId"), token=self._get_param("LifecycleActionToken"))  # pylint: disable=protected-access
    return EmptyResult()


@once
def install():
    """Apply the lifecycle hook patches once per process (idempotent; after :func:`fidelity.install`)."""
    backend = asg_models.AutoScalingBackend
    backend.complete_lifecycle_action = complete_lifecycle_action
    backend.record_lifecycle_action_heartbeat = record_lifecycle_action_heartbeat
    fidelity._wrap(backend, "create_lifecycle_hook", before=_before_put_hook)  # pylint: disable=protected-access
    asg_responses.AutoScalingResponse.complete_lifecycle_action = _complete_response
    asg_responses.AutoScalingResponse.record_lifecycle_action_heartbeat = _heartbeat_response
    fidelity.TERMINATION_HOLDS.append(hold)
    fidelity.RECONCILE_HOOKS.append(tick)
