"""Patches that make moto answer in time for a group of a thousand instances, without changing any answer.

Fidelity patches (``fidelity.py``) change what moto does so that it behaves as AWS does; these change only how fast
it does it, and each says which moto code path was linear in something that grows with the sandbox.

- ``TaggedEC2Resource.get_tags``: moto reads one resource's tags by filtering every tag of the region with a
  regular expression per tag (``TagBackend.describe_tags`` with a ``resource-id`` filter), and it does so for each
  instance it serializes. A DescribeInstances of 1 100 instances with five tags each matched 6 million tags. The
  tags are kept per resource id already: read that resource's entry. Same list, same order, same fields.
"""

from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

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


@once
def install():
    """Apply every patch once per process (idempotent)."""
    TaggedEC2Resource.get_tags = _get_tags
