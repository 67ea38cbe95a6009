# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Persistent volumes in a drain: which pods can only run where their volume is, and which claims one node holds.
Pure.

A PersistentVolume with required node affinity (an EBS volume: its zone, ``topology.kubernetes.io/zone`` or
``topology.ebs.csi.aws.com/zone``) can be used only by a pod on a node its terms select: evicted, such a pod can only
start again on such a node, and stays ``Pending`` ("volume node affinity conflict") while none is schedulable. A claim
with access mode ``ReadWriteOnce`` (or ``ReadWriteOncePod``) is attached to one node at a time: a second pod using it
cannot start elsewhere while the first one holds it.

Objects are the API's JSON: pods, PersistentVolumeClaims (``claims``: ``namespace/name`` -> claim), PersistentVolumes
(``volumes``: name -> volume), nodes.
"""

from __future__ import annotations

ZONE_KEYS = ("topology.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone", "failure-domain.beta.kubernetes.io/zone")
EXCLUSIVE_MODES = ("ReadWriteOnce", "ReadWriteOncePod")


def claim_names(pod):
    """The PersistentVolumeClaims the pod mounts, by name."""
    return [volume["persistentVolumeClaim"]["claimName"] for volume in (pod.get("spec") or {}).get("volumes") or []
            if (volume.get("persistentVolumeClaim") or {}).get("claimName")]


def _namespace(pod):
    return (pod.get("metadata") or {}).get("namespace") or "default"


def volume_terms(volume):
    """The volume's required node selector terms (ORed), or None when it may be used on any node."""
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    terms = required.get("nodeSelectorTerms")
    return terms or None


def volume_zones(volume):
    """The zones the volume's terms name (``In`` on a zone label), sorted; empty when it names none."""
    zones = set()
    for term in volume_terms(volume) or []:
        for requirement in term.get("matchExpressions") or []:
            if requirement.get("key") in ZONE_KEYS and requirement.get("operator") == "In":
                zones.update(requirement.get("values") or [])
    return sorted(zones)


def _requirement_matches(requirement, labels):
    key, operator, values = requirement.get("key"), requirement.get("operator"), requirement.get("values") or []
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            number, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def term_matches(term, labels, name):
    """Whether a node selector term (``matchExpressions``, ``matchFields`` on ``metadata.name``) holds for a node with
    ``labels`` and ``name``, as the scheduler reads it: both lists, every requirement."""
    expressions = (term or {}).get("matchExpressions") or []
    fields = (term or {}).get("matchFields") or []
    if not expressions and not fields:
        return False   # an empty term selects nothing, as the scheduler reads it
    if not all(_requirement_matches(requirement, labels) for requirement in expressions):
        return False
    return all(_requirement_matches(requirement, {"metadata.name": name}) for requirement in fields)


def fits(volume, labels, name=None):
    """Whether a node with ``labels`` (and ``name``) may use the volume."""
    terms = volume_terms(volume)
    return terms is None or any(term_matches(term, labels or {}, name) for term in terms)


def zone_labels(zone):
    """The zone labels a new EC2 node in ``zone`` carries (EKS, the EBS CSI driver, the legacy label)."""
    return {key: zone for key in ZONE_KEYS}


def pinned_volumes(pod, claims, volumes):
    """The pod's volumes that node affinity pins: ``[{"claim", "volume", "zones", "exclusive"}]`` (claims not bound to
    a known volume are left out: nothing pins them yet)."""
    found = []
    for name in claim_names(pod):
        claim = claims.get("%s/%s" % (_namespace(pod), name))
        volume = volumes.get(((claim or {}).get("spec") or {}).get("volumeName") or "")
        if claim is None or volume is None or volume_terms(volume) is None:
            continue
        found.append({"claim": name, "volume": volume["metadata"]["name"], "zones": volume_zones(volume),
                      "exclusive": claim_is_exclusive(claim)})
    return found


def claim_is_exclusive(claim):
    """Whether the claim may be attached to one node at a time (ReadWriteOnce, ReadWriteOncePod)."""
    modes = (claim.get("status") or {}).get("accessModes") or (claim.get("spec") or {}).get("accessModes") or []
    return bool(set(modes) & set(EXCLUSIVE_MODES))


def exclusive_claims(pod, claims):
    """The pod's claims that only one node can attach at a time, by name."""
    return [name for name in claim_names(pod)
            if claim_is_exclusive(claims.get("%s/%s" % (_namespace(pod), name)) or {})]


def homes(volume, nodes, leaving=(), new_zones=()):
    """Where a pod using ``volume`` could start again: the names of the Ready, schedulable ``nodes`` (node_summary
    shape: ``name``, ``ready``, ``schedulable``, ``labels``, ``taints``) that are not ``leaving`` and that the volume's
    terms select, plus ``zone:<z>`` for each of ``new_zones`` (zones new nodes will be launched in) they select."""
    leaving = set(leaving)
    found = []
    for node in nodes:
        if node["name"] in leaving or not node.get("ready") or not node.get("schedulable"):
            continue
        if any(taint.get("effect") in ("NoSchedule", "NoExecute") for taint in node.get("taints") or []):
            continue
        if fits(volume, node.get("labels") or {}, node["name"]):
            found.append(node["name"])
    found.extend("zone:%s" % zone for zone in new_zones if fits(volume, zone_labels(zone)))
    return found


def attachments_by_node(attachments):
    """VolumeAttachments grouped by node: ``{node: [{"volume", "state"}]}``, ``state`` ``attached``, ``attaching`` or
    ``detaching`` (being deleted)."""
    found = {}
    for attachment in attachments:
        spec = attachment.get("spec") or {}
        name = (spec.get("source") or {}).get("persistentVolumeName")
        if not spec.get("nodeName") or not name:
            continue
        if (attachment.get("metadata") or {}).get("deletionTimestamp"):
            state = "detaching"
        else:
            state = "attached" if (attachment.get("status") or {}).get("attached") else "attaching"
        found.setdefault(spec["nodeName"], []).append({"volume": name, "state": state})
    return found


def volume_holds(node, attached, timeout):
    """What the volumes still attached to ``node`` hold back its instance's termination, as ``rollout.steps`` reads
    holds: ``[{"kind": "volume", "name", "state", "timeout"}]`` (``attached``: :func:`attachments_by_node`)."""
    return [{"kind": "volume", "name": entry["volume"], "state": entry["state"], "timeout": timeout}
            for entry in sorted(attached.get(node) or [], key=lambda entry: entry["volume"])]


def pinned_zones(node, attached, volumes):
    """The zones the volumes attached to ``node`` are pinned to (``volumes``: name -> PersistentVolume), sorted."""
    zones = set()
    for entry in attached.get(node) or []:
        volume = volumes.get(entry["volume"])
        if volume is not None:
            zones.update(volume_zones(volume))
    return sorted(zones)


def stranded_volumes(leaving, attached, volumes, nodes, new_zones):
    """The volumes attached to the ``leaving`` nodes whose pods could start again nowhere: no Ready, schedulable node
    that stays matches them, and no zone of ``new_zones`` does. ``[{"node", "volume", "zones", "claim"}]`` (``claim``:
    ``namespace/name`` from the volume's ``claimRef``, or None)."""
    found = []
    for node in sorted(leaving):
        for entry in attached.get(node) or []:
            volume = volumes.get(entry["volume"])
            if volume is None or volume_terms(volume) is None or homes(volume, nodes, leaving, new_zones):
                continue
            ref = (volume.get("spec") or {}).get("claimRef") or {}
            claim = "%s/%s" % (ref.get("namespace"), ref.get("name")) if ref.get("name") else None
            found.append({"node": node, "volume": entry["volume"], "zones": volume_zones(volume), "claim": claim})
    return found
