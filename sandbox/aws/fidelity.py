"""Patches that make moto's EC2 and Auto Scaling models behave like AWS where the project depends on it.

moto 5.2.5 was measured against the behaviour a rolling node upgrade relies on (see the research notes on
the test infrastructure); every gap that matters is closed here by a small in-process monkeypatch of
moto's model or response classes. Each patch names the AWS behaviour it restores.

The patches are process-wide and installed once (:func:`install` is idempotent). Behaviour that needs
the sandbox's clock, event log or fault settings (boot delay, events, insufficient capacity) reads the
active :class:`Context`; with no active context, instances boot at once and nothing is logged.

Known, documented differences from AWS that remain:

* moto never rebalances Availability Zones, so an ``AZRebalance`` suspension is only recorded (AWS's
  rebalancing would be a no-op in the sandbox anyway because launches are already AZ-balanced).
* ``TerminateInstances`` (EC2) on a group member replaces it at once; AWS does so after its next
  health check.
* Groups with a MixedInstancesPolicy keep moto's own scale-in order.
* The default termination policy ends with "oldest instance" where AWS uses "closest to the next
  billing hour", which per-second billing makes arbitrary.
"""

import copy
import heapq
import inspect
import itertools
import threading
from collections import Counter

from moto.autoscaling import models as asg_models
from moto.autoscaling import responses as asg_responses
from moto.autoscaling.exceptions import AutoscalingClientError, ValidationError
from moto.core.responses import ActionResult
from moto.core.types import Base64EncodedString
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models import instances as ec2_instances
from moto.ec2.models import subnets as ec2_subnets
from moto.ec2.responses import launch_templates as lt_responses
from moto.ec2.utils import parse_user_data

from .patching import once

ASG_NAME_TAG = "aws:autoscaling:groupName"
PROCESS_NAMES = (
    "Launch",
    "Terminate",
    "AddToLoadBalancer",
    "AlarmNotification",
    "AZRebalance",
    "HealthCheck",
    "InstanceRefresh",
    "ReplaceUnhealthy",
    "ScheduledActions",
)

_CTX = None
_LOCAL = threading.local()
_SEQ = itertools.count(1)
# Called with each instance whose simulated boot completed, under the context's lock (targets.py registers it).
RUNNING_HOOKS = []
# Called as ``hold(group, states, reason)`` for the members a group is about to terminate; each returns the states it
# keeps for later (lifecycle.py: a termination lifecycle hook's Terminating:Wait), the rest are terminated at once.
TERMINATION_HOLDS = []
# Called as ``tick(backend, now)`` by the sandbox's reconcile loop, under the lock (lifecycle.py: hook timeouts).
RECONCILE_HOOKS = []
# Called as ``supply(group, count)`` before a group launches ``count`` instances; each returns how many it supplied
# itself (warm_pools.py: prepared instances of the group's warm pool).
LAUNCH_SOURCES = []


class Context:
    """What the patches need from the running sandbox: clock, event log, boot delay, fault settings."""

    def __init__(self, clock, events, boot_seconds, faults, lock=None):
        self.clock = clock
        self.lock = lock if lock is not None else threading.RLock()   # the lock that serialises moto access
        self.events = events
        self.boot_seconds = float(boot_seconds)
        self.faults = faults
        self._boot_heap = []
        self._boot_cond = threading.Condition()
        self._stopping = False

    def emit(self, kind, **fields):
        if self.events is not None:
            self.events.emit(kind, **fields)

    def schedule_boot(self, ready_at, instance):
        with self._boot_cond:
            heapq.heappush(self._boot_heap, (ready_at, next(_SEQ), instance))
            self._boot_cond.notify()

    def run_boot_loop(self):
        """Emit ``instance.running`` when each instance's simulated boot completes (runs in a thread)."""
        while True:
            with self._boot_cond:
                while not self._stopping:
                    if not self._boot_heap:
                        self._boot_cond.wait()
                        continue
                    delay = self._boot_heap[0][0] - self.clock.now()
                    if delay <= 0:
                        break
                    self._boot_cond.wait(self.clock.wall_for(delay))
                if self._stopping:
                    return
                ready_at, _seq, instance = heapq.heappop(self._boot_heap)
            state = instance.__dict__.get("_state")
            # An instance terminated or stopped while booting never reports running.
            if isinstance(state, BootingState) and state.fixed_name is None:
                info = instance.__dict__.get("_sb_info") or {}
                self.emit("instance.running", instance_id=instance.id, group=info.get("group"),
                          az=info.get("az"), ready_at=round(ready_at, 3))
                with self.lock:
                    for hook in RUNNING_HOOKS:
                        hook(instance)

    def stop(self):
        with self._boot_cond:
            self._stopping = True
            self._boot_cond.notify_all()


def activate(ctx):
    global _CTX  # pylint: disable=global-statement
    _CTX = ctx


def deactivate():
    global _CTX  # pylint: disable=global-statement
    _CTX = None


def active():
    """The active :class:`Context`, or None."""
    return _CTX


class _Reason:
    """Context manager naming why instances terminated inside it are terminated (for the event log)."""

    def __init__(self, reason):
        self.reason = reason
        self.saved = None

    def __enter__(self):
        self.saved = getattr(_LOCAL, "reason", None)
        _LOCAL.reason = self.reason

    def __exit__(self, *exc):
        _LOCAL.reason = self.saved


class BootingState(ec2_instances.InstanceState):
    """EC2 instance state that reads ``pending`` until the simulated boot completes, then ``running``.

    AWS: RunInstances returns instances in ``pending``; they turn ``running`` once booted. moto makes them
    ``running`` at once. An explicit assignment (stop, terminate, start) fixes the state from then on.
    """

    def __init__(self, clock, ready_at):  # pylint: disable=super-init-not-called
        self._clock = clock
        self._ready_at = ready_at
        self.fixed_name = None
        self.fixed_code = None

    @property
    def ready_at(self):
        """When (simulated seconds) the boot completes, unless a stop or a termination came first."""
        return self._ready_at if self.fixed_name is None else float("inf")

    def booted(self, now=None):
        if self._clock is None:
            return True
        return (self._clock.now() if now is None else now) >= self._ready_at

    def name_at(self, now):
        if self.fixed_name is not None:
            return self.fixed_name
        return "running" if self.booted(now) else "pending"

    @property
    def name(self):
        return self.name_at(None)

    @name.setter
    def name(self, value):
        self.fixed_name = value

    @property
    def code(self):
        if self.fixed_code is not None:
            return self.fixed_code
        return 16 if self.booted() else 0

    @code.setter
    def code(self, value):
        self.fixed_code = value

    def __copy__(self):
        # moto copies the state to report PreviousState; freeze the value seen at that instant.
        return ec2_instances.InstanceState(self.name, self.code)


def instance_booting(instance):
    state = instance.__dict__.get("_state")
    return isinstance(state, BootingState) and state.fixed_name is None and not state.booted()


def state_name(instance, now):
    state = instance.__dict__.get("_state")
    if isinstance(state, BootingState):
        return state.name_at(now)
    return state.name


# --------------------------------------------------------------------------------------------------
# EC2
# --------------------------------------------------------------------------------------------------

def _user_data_text(instance):
    """An instance's user data as text (moto keeps it base64), or None."""
    data = getattr(instance, "user_data", None)
    if data is None:
        return None
    try:
        return data.decode() if hasattr(data, "decode") else str(data)
    except (ValueError, UnicodeDecodeError):
        return None


def _patch_run_instances():
    original = ec2_instances.InstanceBackend.run_instances

    def run_instances(self, image_id, count, user_data, security_group_names, **kwargs):
        ctx = _CTX
        group = getattr(_LOCAL, "launch_group", None)
        if ctx is not None and group is None:
            # AWS: a launch into an AZ without capacity fails with InsufficientInstanceCapacity.
            az = kwargs.get("placement")
            if kwargs.get("subnet_id"):
                az = self.get_subnet(kwargs["subnet_id"]).availability_zone
            if az and az in ctx.faults.insufficient_capacity_azs():
                raise EC2ClientError(
                    "InsufficientInstanceCapacity",
                    "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). "
                    "Our system will be working on provisioning additional capacity." % (kwargs.get("instance_type", "m1.small"), az))
        reservation = original(self, image_id, count, user_data, security_group_names, **kwargs)
        lt_record = None
        if kwargs.get("launch_template"):
            version = self._get_template_from_args(kwargs["launch_template"])  # pylint: disable=protected-access
            lt_record = {"id": version.template.id, "name": version.template.name, "version": str(version.number)}
        now = ctx.clock.now() if ctx is not None else None
        for instance in reservation.instances:
            # AWS: a new instance is `pending` until it has booted.
            if ctx is not None and ctx.boot_seconds > 0:
                ready_at = now + ctx.boot_seconds
                instance._state = BootingState(ctx.clock, ready_at)  # pylint: disable=protected-access
            else:
                ready_at = now
            instance._sb_lt = lt_record  # pylint: disable=protected-access
            instance._sb_seq = next(_SEQ)  # pylint: disable=protected-access
            info = {
                "instance_id": instance.id,
                "az": instance.placement.zone,
                "private_dns_name": instance.private_dns_name,
                "private_ip": instance.private_ip,
                "instance_type": instance.instance_type,
                "image_id": instance.image_id,
                "launch_time": round(now, 3) if now is not None else None,
                "group": group,
                "launch_template": {"id": lt_record["id"], "version": lt_record["version"]} if lt_record else {"id": None, "version": None},
                # what its kubelet is started with (the launch template version's, when it launched from one): the
                # startup taints of --register-with-taints (sandbox/startup_taints.py)
                "user_data": _user_data_text(instance),
            }
            instance._sb_info = info  # pylint: disable=protected-access
            if ctx is not None:
                ctx.emit("instance.launched", instance_id=instance.id, group=group, az=info["az"],
                         lt_id=info["launch_template"]["id"], lt_version=info["launch_template"]["version"],
                         image_id=instance.image_id, private_dns_name=info["private_dns_name"])
                if ctx.boot_seconds > 0:
                    ctx.schedule_boot(ready_at, instance)
                else:
                    ctx.emit("instance.running", instance_id=instance.id, group=group, az=info["az"], ready_at=round(now, 3))
        return reservation

    ec2_instances.InstanceBackend.run_instances = run_instances


def _patch_terminate():
    original = ec2_instances.Instance.terminate

    def terminate(self):
        already = self.state == "terminated"
        previous = original(self)
        ctx = _CTX
        if ctx is not None and not already:
            info = self.__dict__.get("_sb_info") or {}
            ctx.emit("instance.terminated", instance_id=self.id, group=info.get("group"), az=self.placement.zone,
                     reason=getattr(_LOCAL, "reason", None) or "ec2-terminate")
        return previous

    ec2_instances.Instance.terminate = terminate


def _patch_subnet_ips():
    original = ec2_subnets.Subnet.get_available_subnet_ip

    def get_available_subnet_ip(self, instance):
        # AWS does not hand a just-released private IP (and so the same private DNS name, which is the
        # Kubernetes node name) to the next instance; moto reuses released IPs first. Use fresh ones first.
        released = self._unused_ips  # pylint: disable=protected-access
        self._unused_ips = set()  # pylint: disable=protected-access
        try:
            return original(self, instance)
        except StopIteration:
            self._unused_ips, released = released, set()  # pylint: disable=protected-access
            return original(self, instance)
        finally:
            self._unused_ips |= released  # pylint: disable=protected-access

    ec2_subnets.Subnet.get_available_subnet_ip = get_available_subnet_ip


def _patch_launch_template_versions():
    original = lt_responses.LaunchTemplates.create_launch_template_version

    def create_launch_template_version(self):
        # AWS: with SourceVersion, the new version inherits the source's LaunchTemplateData and the
        # request's LaunchTemplateData overrides it; moto ignores SourceVersion. moto also stores a new
        # version's UserData unparsed, which breaks launches from it.
        data = dict(self._get_param("LaunchTemplateData", {}) or {})  # pylint: disable=protected-access
        if data.get("UserData") is not None and not isinstance(data["UserData"], Base64EncodedString):
            data["UserData"] = parse_user_data(data["UserData"])
        source = self._get_param("SourceVersion")  # pylint: disable=protected-access
        if source:
            name = self._get_param("LaunchTemplateName")  # pylint: disable=protected-access
            template_id = self._get_param("LaunchTemplateId")  # pylint: disable=protected-access
            if template_id:
                template = self.ec2_backend.get_launch_template(template_id)
            else:
                template = self.ec2_backend.get_launch_template_by_name(name)
            merged = copy.deepcopy(template.get_version(source).data)
            merged.update(data)
            data = merged
        self.params["LaunchTemplateData"] = data
        return original(self)

    lt_responses.LaunchTemplates.create_launch_template_version = create_launch_template_version


# --------------------------------------------------------------------------------------------------
# Auto Scaling: per-instance state
# --------------------------------------------------------------------------------------------------

def _patch_instance_state():
    cls = asg_models.InstanceState
    original_lt = cls.launch_template

    def get_lifecycle(self):
        # AWS: an instance is `Pending` until it has booted, then `InService`.
        state = self.__dict__.get("_sb_lifecycle", "InService")
        if state == "InService" and instance_booting(self.instance):
            return "Pending"
        return state

    def set_lifecycle(self, value):
        self.__dict__["_sb_lifecycle"] = value

    def launch_template(self):
        # AWS: each instance reports the launch template version it was launched with; moto reports the
        # template's current default version for every instance.
        record = self.instance.__dict__.get("_sb_lt")
        if record is None:
            return original_lt.fget(self)
        return {"LaunchTemplateId": record["id"], "LaunchTemplateName": record["name"], "Version": record["version"]}

    cls.lifecycle_state = property(get_lifecycle, set_lifecycle)
    cls.launch_template = property(launch_template)

    def active_instances(self):
        # Pending (booting) instances count towards desired capacity, as in AWS.
        return [s for s in self.instance_states if s.__dict__.get("_sb_lifecycle", "InService") == "InService"]

    asg_models.FakeAutoScalingGroup.active_instances = active_instances


def in_service_count(group):
    return sum(1 for s in group.instance_states if s.lifecycle_state == "InService")


# --------------------------------------------------------------------------------------------------
# Auto Scaling: launching, scale-in
# --------------------------------------------------------------------------------------------------

def _placements(group):
    """Ordered [(az, subnet_id or None)], one per AZ, in the group's subnet (or AZ) order."""
    seen = {}
    if group.vpc_zone_identifier:
        for subnet_id in group.vpc_zone_identifier.split(","):
            subnet_id = subnet_id.strip()
            az = group.ec2_backend.get_subnet(subnet_id).availability_zone
            seen.setdefault(az, subnet_id)
    else:
        for az in group.availability_zones:
            seen.setdefault(az, None)
    return list(seen.items())


def _override(group):
    """The MixedInstancesPolicy override AWS launches from: On-Demand's default allocation strategy, ``prioritized``,
    takes the first one (None without overrides)."""
    overrides = ((group.mixed_instances_policy or {}).get("LaunchTemplate") or {}).get("Overrides") or []
    return overrides[0] if overrides else None


def _launch_spec(group, tags):
    """What to launch: the group's launch template version resolved to a number now (or its launch configuration).

    AWS: with a MixedInstancesPolicy, the instance type of the override launched, from the launch template the override
    names, when it names one, instead of the group's."""
    if group.ec2_launch_template:
        template, wanted = group.ec2_launch_template, group.launch_template_version
        override = _override(group)
        own = (override or {}).get("LaunchTemplateSpecification")
        if own:
            ec2 = group.autoscaling_backend.ec2_backend
            template = (ec2.get_launch_template(own["LaunchTemplateId"]) if own.get("LaunchTemplateId")
                        else ec2.get_launch_template_by_name(own["LaunchTemplateName"]))
            wanted = own.get("Version") or "$Default"
        version = template.get_version(wanted)
        tags.update(version.instance_tags)
        return {"image_id": version.image_id, "instance_type": (override or {}).get("InstanceType") or version.instance_type,
                "user_data": version.user_data, "security_groups": version.security_groups,
                "launch_template": {"LaunchTemplateId": template.id, "Version": str(version.number)}}
    tags.update(group.instance_tags)
    return {"image_id": group.image_id, "instance_type": group.instance_type, "user_data": group.user_data,
            "security_groups": group.security_groups, "launch_template": None}


def _replace_instances(self, count_needed, propagated_tags):
    """Launch ``count_needed`` instances the way AWS does.

    * AWS: no launches while the ``Launch`` process is suspended (desired may stay above the count).
    * AWS: a group with a warm pool takes its prepared instances first (:data:`LAUNCH_SOURCES`, warm_pools.py).
    * AWS: each instance goes to the AZ with the fewest instances (ties: first in subnet order); moto
      puts every instance in the first subnet.
    * AWS: a launch into an AZ without capacity fails and the group tries its other AZs; if none has
      capacity the instance is not launched and desired stays above the count.
    * Each instance is launched from the resolved launch template version and remembers it.
    """
    ctx = _CTX
    if count_needed <= 0:
        return
    if "Launch" in self._suspended_processes:  # pylint: disable=protected-access
        if ctx is not None:
            ctx.emit("asg.launch_skipped", group=self.name, count=count_needed, reason="Launch suspended")
        return
    for source in LAUNCH_SOURCES:
        count_needed -= source(self, count_needed)
    self.instance_states.extend(launch_states(self, count_needed, propagated_tags, self.instance_states))


def launch_states(group, count_needed, propagated_tags, among):
    """Run ``count_needed`` instances of ``group`` (its launch template version resolved now), each in the AZ with the
    fewest of ``among`` (Auto Scaling InstanceStates), and return their new InstanceStates (not added anywhere)."""
    ctx = _CTX
    if count_needed <= 0:
        return []
    tags = dict(propagated_tags)
    tags[ASG_NAME_TAG] = group.name
    spec = _launch_spec(group, tags)
    placements = _placements(group)
    order = {p[0]: i for i, p in enumerate(placements)}
    counts = Counter({az: 0 for az in order})
    for state in among:
        if state.instance.placement.zone in counts:
            counts[state.instance.placement.zone] += 1
    short = set(ctx.faults.insufficient_capacity_azs()) if ctx is not None else set()
    usable = [p for p in placements if p[0] not in short]
    plan = []
    for _launch in range(count_needed if usable else 0):
        az, subnet_id = min(usable, key=lambda p: (counts[p[0]], order[p[0]]))
        counts[az] += 1
        plan.append((az, subnet_id))
    if ctx is not None and short & set(order):
        ctx.emit("asg.launch_failed", group=group.name, azs=sorted(short & set(order)), reason="InsufficientInstanceCapacity",
                 requested=count_needed, launched=len(plan))
    if not plan:
        return []
    associate_public_ip = group.launch_config.associate_public_ip_address if group.launch_config else None
    launched = {}
    _LOCAL.launch_group = group.name
    try:
        for placement, n in Counter(plan).items():
            az, subnet_id = placement
            reservation = group.autoscaling_backend.ec2_backend.run_instances(
                spec["image_id"], n, spec["user_data"], spec["security_groups"], instance_type=spec["instance_type"],
                tags={"instance": dict(tags)}, placement=az, launch_config=group.launch_config, launch_template=spec["launch_template"],
                is_instance_type_default=False, associate_public_ip=associate_public_ip, subnet_id=subnet_id)
            launched[placement] = iter(reservation.instances)
    finally:
        _LOCAL.launch_group = None
    states = []
    for placement in plan:
        instance = next(launched[placement])
        instance.autoscaling_group = group
        states.append(asg_models.InstanceState(instance, protected_from_scale_in=group.new_instances_protected_from_scale_in))
    return states


def _age_key(group):
    current = group.ec2_launch_template.id if group.ec2_launch_template else None

    def key(state):
        record = state.instance.__dict__.get("_sb_lt") or {}
        on_current = record.get("id") == current
        version = int(record["version"]) if record.get("version") else 0
        return (on_current, version, state.instance.__dict__.get("_sb_seq", 0))

    return key


def scale_in_victims(group, count):
    """AWS's default termination policy, applied one instance at a time.

    1. the AZ with the most instances (that has an unprotected one); 2. instances not on the group's
    current launch template, then the oldest launch template version; 3. the oldest instance.
    """
    active = group.active_instances()
    per_az = Counter(s.instance.placement.zone for s in active)
    order = {p[0]: i for i, p in enumerate(_placements(group))}
    pool = [s for s in active if not s.protected_from_scale_in]
    age = _age_key(group)
    victims = []
    for _victim in range(count):
        if not pool:
            break
        top = max(per_az[s.instance.placement.zone] for s in pool)
        fullest = [s for s in pool if per_az[s.instance.placement.zone] == top]
        victim = min(fullest, key=lambda s: (age(s), order.get(s.instance.placement.zone, 99)))
        victims.append(victim)
        pool.remove(victim)
        per_az[victim.instance.placement.zone] -= 1
    return victims


def _patch_group():
    cls = asg_models.FakeAutoScalingGroup
    original_set_desired = cls.set_desired_capacity
    original_launch_template = cls.launch_template

    def launch_template(self):
        # AWS: a group with a MixedInstancesPolicy names its launch template there only; moto reports it as the group's
        # LaunchTemplate too (without a version).
        return None if self.mixed_instances_policy else original_launch_template.fget(self)

    cls.launch_template = property(launch_template)

    def set_desired_capacity(self, new_capacity):
        if self.mixed_instances_policy and self.mixed_instances_policy.get("LaunchTemplate", {}).get("Overrides"):
            return original_set_desired(self, new_capacity)
        self.desired_capacity = self.min_size if new_capacity is None else new_capacity
        delta = (self.desired_capacity or 0) - len(self.active_instances())
        if delta > 0:
            self.replace_autoscaling_group_instances(delta, self.get_propagated_tags())
        elif delta < 0 and "Terminate" not in self._suspended_processes:  # pylint: disable=protected-access
            # AWS: scale-in follows the termination policy; moto removes the first instances in list order.
            victims = scale_in_victims(self, -delta)
            if victims:
                end_in_group(self, victims, "scale-in")
        if self.name in self.autoscaling_backend.autoscaling_groups:
            self.autoscaling_backend.update_attached_elbs(self.name)
            self.autoscaling_backend.update_attached_target_groups(self.name)
        return None

    cls.set_desired_capacity = set_desired_capacity
    cls.replace_autoscaling_group_instances = _replace_instances


# --------------------------------------------------------------------------------------------------
# Auto Scaling: API validation (AWS's ValidationError instead of acceptance or an HTTP 500)
# --------------------------------------------------------------------------------------------------

def _not_found(name):
    return ValidationError("AutoScalingGroup name not found - AutoScalingGroup '%s' not found" % (name,))


def _group(backend, name):
    group = backend.autoscaling_groups.get(name)
    if group is None:
        raise _not_found(name)
    return group


def _check_members(group, instance_ids):
    members = {s.instance.id for s in group.instance_states}
    for instance_id in instance_ids or []:
        if instance_id not in members:
            raise ValidationError("The instance %s is not part of Auto Scaling group %s." % (instance_id, group.name))


def _check_bounds(min_size, max_size, desired):
    if min_size is not None and max_size is not None and min_size > max_size:
        raise ValidationError("Max bound, %d, must be greater than or equal to min bound, %d" % (max_size, min_size))
    if desired is not None and ((min_size is not None and desired < min_size) or (max_size is not None and desired > max_size)):
        raise ValidationError("Desired capacity:%d must be between the specified min size:%s and max size:%s" % (desired, min_size, max_size))


def _check_decrement(group, count, verb):
    if (group.desired_capacity or 0) - count < (group.min_size or 0):
        raise ValidationError(
            "Currently, desiredSize equals minSize (%d). %s instance without replacement will violate group's min size "
            "constraint. Either set shouldDecrementDesiredCapacity flag to false or lower group's min size." % (group.min_size or 0, verb))


def _wrap(cls, name, before=None, after=None):
    """Replace ``cls.name`` by a wrapper that validates (``before``) and reports (``after``) by argument name."""
    original = getattr(cls, name)
    signature = inspect.signature(original)

    def wrapper(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop("self", None)
        override = before(self, arguments) if before else None
        if override:
            bound.arguments.update(override)
        result = original(*bound.args, **bound.kwargs)
        if after:
            after(self, arguments)
        return result

    wrapper.__name__ = name
    wrapper.__doc__ = original.__doc__
    wrapper.__wrapped__ = original   # a wrapper of a wrapper binds its arguments by the same names
    setattr(cls, name, wrapper)


def _int(value):
    return int(value) if value is not None else None


def _before_create(backend, a):
    # AWS: a duplicate name is AlreadyExists (moto silently replaces the group); bounds and tags are validated.
    _before_create_tags(backend, a)
    if a["name"] in backend.autoscaling_groups:
        raise AutoscalingClientError(
            "AlreadyExists", "AutoScalingGroup by this name already exists - A group with the name %s already exists" % (a["name"],))
    _check_bounds(_int(a["min_size"]), _int(a["max_size"]), _int(a["desired_capacity"]))


def _before_update(backend, a):
    group = backend.autoscaling_groups.get(a["name"])
    if group is None:
        raise ValidationError("AutoScalingGroup name not found - null")
    override = None
    if a.get("mixed_instances_policy") is None and group.mixed_instances_policy and not a.get("launch_template"):
        # AWS keeps the policy an update does not name; moto drops it on every update (a resize, say). moto stores the
        # template by id and name, and accepts only one of them back.
        policy = copy.deepcopy(group.mixed_instances_policy)
        policy["LaunchTemplate"]["LaunchTemplateSpecification"].pop("LaunchTemplateName", None)
        override = {"mixed_instances_policy": policy}
    min_size = group.min_size if a["min_size"] is None else a["min_size"]
    max_size = group.max_size if a["max_size"] is None else a["max_size"]
    _check_bounds(min_size, max_size, a["desired_capacity"])
    if a["desired_capacity"] is None and group.desired_capacity is not None:
        # AWS: with new bounds and no desired capacity, desired is moved into the bounds.
        clamped = max(min_size or 0, min(group.desired_capacity, max_size if max_size is not None else group.desired_capacity))
        if clamped != group.desired_capacity:
            override = dict(override or {}, desired_capacity=clamped)
    return override


def _before_set_desired(backend, a):
    group = _group(backend, a["group_name"])
    desired = a["desired_capacity"]
    if desired is not None and group.max_size is not None and desired > group.max_size:
        raise ValidationError("New SetDesiredCapacity value %d is above max value %d for the AutoScalingGroup." % (desired, group.max_size))
    if desired is not None and group.min_size is not None and desired < group.min_size:
        raise ValidationError("New SetDesiredCapacity value %d is below min value %d for the AutoScalingGroup." % (desired, group.min_size))


def _check_process_names(names):
    bad = [n for n in names or [] if n not in PROCESS_NAMES]
    if bad:
        raise ValidationError("Invalid value for ScalingProcesses: %s. Valid values are: %s" % (", ".join(bad), ", ".join(PROCESS_NAMES)))


def _before_processes(backend, a):
    _group(backend, a["group_name"])
    _check_process_names(a["scaling_processes"])


def _after_suspend(backend, a):
    group = backend.autoscaling_groups[a["group_name"]]
    ctx = _CTX
    if ctx is not None:
        ctx.emit("asg.processes", group=group.name, suspended=sorted(group._suspended_processes))  # pylint: disable=protected-access


def _after_resume(backend, a):
    group = backend.autoscaling_groups[a["group_name"]]
    _after_suspend(backend, a)
    # AWS: once Launch/Terminate are resumed the group converges on its desired capacity.
    group.set_desired_capacity(group.desired_capacity)


def _before_detach(backend, a):
    group = _group(backend, a["group_name"])
    _check_members(group, a["instance_ids"])
    if a["should_decrement"]:
        _check_decrement(group, len(set(a["instance_ids"] or [])), "Detaching")
    ctx = _CTX
    for state in group.instance_states:
        if state.instance.id in (a["instance_ids"] or []):
            info = state.instance.__dict__.get("_sb_info")
            if info is not None:
                info["group"] = None
            if ctx is not None:
                ctx.emit("instance.detached", instance_id=state.instance.id, group=group.name)


def _before_protection(backend, a):
    group = _group(backend, a["group_name"])
    _check_members(group, a["instance_ids"])


def _before_group_only(backend, a):
    _group(backend, a["group_name"])


MAX_GROUP_TAGS = 50
MAX_TAG_VALUE = 256


def _check_tag_values(tags):
    for index, tag in enumerate(tags or []):
        if len(str(tag.get("Value") or "")) > MAX_TAG_VALUE:
            raise ValidationError("1 validation error detected: Value '%s' at 'tags.%d.member.value' failed to satisfy constraint: "
                                  "Member must have length less than or equal to %d" % (tag.get("Value"), index + 1, MAX_TAG_VALUE))


def _before_tags(backend, a):
    """AWS: a group takes at most 50 tags (a write over the limit is refused whole, LimitExceeded) and a tag value at
    most 256 characters (ValidationError); moto takes any number of any length. The message is ours: AWS documents the
    code, not its text."""
    _check_tag_values(a["tags"])
    added = {}
    for tag in a["tags"] or []:
        added.setdefault(tag["ResourceId"], set()).add(tag["Key"])
    for name, keys in added.items():
        group = _group(backend, name)
        present = set(tag["Key"] for tag in group.tags)
        if len(present | keys) > MAX_GROUP_TAGS:
            raise AutoscalingClientError(
                "LimitExceeded", "Auto Scaling group %s would have %d tags; a group takes at most %d" % (name, len(present | keys), MAX_GROUP_TAGS))


def _before_create_tags(backend, a):
    _check_tag_values(a["tags"])
    if len(a["tags"] or []) > MAX_GROUP_TAGS:
        raise AutoscalingClientError("LimitExceeded", "Auto Scaling group %s would have %d tags; a group takes at most %d"
                                     % (a["name"], len(a["tags"]), MAX_GROUP_TAGS))


def _before_delete(backend, a):
    # moto deletes by scaling to 0 through set_desired_capacity, which now enforces MinSize.
    _group(backend, a["group_name"]).min_size = 0


def end_in_group(group, states, reason):
    """The group terminates ``states`` (members): each is held first where a :data:`TERMINATION_HOLDS` says so (it stays
    listed, leaving, and no longer counts toward the desired capacity); the others are terminated and leave the group."""
    held = []
    for hold in TERMINATION_HOLDS:
        held.extend(hold(group, [s for s in states if not any(s is h for h in held)], reason))
    ending = [s for s in states if not any(s is h for h in held)]
    if ending:
        with _Reason(reason):
            group.autoscaling_backend.ec2_backend.terminate_instances([s.instance.id for s in ending])
        gone = set(id(s) for s in ending)
        group.instance_states = [s for s in group.instance_states if id(s) not in gone]


def terminate_instance(self, instance_id, should_decrement):
    """TerminateInstanceInAutoScalingGroup.

    AWS: an unknown instance is a ValidationError (moto: HTTP 500); decrementing below MinSize is refused;
    the replacement (when not decrementing) uses the group's current launch template version and is not
    launched while ``Launch`` is suspended. Scale-in protection does not hold it back. A termination lifecycle hook
    holds the instance in ``Terminating:Wait`` (lifecycle.py) while its replacement launches.
    """
    state = next((s for g in self.autoscaling_groups.values() for s in g.instance_states if s.instance.id == instance_id), None)
    if state is None:
        raise ValidationError("Instance Id not found - No managed instance found for instance ID: %s" % (instance_id,))
    group = state.auto_scaling_group
    original_size = group.desired_capacity
    if should_decrement:
        _check_decrement(group, 1, "Terminating")
        group.desired_capacity = original_size - 1
    end_in_group(group, [state], "asg-terminate")
    group.set_desired_capacity(group.desired_capacity)
    return asg_models.TerminateInstanceActivity(state.instance, original_size)


def _patch_backend():
    backend = asg_models.AutoScalingBackend
    _wrap(backend, "create_auto_scaling_group", before=_before_create)
    _wrap(backend, "update_auto_scaling_group", before=_before_update)
    _wrap(backend, "set_desired_capacity", before=_before_set_desired)
    _wrap(backend, "suspend_processes", before=_before_processes, after=_after_suspend)
    _wrap(backend, "resume_processes", before=_before_processes, after=_after_resume)
    _wrap(backend, "detach_instances", before=_before_detach)
    _wrap(backend, "set_instance_protection", before=_before_protection)
    _wrap(backend, "enter_standby_instances", before=_before_group_only)
    _wrap(backend, "exit_standby_instances", before=_before_group_only)
    _wrap(backend, "delete_auto_scaling_group", before=_before_delete)
    _wrap(backend, "create_or_update_tags", before=_before_tags)
    backend.terminate_instance = terminate_instance


def _patch_instance_pages():
    def describe_auto_scaling_instances(self):
        # AWS: at most MaxRecords (default and maximum 50) instances per page, with a NextToken; moto
        # returns every instance in one page, which hides a missing pagination loop.
        states = self.autoscaling_backend.describe_auto_scaling_instances(instance_ids=self._get_param("InstanceIds", []))  # pylint: disable=protected-access
        limit = self._get_int_param("MaxRecords", 50)  # pylint: disable=protected-access
        if not 1 <= limit <= 50:
            raise ValidationError("1 validation error detected: Value '%d' at 'maxRecords' failed to satisfy constraint: "
                                  "Member must have value less than or equal to 50" % (limit,))
        token = self._get_param("NextToken")  # pylint: disable=protected-access
        if token and not token.isdigit():
            raise ValidationError("The token '%s' is invalid." % (token,))
        start = int(token or 0)
        page = states[start:start + limit]
        more = start + limit < len(states)
        return ActionResult({"AutoScalingInstances": page, "NextToken": str(start + limit) if more else None})

    asg_responses.AutoScalingResponse.describe_auto_scaling_instances = describe_auto_scaling_instances


@once
def install():
    """Apply every patch once per process (idempotent)."""
    _patch_run_instances()
    _patch_terminate()
    _patch_subnet_ips()
    _patch_launch_template_versions()
    _patch_instance_state()
    _patch_group()
    _patch_backend()
    _patch_instance_pages()
    from . import lifecycle, targets, warm_pools  # pylint: disable=import-outside-toplevel
    targets.install()
    lifecycle.install()
    warm_pools.install()
