"""Patches that make moto answer in time for a group of a thousand instances, without changing any answer.

Fidelity patches (``fidelity.py``) change what moto does so that it behaves as AWS does; these change only how fast
it does it, and each says which moto code path was linear in something that grows with the sandbox.

- ``TaggedEC2Resource.get_tags``: moto reads one resource's tags by filtering every tag of the region with a
  regular expression per tag (``TagBackend.describe_tags`` with a ``resource-id`` filter), and it does so for each
  instance it serializes. A DescribeInstances of 1 100 instances with five tags each matched 6 million tags. The
  tags are kept per resource id already: read that resource's entry. Same list, same order, same fields.
- ``InstanceBackend.all_reservations`` and every instance lookup built on it (``get_instance``,
  ``get_instance_by_id``, ``get_multi_instances_by_id``, ``all_instances``, ``all_running_instances``): moto
  copies every reservation of the region (``copy.copy``) on each call, even to find one instance, and terminated
  instances keep their reservation. A replacement (TerminateInstanceInAutoScalingGroup, then a launch) looks
  instances up several times: with 2 200 instances in the region, each copied 2 700 reservations, and 200
  replacements took 6.8 s (4.2 s without the copies), growing with every step of a rollout. A lookup now reads
  the reservations without copying them; a filtered ``all_reservations`` (DescribeInstances with filters) copies only the reservations that match, each holding
  its matching instances, as moto's ``filter_reservations`` leaves them; so does ``get_reservations_by_instance_ids``
  (DescribeInstances with InstanceIds). Same instances, same order, same errors.
"""

import copy

from moto.ec2.exceptions import InvalidInstanceIdError
from moto.ec2.models import instances as ec2_instances
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, filter_reservations, get_prefix, passes_filter_dict

from .patching import once


def _get_tags(self):
    resource_id = self.id
    if not resource_id:
        return []
    tags = self.ec2_backend.tags.get(resource_id)
    if not tags:
        return []
    resource_type = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    return [{"resource_id": resource_id, "key": key, "value": value, "resource_type": resource_type}
            for key, value in list(tags.items())]


def _instances(backend):
    """Every instance of the region, reservation by reservation, without copying anything (callers only read)."""
    return [instance for reservation in list(backend.reservations.values()) for instance in reservation.instances]


def _matching(backend, keep):
    """Copies of the reservations holding an instance ``keep`` accepts, each with only those instances (as moto's
    ``filter_reservations`` leaves them); the others are not copied."""
    matched = []
    for reservation in list(backend.reservations.values()):
        instances = [instance for instance in reservation.instances if keep(instance)]
        if instances:
            reservation = copy.copy(reservation)
            reservation.instances = instances
            matched.append(reservation)
    return matched


def _all_reservations(self, filters=None):
    if filters is None:
        return [copy.copy(reservation) for reservation in list(self.reservations.values())]
    return _matching(self, lambda instance: passes_filter_dict(instance, filters))


def _get_reservations_by_instance_ids(self, instance_ids, filters=None):
    wanted = set(instance_ids)
    reservations = _matching(self, lambda instance: instance.id in wanted)
    found = [instance.id for reservation in reservations for instance in reservation.instances]
    if len(found) != len(instance_ids):
        raise InvalidInstanceIdError(list(set(instance_ids).difference(set(found)))[0])
    return filter_reservations(reservations, filters) if filters is not None else reservations


def _get_instance(self, instance_id):
    instance = _get_instance_by_id(self, instance_id)
    if instance is None:
        raise InvalidInstanceIdError(instance_id)
    return instance


def _get_instance_by_id(self, instance_id):
    return next((instance for instance in _instances(self) if instance.id == instance_id), None)


def _get_multi_instances_by_id(self, instance_ids, filters=None):
    known = {instance.id: instance for instance in _instances(self)}
    missing = [instance_id for instance_id in instance_ids if instance_id not in known]
    if missing:
        raise InvalidInstanceIdError(missing)
    return [known[instance_id] for instance_id in instance_ids if known[instance_id].applies(filters)]


def _all_instances(self, filters=None):
    return [instance for instance in _instances(self) if instance.applies(filters)]


def _all_running_instances(self, filters=None):
    return [instance for instance in _instances(self) if instance.state_code == 16 and instance.applies(filters)]


# What each patch replaces on moto's InstanceBackend, by name. install() keeps moto's own functions in MOTO so that a
# test can ask both the same questions and compare the answers.
INSTANCE_LOOKUPS = {
    "all_reservations": _all_reservations,
    "get_reservations_by_instance_ids": _get_reservations_by_instance_ids,
    "get_instance": _get_instance,
    "get_instance_by_id": _get_instance_by_id,
    "get_multi_instances_by_id": _get_multi_instances_by_id,
    "all_instances": _all_instances,
    "all_running_instances": _all_running_instances,
}
MOTO = {}


@once
def install():
    """Apply every patch once per process (idempotent)."""
    TaggedEC2Resource.get_tags = _get_tags
    for name, patched in INSTANCE_LOOKUPS.items():
        MOTO[name] = getattr(ec2_instances.InstanceBackend, name)
        setattr(ec2_instances.InstanceBackend, name, patched)
