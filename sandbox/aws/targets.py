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
"""

import threading

from moto.autoscaling import models as asg_models

from . import fidelity

_INSTALL_LOCK = threading.Lock()
_INSTALLED = False
_MARK = "_sb_target_groups"   # on an Auto Scaling InstanceState: the target group ARNs the group registered it with


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
            target_group.register([{"Id": s.instance.id, "Port": target_group.port} for s in fresh])
            for state in fresh:
                _marks(state).add(target_group.arn)


def deregister(backend, group, states, arns=None):
    """Deregister ``states`` from the group's target groups (or from ``arns``) where the group registered them."""
    for target_group in _target_groups(backend, group):
        if arns is not None and target_group.arn not in arns:
            continue
        mine = [s for s in states if target_group.arn in _marks(s)]
        if mine:
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
    deregister(self, group, group.instance_states, arns=arns)
    group.target_group_arns = [arn for arn in group.target_group_arns if arn not in arns]


def _after_enter_standby(backend, a):
    group = backend.autoscaling_groups.get(a["group_name"])
    if group is not None:
        deregister(backend, group, _states(group, a["instance_ids"]))


def _before_detach(backend, a):
    group = backend.autoscaling_groups.get(a["group_name"])
    if group is not None:
        deregister(backend, group, _states(group, a["instance_ids"]))


def on_running(instance):
    """An instance finished booting: its group registers it, now that it is ``InService``."""
    group = getattr(instance, "autoscaling_group", None)
    if group is not None:
        register_in_service(group.autoscaling_backend, group.name)


def install():
    """Apply the target group patches once per process (idempotent; after :func:`fidelity.install`)."""
    global _INSTALLED  # pylint: disable=global-statement
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        backend = asg_models.AutoScalingBackend
        backend.update_attached_target_groups = register_in_service
        backend.detach_load_balancer_target_groups = detach_load_balancer_target_groups
        fidelity._wrap(backend, "enter_standby_instances", after=_after_enter_standby)  # pylint: disable=protected-access
        fidelity._wrap(backend, "detach_instances", before=_before_detach)  # pylint: disable=protected-access
        fidelity.RUNNING_HOOKS.append(on_running)
        _INSTALLED = True
