# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pods on a node being drained, judged one by one: which are evicted, which are left alone and why.

Pure: pods in the API's JSON form (``metadata``, ``spec``, ``status``, camelCase keys). ``classify_pod`` applies the
filters in kubectl's order (``pkg/drain/filters.go``): finished or terminating, mirror, DaemonSet, then the pods that
need an option to be evicted.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError


# Pod annotations that ask not to be evicted, with the value that means "do not".
ANNOTATION_MIRROR = "kubernetes.io/config.mirror"


DO_NOT_DISRUPT_ANNOTATIONS = (
    ("karpenter.sh/do-not-disrupt", "true"),
    ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false"),
    ("nodeops.rollout/do-not-evict", "true"),
)


# Owner kinds whose pods form a replicated workload; one replica means downtime when its pod moves.
REPLICATED_OWNER_KINDS = ("ReplicaSet", "Deployment", "StatefulSet", "ReplicationController")


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def pod_key(pod):
    """``namespace/name`` of a pod (or any namespaced object)."""
    metadata = pod.get("metadata") or {}
    return "%s/%s" % (metadata.get("namespace") or "default", metadata.get("name") or "")


def controller_of(pod):
    """The pod's controller ownerReference (the one with ``controller: true``), or None."""
    for reference in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(reference, dict) and reference.get("controller") is True:
            return reference
    return None


def owner_key(namespace, kind, name):
    """Key of ``replicas_by_owner`` maps: ``namespace/Kind/name`` of a pod's controller."""
    return "%s/%s/%s" % (namespace or "default", kind, name)


def pod_owner_key(pod):
    """``namespace/Kind/name`` of the pod's controller, or None for a pod no controller manages."""
    reference = controller_of(pod)
    if reference is None:
        return None
    return owner_key((pod.get("metadata") or {}).get("namespace"), reference.get("kind"), reference.get("name"))


def pod_is_terminating(pod):
    """Whether the pod is being deleted (``metadata.deletionTimestamp`` is set)."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_is_finished(pod):
    """Whether the pod has run to completion (phase Succeeded or Failed)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_is_ready(pod):
    """Whether the pod's Ready condition is True."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def pod_uses_emptydir(pod):
    """Whether the pod mounts an emptyDir volume (its data is lost when the pod leaves the node)."""
    return any(isinstance(volume, dict) and volume.get("emptyDir") is not None
               for volume in (pod.get("spec") or {}).get("volumes") or [])


def do_not_disrupt_annotation(pod):
    """The annotation asking not to evict the pod, as ``key: "value"`` text, or None."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    for key, value in DO_NOT_DISRUPT_ANNOTATIONS:
        if str(annotations.get(key, "")).strip().lower() == value:
            return '%s: "%s"' % (key, value)
    return None


def tolerates_every_taint(pod, effect="NoSchedule"):
    """Whether the pod tolerates every taint of ``effect`` (a toleration ``operator: Exists`` with no key)."""
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if not isinstance(toleration, dict) or toleration.get("key"):
            continue
        if toleration.get("operator") != "Exists":
            continue
        if not toleration.get("effect") or toleration.get("effect") == effect:
            return True
    return False


def drain_options(options):
    """Validate drain options and return them with defaults filled in.

    ``force`` (evict pods no controller manages and pods annotated do-not-disrupt), ``delete_emptydir_data``
    (evict pods using emptyDir), ``disable_eviction`` (DELETE pods instead of evicting them, which bypasses
    PodDisruptionBudgets), ``taint_effect`` (the effect of the rollout's taint, for ``tolerates_all``).
    ``pod_selector`` is accepted and ignored here: the API applies it when listing pods.
    """
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise PlanError("options: %r is not allowed; use a dict of drain options" % (options,))
    result = {}
    for name in ("force", "delete_emptydir_data", "disable_eviction"):
        value = options.get(name)
        if value is None:
            value = False
        if not isinstance(value, bool):
            raise PlanError("options.%s: %r is not allowed; use true or false" % (name, value))
        result[name] = value
    effect = options.get("taint_effect") or "NoSchedule"
    if effect not in TAINT_EFFECTS:
        raise PlanError("options.taint_effect: %r is not allowed; use one of %s" % (effect, ", ".join(TAINT_EFFECTS)))
    result["taint_effect"] = effect
    result["pod_selector"] = options.get("pod_selector")
    return result


def classify_pod(pod, options=None):
    """Decide what draining a node does with one of its pods.

    The result is ``{"pod", "namespace", "name", "node", "action", "reason", "blocks"}`` with
    ``action`` one of:

    - ``skip``: pods the drain leaves alone: DaemonSet pods, mirror pods (annotation
      ``kubernetes.io/config.mirror``), and pods already terminating (``metadata.deletionTimestamp`` set),
      reason "already terminating" -- the caller still waits for those to be gone before it calls the node
      drained;
    - ``delete``: finished pods (phase Succeeded or Failed), removed by DELETE since they hold no disruption
      budget; with ``disable_eviction`` every pod that would be evicted is deleted instead;
    - ``evict``: evicted through the Eviction API, which enforces PodDisruptionBudgets;
    - ``block``: the drain cannot move the pod under the current options; ``blocks`` lists each cause as
      ``{"kind", "reason"}``: an emptyDir volume without ``delete_emptydir_data`` ("uses emptyDir; set
      delete_emptydir_data"), no controller without ``force`` ("not managed by a controller; set force"), or a
      do-not-disrupt annotation (``karpenter.sh/do-not-disrupt: "true"``,
      ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"``, ``nodeops.rollout/do-not-evict: "true"``)
      without ``force``. ``reason`` joins them.
    """
    if not isinstance(pod, dict):
        raise PlanError("pod: %r is not allowed; use a pod object (dict)" % (pod,))
    opts = drain_options(options)
    metadata = pod.get("metadata") or {}
    entry = {"pod": pod_key(pod), "namespace": metadata.get("namespace") or "default", "name": metadata.get("name"),
             "node": (pod.get("spec") or {}).get("nodeName"), "action": None, "reason": None, "blocks": []}

    def decide(action, reason):
        entry["action"] = action
        entry["reason"] = reason
        return entry

    if pod_is_terminating(pod):
        return decide("skip", "already terminating")
    if ANNOTATION_MIRROR in (metadata.get("annotations") or {}):
        return decide("skip", "mirror pod of a static pod (managed by the kubelet)")
    controller = controller_of(pod)
    if controller is not None and controller.get("kind") == "DaemonSet":
        return decide("skip", "managed by DaemonSet %s" % controller.get("name"))
    if pod_is_finished(pod):
        return decide("delete", "finished (phase %s); removed by DELETE, it holds no disruption budget"
                      % pod["status"]["phase"])
    blocks = []
    if pod_uses_emptydir(pod) and not opts["delete_emptydir_data"]:
        blocks.append({"kind": "emptydir", "reason": "uses emptyDir; set delete_emptydir_data"})
    if controller is None and not opts["force"]:
        blocks.append({"kind": "naked_pod", "reason": "not managed by a controller; set force"})
    annotation = do_not_disrupt_annotation(pod)
    if annotation and not opts["force"]:
        blocks.append({"kind": "do_not_disrupt", "reason": "annotated %s; set force" % annotation})
    if blocks:
        entry["blocks"] = blocks
        return decide("block", ", and ".join(block["reason"] for block in blocks))
    if opts["disable_eviction"]:
        return decide("delete", "disable_eviction is set: deleted without the Eviction API, "
                                "PodDisruptionBudgets are not consulted")
    return decide("evict", "evicted through the Eviction API within its PodDisruptionBudgets")
