"""Load balancer target groups as AWS runs them for an Auto Scaling group (moto's ELBv2 and Auto Scaling, patched).

AWS behaviour restored here:

* An Auto Scaling group registers an instance with its target groups when the instance goes ``InService``
  (once it has booted), and once only: it does not register it again on later size changes, so a target that
  somebody else deregistered stays deregistered. moto registers every instance of the group, booting ones too, on
  every size change, which a booting (``pending``) instance refuses with InvalidTarget "not in a running state":
  attaching a target group, entering or leaving Standby and resizing all failed on a group with an instance still
  booting.
* ``AttachLoadBalancerTargetGroups`` registers the group's ``InService`` instances; ``DetachLoadBalancerTargetGroups``
  deregisters the instances the group registered (moto: every instance, failing on any it had not registered).
* ``EnterStandby`` and ``DetachInstances`` deregister the instances from the group's target groups;
  ``ExitStandby`` registers them again.
* While the ``AddToLoadBalancer`` process is suspended, instances that go ``InService`` are not registered (AWS
  does not register them later either).
* A deregistered target is ``draining`` for the target group's ``deregistration_delay.timeout_seconds`` (default
  300) on the sandbox clock, listed by DescribeTargetHealth with reason ``Target.DeregistrationInProgress``, then
  leaves (``unused``, ``Target.NotRegistered`` when asked for by id); moto drops it at once. Deregistering a target
  that is not registered succeeds and changes nothing (moto: InvalidTarget). Registering a draining target makes it
  a target again.
* An instance terminated while it is a target is deregistered by the load balancer: ``draining`` for the delay,
  then gone (moto: ``draining`` for ever).

Known difference: AWS's Auto Scaling, terminating an instance that is a target of the group's target groups, first
deregisters it and waits for the deregistration delay; the sandbox terminates it at once (the load balancer then
deregisters the terminated target as above, and the event log records the cut).

Every change of an instance target is an ``lb.target`` event: ``target_group`` (name), ``instance_id``, ``state``
(``healthy``, ``draining`` with ``until``, or ``unused``), ``by`` (``api``, ``asg``, ``load-balancer-controller``,
``terminated``) and, for a termination, ``was`` (the state the target was in).
"""

import contextlib
import threading

from moto.autoscaling import models as asg_models
from moto.ec2.models import instances as ec2_instances
from moto.elbv2 import models as elbv2_models

from . import fidelity
from .patching import once

_MARK = "_sb_target_groups"   # on an Auto Scaling InstanceState: the target group ARNs the group registered it with
_DRAINING = "_sb_draining"    # on a FakeTargetGroup: {target id: (target, simulated time its deregistration ends)}
_EXCLUDED = "_sb_excluded"    # on a FakeTargetGroup: instance ids the load balancer controller took out
DEFAULT_DELAY = 300.0
_LOCAL = threading.local()
_ORIGINAL = {}   # the methods patched, as install() found them


@contextlib.contextmanager
def _by(who):
    """Name who changes the targets inside (for the event log)."""
    saved = getattr(_LOCAL, "by", None)
    _LOCAL.by = who
    try:
        yield
    finally:
        _LOCAL.by = saved


def _now():
    ctx = fidelity.active()
    return ctx.clock.now() if ctx is not None else None


def _emit(target_group, target_id, state, **fields):
    ctx = fidelity.active()
    if ctx is not None and str(target_id).startswith("i-"):
        ctx.emit("lb.target", target_group=target_group.name, instance_id=target_id, state=state,
                 by=fields.pop("by", None) or getattr(_LOCAL, "by", None) or "api", **fields)


def deregistration_delay(target_group):
    """The target group's ``deregistration_delay.timeout_seconds``, in seconds."""
    try:
        return max(0.0, float(target_group.attributes.get("deregistration_delay.timeout_seconds", DEFAULT_DELAY)))
    except (TypeError, ValueError):
        return DEFAULT_DELAY


def _draining(target_group):
    return target_group.__dict__.setdefault(_DRAINING, {})


def _still_draining(target_group, target_id, now):
    entry = _draining(target_group).get(target_id)
    if entry is None:
        return None
    if now is None or now >= entry[1]:
        _draining(target_group).pop(target_id, None)
        return None
    return entry


def _start_draining(target_group, target, **fields):
    now = _now()
    until = (now if now is not None else 0.0) + deregistration_delay(target_group)
    if now is None or until <= now:
        _draining(target_group).pop(target["Id"], None)
        _emit(target_group, target["Id"], "unused", **fields)
        return
    _draining(target_group)[target["Id"]] = (target, until)
    # the event's time is the reading the delay was counted from, so ``until - t`` is the delay itself
    _emit(target_group, target["Id"], "draining", t=round(now, 3), until=round(until, 3), **fields)


def target_group_register(self, targets):
    """RegisterTargets: an instance must be running (moto's check); a draining target becomes a target again."""
    _ORIGINAL["register"](self, targets)
    for target in targets:
        _draining(self).pop(target["Id"], None)
        _emit(self, target["Id"], "healthy")


def target_group_deregister(self, targets):
    """DeregisterTargets: each registered target drains for the deregistration delay; an unknown one is ignored."""
    for target in targets:
        registered = self.targets.pop(target["Id"], None)
        if registered is not None:
            _start_draining(self, registered)


def deregister_terminated(target_group, instance_id):
    """The load balancer deregisters a target whose instance was terminated: it drains, and the cut is logged."""
    registered = target_group.targets.pop(instance_id, None)
    if registered is not None:
        _start_draining(target_group, registered, by="terminated", was="healthy")
    elif _still_draining(target_group, instance_id, _now()) is not None:
        _emit(target_group, instance_id, "draining", by="terminated", was="draining",
              until=round(_draining(target_group)[instance_id][1], 3))


def terminate(self):
    """Instance.terminate, through any API (TerminateInstances, the Auto Scaling group's terminations): the instance
    leaves the target groups that list it. (moto tells the load balancers only of TerminateInstances.)"""
    already = self.state == "terminated"
    previous = _ORIGINAL["terminate"](self)
    if not already:
        backend = elbv2_models.elbv2_backends[self.ec2_backend.account_id][self.ec2_backend.region_name]
        for target_group in list(backend.target_groups.values()):
            deregister_terminated(target_group, self.id)
    return previous


def health_for(self, target, ec2_backend):
    """A registered instance is ``healthy`` (``unused`` when stopped); a draining one ``draining``; others ``unused``."""
    target_id = target["Id"]
    registered = self.targets.get(target_id)
    port = target.get("Port", (registered or {}).get("Port", self.port))
    if registered is not None:
        instance = ec2_backend.get_instance_by_id(target_id) if target_id.startswith("i-") else None
        if instance is not None and instance.state == "stopped":
            return elbv2_models.FakeHealthStatus(target_id, port, self.health_check_port, "unused", "Target.InvalidState",
                                                 "Target is in the stopped state")
        return elbv2_models.FakeHealthStatus(target_id, registered["Port"], self.health_check_port, "healthy")
    if _still_draining(self, target_id, _now()) is not None:
        return elbv2_models.FakeHealthStatus(target_id, port, self.health_check_port, "draining",
                                             "Target.DeregistrationInProgress", "Target deregistration is in progress")
    return elbv2_models.FakeHealthStatus(target_id, port, self.health_check_port, "unused", "Target.NotRegistered",
                                         "Target is not registered to the target group")


def describe_target_health(self, target_group_arn, targets):
    """DescribeTargetHealth without targets lists the registered targets and those still draining."""
    target_group = self.target_groups.get(target_group_arn)
    if target_group is None or targets:
        return _ORIGINAL["describe_target_health"](self, target_group_arn, targets)
    now = _now()
    listed = list(target_group.targets.values())
    listed += [entry[0] for target_id, entry in list(_draining(target_group).items())
               if _still_draining(target_group, target_id, now) is not None]
    return [target_group.health_for(target, self.ec2_backend) for target in listed]


def _marks(state):
    return state.__dict__.setdefault(_MARK, set())


def _target_groups(backend, group):
    """The group's target groups that still exist (a target group can be deleted before its group)."""
    elbv2 = backend.elbv2_backend
    return [elbv2.target_groups[arn] for arn in group.target_group_arns if arn in elbv2.target_groups]


def register_in_service(backend, group_name):
    """Register the group's ``InService`` instances that it has not registered yet with each of its target groups."""
    group = backend.autoscaling_groups.get(group_name)
    if group is None or not group.target_group_arns:
        return
    if "AddToLoadBalancer" in group._suspended_processes:  # pylint: disable=protected-access
        return
    for target_group in _target_groups(backend, group):
        fresh = [s for s in group.instance_states
                 if s.lifecycle_state == "InService" and target_group.arn not in _marks(s)]
        if fresh:
            with _by("asg"):
                target_group.register([{"Id": s.instance.id, "Port": target_group.port} for s in fresh])
            for state in fresh:
                _marks(state).add(target_group.arn)


def leave_target_groups(backend, group, states, arns=None):
    """Deregister ``states`` from the group's target groups (or from ``arns``) where the group registered them."""
    for target_group in _target_groups(backend, group):
        if arns is not None and target_group.arn not in arns:
            continue
        mine = [s for s in states if target_group.arn in _marks(s)]
        if mine:
            with _by("asg"):
                target_group.deregister([{"Id": s.instance.id} for s in mine])
            for state in mine:
                _marks(state).discard(target_group.arn)


def _states(group, instance_ids):
    ids = set(instance_ids or [])
    return [s for s in group.instance_states if s.instance.id in ids]


def detach_load_balancer_target_groups(self, group_name, target_group_arns):
    """DetachLoadBalancerTargetGroups: the group deregisters the instances it registered, then forgets the groups."""
    group = fidelity._group(self, group_name)  # pylint: disable=protected-access
    arns = set(target_group_arns or [])
    leave_target_groups(self, group, group.instance_states, arns=arns)
    group.target_group_arns = [arn for arn in group.target_group_arns if arn not in arns]


def _after_enter_standby(backend, a):
    group = backend.autoscaling_groups.get(a["group_name"])
    if group is not None:
        leave_target_groups(backend, group, _states(group, a["instance_ids"]))


def _before_detach(backend, a):
    group = backend.autoscaling_groups.get(a["group_name"])
    if group is not None:
        leave_target_groups(backend, group, _states(group, a["instance_ids"]))


def on_running(instance):
    """An instance finished booting: its group registers it, now that it is ``InService``."""
    group = getattr(instance, "autoscaling_group", None)
    if group is not None:
        register_in_service(group.autoscaling_backend, group.name)


def exclude(elbv2_backend, excluded, included):
    """The load balancer controller's part (``sandbox.loadbalancer``): deregister the ``excluded`` instances from every
    instance target group that lists them, and register again the ``included`` ones it had taken out."""
    excluded, included = set(excluded), set(included)
    with _by("load-balancer-controller"):
        for target_group in list(elbv2_backend.target_groups.values()):
            if target_group.target_type != "instance":
                continue
            taken = target_group.__dict__.setdefault(_EXCLUDED, set())
            out = sorted(excluded & set(target_group.targets))
            if out:
                target_group.deregister([{"Id": target_id} for target_id in out])
                taken.update(out)
            back = []
            for target_id in sorted(taken & included):
                instance = elbv2_backend.ec2_backend.get_instance_by_id(target_id)
                if instance is not None and instance.state == "running":
                    back.append({"Id": target_id, "Port": target_group.port})
                taken.discard(target_id)
            if back:
                target_group.register(back)


def serve(elbv2_backend, arns, included):
    """The cloud provider's service controller: every ``included`` instance that is running is a target of each target
    group ``arns`` (its load balancers), registered once it is (a node excluded from load balancers is not included)."""
    with _by("service-controller"):
        for arn in arns:
            target_group = elbv2_backend.target_groups.get(arn)
            if target_group is None:
                continue
            fresh = []
            for target_id in sorted(set(included) - set(target_group.targets)):
                instance = elbv2_backend.ec2_backend.get_instance_by_id(target_id)
                if instance is not None and instance.state == "running":
                    fresh.append({"Id": target_id, "Port": target_group.port})
            if fresh:
                target_group.register(fresh)


@once
def install():
    """Apply the target group patches once per process (idempotent; after :func:`fidelity.install`)."""
    target_group = elbv2_models.FakeTargetGroup
    _ORIGINAL.update(register=target_group.register, terminate=ec2_instances.Instance.terminate,
                     describe_target_health=elbv2_models.ELBv2Backend.describe_target_health)
    target_group.register = target_group_register
    target_group.deregister = target_group_deregister
    # the load balancers learn of a termination from Instance.terminate, whichever API terminated it
    target_group.deregister_terminated_instances = lambda self, instance_ids: None
    ec2_instances.Instance.terminate = terminate
    target_group.health_for = health_for
    elbv2_models.ELBv2Backend.describe_target_health = describe_target_health
    backend = asg_models.AutoScalingBackend
    backend.update_attached_target_groups = register_in_service
    backend.detach_load_balancer_target_groups = detach_load_balancer_target_groups
    fidelity._wrap(backend, "enter_standby_instances", after=_after_enter_standby)  # pylint: disable=protected-access
    fidelity._wrap(backend, "detach_instances", before=_before_detach)  # pylint: disable=protected-access
    fidelity.RUNNING_HOOKS.append(on_running)
