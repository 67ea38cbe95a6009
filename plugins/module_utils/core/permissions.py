# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the collection may be refused, and which documented rule grants it: the rules of ``docs/rbac.yaml`` and the
statements of ``docs/iam-policy.json`` as tables (a unit test checks that they say what the two files say), a refusal
read from the API's answer, and the error that names it.

A refusal is a failure of its own kind (:class:`PermissionRefused`): its message names what was refused (the verb, the
resource with its API group and subresource, the namespace; the AWS action and resource), the rule or statement that
grants it, and that the refused request changed nothing; its failed result carries the same as ``permission``.

The access check (``access_checks``, ``access_report``) lists what the identity will be asked for, one Kubernetes
SelfSubjectAccessReview each, and what is missing. Pure: the requests are the clients' (``clients.kube``).
"""

from __future__ import annotations

import re
from collections import namedtuple

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError

RBAC_FILE = "docs/rbac.yaml"
IAM_POLICY_FILE = "docs/iam-policy.json"
UNCHANGED = "the request was refused before it was carried out: it changed nothing"
READ_ACTIONS = ("Describe", "Get", "List")

# A rule of a Role or ClusterRole of docs/rbac.yaml: the role's kind, name and namespace (None for a ClusterRole), then
# the rule's apiGroups, resources and verbs as the file writes them.
KubeRule = namedtuple("KubeRule", "kind name namespace api_groups resources verbs")

# The rules of docs/rbac.yaml, in its order (tests/unit/plugins/module_utils/core/test_permissions.py compares them).
KUBE_RULES = (
    KubeRule("ClusterRole", "nodeops-rollout", None, ("",), ("nodes",), ("get", "list", "patch")),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("",), ("pods",), ("list", "watch", "delete")),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("",), ("pods/eviction",), ("create",)),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("policy",), ("poddisruptionbudgets",), ("get", "list", "watch")),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("apps",), ("replicasets",), ("list",)),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("apps",), ("deployments",), ("get", "list", "patch")),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("",), ("persistentvolumeclaims", "persistentvolumes"), ("list",)),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("storage.k8s.io",), ("volumeattachments",), ("list",)),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("",), ("services",), ("list",)),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("elbv2.k8s.aws",), ("targetgroupbindings",), ("list",)),
    KubeRule("ClusterRole", "nodeops-rollout", None, ("",), ("events",), ("create",)),
    KubeRule("Role", "nodeops-rollout-lock", "kube-system", ("coordination.k8s.io",), ("leases",), ("get", "create", "update")),
)
# Permissions docs/rbac.md names outside docs/rbac.yaml, for the module options that need them: (group, resource, verb)
KUBE_OPTIONAL_PERMISSIONS = {
    ("", "nodes", "delete"): "docs/rbac.md, which adds it for instance_terminate's delete_node: true, the module's default "
                             "when it is used on its own (the role does not delete Nodes; it is not in docs/rbac.yaml)",
}
# What a run does without: the rollout writes its Events on nodes best effort (docs/rbac.md)
OPTIONAL = frozenset([("", "events", "create")])
# Cluster-scoped resources: refused or checked at the cluster scope, never in a namespace
CLUSTER_SCOPED = frozenset([("", "nodes"), ("", "persistentvolumes"), ("storage.k8s.io", "volumeattachments")])

# The statements of docs/iam-policy.json: Sid -> the actions it allows, in its order.
IAM_STATEMENTS = (
    ("ReadGroupsInstancesLaunchTemplatesAndImages", (
        "autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeLifecycleHooks", "autoscaling:DescribeWarmPool",
        "ec2:DescribeInstances", "ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions", "ec2:DescribeImages",
        "elasticloadbalancing:DescribeLoadBalancers", "elasticloadbalancing:DescribeTargetGroups",
        "elasticloadbalancing:DescribeTargetGroupAttributes", "elasticloadbalancing:DescribeTargetHealth")),
    ("ReadAmiIdsFromSsmParameters", ("ssm:GetParameter",)),
    ("ConnectToEksClusters", ("eks:DescribeCluster",)),
    ("ReadAbortAlarms", ("cloudwatch:DescribeAlarms",)),
    ("SurgeTerminateAndRestoreNodeGroups", (
        "autoscaling:UpdateAutoScalingGroup", "autoscaling:SuspendProcesses", "autoscaling:ResumeProcesses",
        "autoscaling:TerminateInstanceInAutoScalingGroup", "autoscaling:DetachInstances")),
    ("RecordRolloutStateInGroupTags", ("autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags")),
    ("CreateLaunchTemplateVersionsWithTheNewAmi", ("ec2:CreateLaunchTemplateVersion",)),
    ("PointGroupsAtLaunchTemplatesRunInstancesCheck", ("ec2:RunInstances",)),
    ("PointGroupsAtLaunchTemplatesTagOnLaunchCheck", ("ec2:CreateTags",)),
    ("PointGroupsAtLaunchTemplatesPassNodeRoleCheck", ("iam:PassRole",)),
    ("DetachMethodTagDetachedInstances", ("ec2:CreateTags",)),
    ("DetachMethodTerminateDetachedInstances", ("ec2:TerminateInstances",)),
)
# Statements AWS evaluates in its own checks when UpdateAutoScalingGroup points a group at a launch template (may the
# caller launch from it, tag at launch, pass the node role): they never allow a request the collection sends
AWS_CHECKS = frozenset(["PointGroupsAtLaunchTemplatesRunInstancesCheck", "PointGroupsAtLaunchTemplatesTagOnLaunchCheck",
                        "PointGroupsAtLaunchTemplatesPassNodeRoleCheck"])
# Actions docs/iam.md names outside docs/iam-policy.json, for the options that need them
AWS_OPTIONAL_ACTIONS = {
    "ec2:ModifyLaunchTemplate": "docs/iam.md, which adds it for launch_template_version's set_default: true (it is not "
                                "in docs/iam-policy.json)",
    "aps:ListAlerts": "docs/iam.md, which adds it for rolling_update_alertmanager_auth sigv4 (Amazon Managed Service for "
                      "Prometheus; it is not in docs/iam-policy.json)",
}
# AWS error codes of a request its identity may not make
AWS_REFUSAL_CODES = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedAccess")

# kube-apiserver's words for a request its authorizers refused (k8s.io/apiserver's forbidden message)
_KUBE_FORBIDDEN = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<namespace>[^"]*)")?')
_KUBE_FORBIDDEN_PATH = re.compile(r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) path "(?P<path>[^"]*)"')
# AWS's words for a refused action (IAM's "not authorized to perform" message, every service)
_AWS_REFUSED = re.compile(r"(?:User|Principal): (?P<user>\S+) is not authorized to perform: (?P<action>[\w-]+:[\w*]+)"
                          r"(?: on resource: (?P<resource>\S+?)(?=[\s,;]|$))?")


class PermissionRefused(RolloutError):
    """The API refused a request its identity may not make; ``details["permission"]`` says what and which rule grants it."""


# ---------------------------------------------------------------------------------------------------------
# Kubernetes
# ---------------------------------------------------------------------------------------------------------

def rule_text(rule):
    """``ClusterRole nodeops-rollout rule {apiGroups: [""], resources: [pods/eviction], verbs: [create]} of docs/rbac.yaml``."""
    where = "%s %s" % (rule.kind, rule.name) + (" in %s" % rule.namespace if rule.namespace else "")
    return "%s rule {apiGroups: [%s], resources: [%s], verbs: [%s]} of %s" % (
        where, ", ".join('"%s"' % group if not group else group for group in rule.api_groups), ", ".join(rule.resources),
        ", ".join(rule.verbs), RBAC_FILE)


def kube_rule(verb, group, resource, subresource=None):
    """The rule of docs/rbac.yaml that grants ``verb`` on ``resource`` (``subresource``) of API ``group``, or None."""
    name = "%s/%s" % (resource, subresource) if subresource else resource
    for rule in KUBE_RULES:
        if group in rule.api_groups and name in rule.resources and verb in rule.verbs:
            return rule
    return None


def resource_text(group, resource, subresource=None):
    """``pods/eviction (core API group)``, ``deployments (API group apps)``."""
    name = "%s/%s" % (resource, subresource) if subresource else resource
    return "%s (%s)" % (name, "API group %s" % group if group else "core API group")


def scope_text(namespace):
    return 'in namespace "%s"' % namespace if namespace else "in every namespace"


def kube_permission(verb, group, resource, subresource=None, namespace=None, user=None):
    """The ``permission`` of a failed result (and of the access check's missing entries) for a Kubernetes request."""
    rule = kube_rule(verb, group, resource, subresource)
    return {"kind": "kubernetes", "verb": verb, "api_group": group,
            "resource": "%s/%s" % (resource, subresource) if subresource else resource,
            "namespace": namespace or None, "user": user,
            "granted_by": rule_text(rule) if rule else KUBE_OPTIONAL_PERMISSIONS.get((group, resource, verb)),
            "required": (group, resource if not subresource else "%s/%s" % (resource, subresource), verb) not in OPTIONAL}


def kube_refusal(code, status):
    """The ``permission`` of an API answer (HTTP ``code``, Status dict) that is an authorizer's refusal, else None.

    Only kube-apiserver's 403 of a request no authorizer allowed counts: other 403s (a namespace being terminated, an
    admission webhook) are not about permissions."""
    if code != 403 or not isinstance(status, dict):
        return None
    message = str(status.get("message") or "")
    match = _KUBE_FORBIDDEN.search(message)
    if match:
        resource, _sep, subresource = match.group("resource").partition("/")
        return kube_permission(match.group("verb"), match.group("group"), resource, subresource or None,
                               match.group("namespace"), match.group("user"))
    match = _KUBE_FORBIDDEN_PATH.search(message)
    if match:
        return {"kind": "kubernetes", "verb": match.group("verb"), "api_group": None, "resource": match.group("path"),
                "namespace": None, "user": match.group("user"), "granted_by": None, "required": True}
    return None


def permission_text(permission):
    """What a ``permission`` is, without who or why: ``create pods/eviction (core API group) in every namespace``,
    ``autoscaling:UpdateAutoScalingGroup on arn:...``."""
    if permission["kind"] != "kubernetes":
        return (permission["verb"] or "the request") + (" on %s" % permission["resource"] if permission.get("resource") else "")
    resource = permission["resource"]
    if permission["api_group"] is None:   # a path outside the API's resources (/version ...)
        return "%s %s" % (permission["verb"], resource)
    name, _sep, subresource = resource.partition("/")
    cluster_scoped = (permission["api_group"], name) in CLUSTER_SCOPED
    return "%s %s %s" % (permission["verb"], resource_text(permission["api_group"], name, subresource or None),
                         "at the cluster scope" if cluster_scoped else scope_text(permission["namespace"]))


def kube_refusal_text(permission):
    """What a refused Kubernetes request was and which rule grants it, in one sentence."""
    what = permission_text(permission)
    who = ' to User "%s"' % permission["user"] if permission.get("user") else ""
    granted = ("; granted by %s" % permission["granted_by"] if permission["granted_by"]
               else "; no rule of %s grants it (the collection is not documented to make this request)" % RBAC_FILE)
    return "permission denied: Kubernetes refused %s%s%s; %s" % (what, who, granted, UNCHANGED)


# ---------------------------------------------------------------------------------------------------------
# AWS
# ---------------------------------------------------------------------------------------------------------

def aws_statements(action):
    """The Sids of docs/iam-policy.json's statements that allow ``action`` (``ec2:CreateTags``), in the file's order."""
    return tuple(sid for sid, actions in IAM_STATEMENTS if action in actions)


def aws_action(operation):
    """``autoscaling:UpdateAutoScalingGroup`` for the API operation ``UpdateAutoScalingGroup`` when the policy names
    it, else None."""
    for action in [action for _sid, actions in IAM_STATEMENTS for action in actions] + sorted(AWS_OPTIONAL_ACTIONS):
        if action.split(":", 1)[1] == operation:
            return action
    return None


def statements_text(action):
    """``statement SurgeTerminateAndRestoreNodeGroups of docs/iam-policy.json`` (the statements allowing ``action`` when
    the collection requests it: not those of AWS_CHECKS, but for an action only they name), what docs/iam.md says of an
    action outside the policy, or None."""
    sids = [sid for sid in aws_statements(action) if sid not in AWS_CHECKS] or aws_statements(action)
    if sids:
        return "statement%s %s of %s" % ("s" if len(sids) > 1 else "", " or ".join(sids), IAM_POLICY_FILE)
    return AWS_OPTIONAL_ACTIONS.get(action)


def aws_refusal(code, message, operation=None, resource=None):
    """The ``permission`` of an AWS error (its ``code`` and ``message``, the ``operation`` that was sent) when it is a
    refusal of the identity, else None. The action comes from AWS's message when it names one, else from the operation;
    the resource from the message, else ``resource`` as the caller names it."""
    if code not in AWS_REFUSAL_CODES:
        return None
    match = _AWS_REFUSED.search(message or "")
    action = match.group("action") if match else aws_action(operation or "")
    if action is None and operation:
        action = operation
    return {"kind": "aws", "verb": action, "resource": (match.group("resource") if match and match.group("resource")
                                                        else resource),
            "namespace": None, "user": match.group("user") if match else None, "code": code,
            "granted_by": statements_text(action or ""), "required": True}


def aws_refusal_text(permission):
    who = " to %s" % permission["user"] if permission.get("user") else ""
    granted = ("; granted by %s" % permission["granted_by"] if permission["granted_by"]
               else "; no statement of %s allows it (the collection is not documented to make this request)" % IAM_POLICY_FILE)
    return "permission denied: AWS refused %s%s (%s)%s; %s" % (permission_text(permission), who, permission["code"], granted, UNCHANGED)


def refused(where, permission, **details):
    """The :class:`PermissionRefused` of a refused request described by ``where`` (``evict pod default/web-1``)."""
    text = kube_refusal_text(permission) if permission["kind"] == "kubernetes" else aws_refusal_text(permission)
    return PermissionRefused("%s: %s" % (where, text) if where else text, permission=permission, **details)


def aws_use(target=None, group=None, k8s=None, abort_alarms=(), surge_method="scale"):
    """The statements of docs/iam-policy.json a rollout uses, in the file's order: ``{"read": [Sid], "write": [Sid]}``.

    ``target`` is launch_template_version's result (a version it creates, the group pointed at another version:
    AWS's own checks of the launch), ``group`` the node group's entry (its ``ssm_parameter``), ``k8s`` the Kubernetes
    connection options (``eks_cluster``), ``abort_alarms`` the alarms watched, ``surge_method`` the surge's."""
    target = target or {}
    used = {"ReadGroupsInstancesLaunchTemplatesAndImages", "SurgeTerminateAndRestoreNodeGroups", "RecordRolloutStateInGroupTags"}
    if (group or {}).get("ssm_parameter"):
        used.add("ReadAmiIdsFromSsmParameters")
    if (k8s or {}).get("eks_cluster"):
        used.add("ConnectToEksClusters")
    if abort_alarms:
        used.add("ReadAbortAlarms")
    if target.get("created"):
        used.add("CreateLaunchTemplateVersionsWithTheNewAmi")
    if target and (target.get("version") != target.get("previous_version")
                   or str(target.get("previous_version_spec")) != str(target.get("previous_version"))):
        used.update(AWS_CHECKS)
    if surge_method == "detach":
        used.update(("DetachMethodTagDetachedInstances", "DetachMethodTerminateDetachedInstances"))
    sids = [sid for sid, actions in IAM_STATEMENTS if sid in used]
    read = [sid for sid in sids if all(action.split(":", 1)[1].startswith(READ_ACTIONS) for action in dict(IAM_STATEMENTS)[sid])]
    return {"read": read, "write": [sid for sid in sids if sid not in read]}


def aws_use_text(use):
    """The plan's line of what the run asks of AWS (:func:`aws_use`): the reads the plan itself made, so granted, and
    the writes, which AWS checks only when each is made."""
    return ("AWS (statements of %s): reads granted, this plan made them: %s; writes, checked by AWS only when made: %s"
            % (IAM_POLICY_FILE, ", ".join(use["read"]), ", ".join(use["write"])))


# ---------------------------------------------------------------------------------------------------------
# The access check
# ---------------------------------------------------------------------------------------------------------

def access_checks(lock_namespace="kube-system", event_namespace="default"):
    """Every (verb, resource) docs/rbac.yaml grants, as the access reviews that ask for it: ``{"verb", "group",
    "resource", "subresource", "namespace"}``, in the file's order. The ClusterRole's namespaced resources are asked
    for every namespace (a drain reaches pods anywhere), but Events in ``event_namespace``, where the rollout writes
    them; the lock's Leases in ``lock_namespace``."""
    checks = []
    for rule in KUBE_RULES:
        for group in rule.api_groups:
            for name in rule.resources:
                resource, _sep, subresource = name.partition("/")
                for verb in rule.verbs:
                    if rule.kind == "Role":
                        namespace = lock_namespace
                    elif (group, resource) == ("", "events"):
                        namespace = event_namespace
                    else:
                        namespace = None
                    checks.append({"verb": verb, "group": group, "resource": resource, "subresource": subresource or None,
                                   "namespace": namespace})
    return checks


def access_report(checks, answers):
    """The access check's result from the reviews' answers (``status`` of each SelfSubjectAccessReview, in the order of
    ``checks``): ``checked``, ``reviews`` (how many), ``missing`` (each a ``permission``, with ``reason`` when the
    authorizer gave one), ``refusal``, one message naming every required one missing (None when none is), and ``why``
    (None: the reason an access check could not be made)."""
    missing = []
    for check, answer in zip(checks, answers):
        if (answer or {}).get("allowed"):
            continue
        entry = kube_permission(check["verb"], check["group"], check["resource"], check["subresource"], check["namespace"])
        entry.pop("user")
        if (answer or {}).get("evaluationError"):
            entry["reason"] = answer["evaluationError"]
        missing.append(entry)
    return with_summary({"checked": True, "reviews": len(answers), "missing": missing, "refusal": missing_text(missing),
                         "why": None})


def access_unchecked(why, reviews=1):
    """The access check's result when the API server does not answer access reviews (``why``)."""
    return with_summary({"checked": False, "reviews": reviews, "missing": [], "refusal": None, "why": why})


def with_summary(access):
    """``access`` with its ``summary``, the plan's line: what was asked, and what is missing."""
    if not access["checked"]:
        summary = "not checked: %s" % access["why"]
    elif access["refusal"]:
        summary = "%d access reviews; %s" % (access["reviews"], access["refusal"])
    else:
        summary = "%d access reviews, every permission the rollout needs is granted" % access["reviews"]
    optional = [entry for entry in access["missing"] if not entry["required"]]
    if optional:
        summary += "; not granted, done without: %s (granted by %s)" % (
            ", ".join(permission_text(entry) for entry in optional), ", ".join(sorted(set(e["granted_by"] for e in optional))))
    return dict(access, summary=summary)


def missing_text(missing):
    """``the identity may not create pods/eviction (core API group) in every namespace ... (granted by ...); ...``, for
    the required entries of ``missing``; None when none is required."""
    required = [entry for entry in missing if entry["required"]]
    if not required:
        return None
    parts = ["%s (granted by %s)" % (permission_text(entry), entry["granted_by"]) for entry in required]
    return "the Kubernetes identity of the run may not %s; apply %s (docs/rbac.md) or bind its roles to this identity" % (
        "; nor ".join(parts), RBAC_FILE)


def access_refused(access):
    """The :class:`PermissionRefused` of an access check that found a required permission missing (``access_report``'s
    ``refusal``): its ``permission`` is the first one missing, its ``access`` the whole check."""
    [first] = [entry for entry in access["missing"] if entry["required"]][:1]
    return PermissionRefused("%s; found by the access check before any change: nothing was changed" % access["refusal"],
                             permission=first, access=access)
