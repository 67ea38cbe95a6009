"""Warm pools as AWS runs them for an Auto Scaling group (moto stores the configuration and nothing else).

AWS behaviour restored here:

* A group with a warm pool keeps prepared instances beside it: as many as ``MaxGroupPreparedCapacity`` (by default the
  group's maximum size) minus the desired capacity, and at least the pool's ``MinSize``. They are launched from the
  group's launch template version of the moment, boot (``Warmed:Pending``) and then wait in the pool's state
  (``Warmed:Stopped``, ``Warmed:Running`` or ``Warmed:Hibernated``; stopped and hibernated instances are stopped in
  EC2). A change of the launch template does not touch them: a pool keeps instances of the old version until they are
  used or terminated.
* When the group launches instances (a larger desired capacity, a replacement) it takes prepared warm instances first,
  oldest first, whatever version they were built from, then launches new ones for the rest. A warm instance leaving
  the pool starts again (faster than a first boot: half the boot time) and goes ``Pending``, then ``InService``.
* The pool refills itself after it gave instances away or lost some.
* ``TerminateInstanceInAutoScalingGroup`` terminates a warm instance (the desired capacity is not involved); the pool
  launches another from the current version.
* ``DescribeWarmPool`` lists the pool's instances; ``DeleteWarmPool`` terminates them; ``PutWarmPool`` on a group with a
  mixed instances policy is a ValidationError.
* A warm instance runs its user data without joining the cluster, as the EKS guidance for warm pools prescribes: the
  sandbox's node controllers do not see it until it has left the pool (``AwsSandbox.instances`` leaves it out).

Not modelled: lifecycle hooks on warm instances, ``ReuseOnScaleIn`` (instances returning to the pool on scale-in).
Events: ``warm_pool.launched`` {group, instance_id, lt_version}, ``warm_pool.used`` {group, instance_id, lt_version},
``warm_pool.terminated`` {group, instance_id}.
"""

from moto.autoscaling import models as asg_models
from moto.autoscaling import responses as asg_responses
from moto.autoscaling.exceptions import ValidationError
from moto.core.responses import ActionResult

from . import fidelity
from .patching import once

READY_STATES = {"Stopped": "Warmed:Stopped", "Running": "Warmed:Running", "Hibernated": "Warmed:Hibernated"}
_POOL = "_sb_warm_pool"   # on a FakeAutoScalingGroup: the InstanceStates of its warm pool, oldest first


def pool_of(group):
    return group.__dict__.setdefault(_POOL, [])


def _emit(kind, **fields):
    ctx = fidelity._CTX  # pylint: disable=protected-access
    if ctx is not None:
        ctx.emit(kind, **fields)


def _version(state):
    return (state.instance.__dict__.get("_sb_lt") or {}).get("version")


def target_size(group):
    """How many warm instances the pool keeps now."""
    config = group.warm_pool
    if config is None:
        return 0
    prepared = config.max_group_prepared_capacity
    cap = group.max_size if prepared in (None, -1) else int(prepared)
    return max(int(config.min_size or 0), cap - (group.desired_capacity or 0))


def refill(group):
    """Launch what the pool lacks from the group's current version; terminate what it holds beyond its size (newest first)."""
    pool = pool_of(group)
    missing = target_size(group) - len(pool)
    if missing > 0 and "Launch" not in group._suspended_processes:  # pylint: disable=protected-access
        for state in fidelity.launch_states(group, missing, group.get_propagated_tags(), pool):
            state.lifecycle_state = "Warmed:Pending"
            info = state.instance.__dict__.get("_sb_info")
            if info is not None:
                info["warm"] = True
            pool.append(state)
            _emit("warm_pool.launched", group=group.name, instance_id=state.instance.id, lt_version=_version(state))
            if not fidelity.instance_booting(state.instance):
                on_running(state.instance)   # no boot delay: it settles at once
    elif missing < 0:
        for state in list(reversed(pool))[:-missing]:
            _terminate(group, state)


def _terminate(group, state):
    pool_of(group).remove(state)
    with fidelity._Reason("warm-pool"):  # pylint: disable=protected-access
        group.autoscaling_backend.ec2_backend.terminate_instances([state.instance.id])
    _emit("warm_pool.terminated", group=group.name, instance_id=state.instance.id)


def on_running(instance):
    """RUNNING_HOOKS entry: a warm instance that finished its first boot settles into the pool's state."""
    group = getattr(instance, "autoscaling_group", None)
    if group is None or group.warm_pool is None:
        return
    state = next((s for s in pool_of(group) if s.instance is instance), None)
    if state is None or state.lifecycle_state != "Warmed:Pending":
        return
    pool_state = group.warm_pool.pool_state or "Stopped"
    state.lifecycle_state = READY_STATES.get(pool_state, "Warmed:Stopped")
    if pool_state != "Running":
        instance.stop()


def supply(group, count):
    """LAUNCH_SOURCES entry: the group takes up to ``count`` prepared warm instances, oldest first."""
    pool = pool_of(group)
    ready = [s for s in pool if s.lifecycle_state in READY_STATES.values()][:max(0, count)]
    ctx = fidelity._CTX  # pylint: disable=protected-access
    for state in ready:
        pool.remove(state)
        instance = state.instance
        info = instance.__dict__.get("_sb_info")
        if info is not None:
            info["warm"] = False
        if ctx is not None and ctx.boot_seconds > 0:
            ready_at = ctx.clock.now() + ctx.boot_seconds / 2.0
            instance._state = fidelity.BootingState(ctx.clock, ready_at)  # pylint: disable=protected-access
            ctx.schedule_boot(ready_at, instance)
        else:
            instance.start()
        state.lifecycle_state = "InService"
        group.instance_states.append(state)
        _emit("warm_pool.used", group=group.name, instance_id=instance.id, lt_version=_version(state))
    return len(ready)


def tick(backend, now):  # pylint: disable=unused-argument
    """RECONCILE_HOOKS entry: every pool keeps its size."""
    for group in list(backend.autoscaling_groups.values()):
        if group.warm_pool is not None or pool_of(group):
            refill(group)


def _find(backend, instance_id):
    for group in backend.autoscaling_groups.values():
        for state in pool_of(group):
            if state.instance.id == instance_id:
                return group, state
    return None, None


def _terminate_wrapper(original):
    def terminate_instance(self, instance_id, should_decrement):
        group, state = _find(self, instance_id)
        if state is None:
            return original(self, instance_id, should_decrement)
        _terminate(group, state)
        refill(group)
        return asg_models.TerminateInstanceActivity(state.instance, group.desired_capacity)

    terminate_instance.__doc__ = original.__doc__
    return terminate_instance


def _before_put(backend, a):
    group = fidelity._group(backend, a["group_name"])  # pylint: disable=protected-access
    if group.mixed_instances_policy:
        raise ValidationError("You can't add a warm pool to an Auto Scaling group that has a mixed instances policy or a launch "
                              "template or launch configuration that requests Spot Instances.")


def _after_put(backend, a):
    refill(backend.autoscaling_groups[a["group_name"]])


def _before_delete(backend, a):
    group = fidelity._group(backend, a["group_name"])  # pylint: disable=protected-access
    for state in list(pool_of(group)):
        _terminate(group, state)


def describe_warm_pool(self):
    """DescribeWarmPool, with the pool's instances (moto lists none)."""
    group = fidelity._group(self.autoscaling_backend, self._get_param("AutoScalingGroupName"))  # pylint: disable=protected-access
    return ActionResult({"WarmPoolConfiguration": group.warm_pool, "Instances": list(pool_of(group))})


def _after_size(backend, a):
    group = backend.autoscaling_groups.get(a.get("name") or a.get("group_name"))
    if group is not None:
        refill(group)


@once
def install():
    """Apply the warm pool patches once per process (idempotent; after :func:`fidelity.install`)."""
    backend = asg_models.AutoScalingBackend
    backend.terminate_instance = _terminate_wrapper(backend.terminate_instance)
    fidelity._wrap(backend, "put_warm_pool", before=_before_put, after=_after_put)  # pylint: disable=protected-access
    fidelity._wrap(backend, "delete_warm_pool", before=_before_delete)  # pylint: disable=protected-access
    fidelity._wrap(backend, "update_auto_scaling_group", after=_after_size)  # pylint: disable=protected-access
    fidelity._wrap(backend, "set_desired_capacity", after=_after_size)  # pylint: disable=protected-access
    asg_responses.AutoScalingResponse.describe_warm_pool = describe_warm_pool
    # DescribeAutoScalingGroups: WarmPoolSize, with WarmPoolConfiguration
    asg_models.FakeAutoScalingGroup.warm_pool_size = property(lambda self: len(pool_of(self)) if self.warm_pool else None)
    fidelity.RUNNING_HOOKS.append(on_running)
    fidelity.LAUNCH_SOURCES.append(supply)
    fidelity.RECONCILE_HOOKS.append(tick)
