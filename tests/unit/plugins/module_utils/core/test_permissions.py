# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""permissions.py: the tables say what docs/rbac.yaml and docs/iam-policy.json grant, a refusal of the API is read into
what was refused and which rule grants it, and kube_errors/aws_errors raise it as a failure of its own kind."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import aws_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import ApiException, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core import permissions
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import PermissionRefused

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
SA = "system:serviceaccount:nodeops-rollout:nodeops-rollout"


def documented_rbac():
    with open(os.path.join(COLLECTION, "docs", "rbac.yaml"), encoding="utf-8") as stream:
        return yaml.safe_load(stream)["items"]


def documented_policy():
    with open(os.path.join(COLLECTION, "docs", "iam-policy.json"), encoding="utf-8") as stream:
        return json.load(stream)


def forbidden(message):
    return {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403, "message": message}


def api_exception(status, body):
    exc = ApiException(status=status, reason="Forbidden" if status == 403 else "Error")
    exc.body = json.dumps(body).encode()
    return exc


# ---- the tables are the documents ---------------------------------------------------------------------------------------
def test_the_kubernetes_table_is_every_rule_of_docs_rbac_yaml_in_its_order():
    rules = [permissions.KubeRule(item["kind"], item["metadata"]["name"], item["metadata"].get("namespace"),
                                  tuple(rule["apiGroups"]), tuple(rule["resources"]), tuple(rule["verbs"]))
             for item in documented_rbac() if item["kind"] in ("Role", "ClusterRole") for rule in item["rules"]]
    assert list(permissions.KUBE_RULES) == rules


def test_the_roles_of_the_table_are_bound_to_the_service_account_and_the_group():
    bindings = {(item["roleRef"]["kind"], item["roleRef"]["name"]): item for item in documented_rbac()
                if item["kind"] in ("RoleBinding", "ClusterRoleBinding")}
    roles = sorted({(rule.kind, rule.name) for rule in permissions.KUBE_RULES})
    assert roles, "the table has no rule"
    for kind, name in roles:
        subjects = [(subject["kind"], subject["name"]) for subject in bindings[(kind, name)]["subjects"]]
        assert subjects == [("ServiceAccount", "nodeops-rollout"), ("Group", "nodeops-rollout")]


def test_the_aws_table_is_every_statement_of_docs_iam_policy_json_in_its_order():
    statements = [(statement["Sid"], tuple([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]))
                  for statement in documented_policy()["Statement"]]
    assert [statement["Effect"] for statement in documented_policy()["Statement"]] == ["Allow"] * len(statements)
    assert list(permissions.IAM_STATEMENTS) == statements


def test_the_statements_of_aws_own_checks_are_those_conditioned_on_what_only_its_checks_set():
    # the launch template a launch is from, the request that tags at launch, the service a role is passed to: keys AWS
    # sets when it checks a group's launch, never on a request the collection sends
    keys = {"ec2:LaunchTemplate", "ec2:CreateAction", "iam:PassedToService"}
    checks = {statement["Sid"] for statement in documented_policy()["Statement"]
              if any(key in keys for block in (statement.get("Condition") or {}).values() for key in block)}
    assert permissions.AWS_CHECKS == checks


def test_an_operation_names_one_action_of_the_policy():
    actions = [action for _sid, actions in permissions.IAM_STATEMENTS for action in actions] + list(permissions.AWS_OPTIONAL_ACTIONS)
    by_operation = {}
    for action in actions:
        by_operation.setdefault(action.split(":", 1)[1], set()).add(action)
    assert {operation: names for operation, names in by_operation.items() if len(names) > 1} == {}
    assert permissions.aws_action("DescribeWarmPool") == "autoscaling:DescribeWarmPool"
    assert permissions.aws_action("GetCallerIdentity") is None   # needs no permission: in no statement


def test_every_optional_action_is_outside_the_policy_and_named_in_docs_iam_md():
    with open(os.path.join(COLLECTION, "docs", "iam.md"), encoding="utf-8") as stream:
        text = stream.read()
    assert permissions.AWS_OPTIONAL_ACTIONS
    for action in permissions.AWS_OPTIONAL_ACTIONS:
        assert permissions.aws_statements(action) == ()
        assert "`%s`" % action in text


# ---- a Kubernetes refusal ----------------------------------------------------------------------------------------------
def test_a_refused_eviction_names_the_subresource_the_namespace_and_its_rule():
    permission = permissions.kube_refusal(403, forbidden(
        'pods "web-1" is forbidden: User "%s" cannot create resource "pods/eviction" in API group "" in the namespace "shop"' % SA))
    assert permission == {
        "kind": "kubernetes", "verb": "create", "api_group": "", "resource": "pods/eviction", "namespace": "shop", "user": SA,
        "granted_by": 'ClusterRole nodeops-rollout rule {apiGroups: [""], resources: [pods/eviction], verbs: [create]} of docs/rbac.yaml',
        "required": True}
    text = str(permissions.refused("evict pod shop/web-1", permission))
    assert text.startswith('evict pod shop/web-1: permission denied: Kubernetes refused create pods/eviction (core API group) '
                           'in namespace "shop" to User "%s"; granted by ClusterRole nodeops-rollout rule' % SA)
    assert text.endswith("it changed nothing")


def test_a_refusal_at_the_cluster_scope_and_in_the_lock_namespace():
    nodes = permissions.kube_refusal(403, forbidden(
        'nodes "ip-1" is forbidden: User "u" cannot patch resource "nodes" in API group "" at the cluster scope'))
    assert (nodes["verb"], nodes["resource"], nodes["namespace"]) == ("patch", "nodes", None)
    assert "Kubernetes refused patch nodes (core API group) at the cluster scope" in str(permissions.refused("cordon", nodes))
    lease = permissions.kube_refusal(403, forbidden(
        'leases.coordination.k8s.io "nodeops-rollout-web" is forbidden: User "u" cannot update resource "leases" in API group '
        '"coordination.k8s.io" in the namespace "kube-system": RBAC: role.rbac.authorization.k8s.io "x" not found'))
    assert lease["granted_by"].startswith("Role nodeops-rollout-lock in kube-system rule {apiGroups: [coordination.k8s.io]")
    assert lease["api_group"] == "coordination.k8s.io" and lease["namespace"] == "kube-system"


def test_a_refusal_no_rule_grants_says_so_and_events_are_not_required():
    secrets = permissions.kube_refusal(403, forbidden(
        'secrets is forbidden: User "u" cannot list resource "secrets" in API group "" in the namespace "default"'))
    assert secrets["granted_by"] is None
    assert "no rule of docs/rbac.yaml grants it" in str(permissions.refused("list secrets", secrets))
    events = permissions.kube_refusal(403, forbidden(
        'events is forbidden: User "u" cannot create resource "events" in API group "" in the namespace "default"'))
    assert events["granted_by"].startswith("ClusterRole nodeops-rollout rule") and events["required"] is False


def test_a_refused_path_is_named():
    permission = permissions.kube_refusal(403, forbidden('forbidden: User "system:anonymous" cannot get path "/version"'))
    assert (permission["verb"], permission["resource"], permission["api_group"]) == ("get", "/version", None)
    assert "Kubernetes refused get /version to User" in str(permissions.refused("", permission))


@pytest.mark.parametrize("code, status", [
    (403, forbidden('unable to create new content in namespace shop because it is being terminated')),
    (403, forbidden('admission webhook "policy.example.com" denied the request: no')),
    (404, forbidden('User "u" cannot list resource "nodes" in API group "" at the cluster scope')),
    (403, "not a status"),
])
def test_other_answers_are_no_refusal_of_permission(code, status):
    assert permissions.kube_refusal(code, status) is None


def test_kube_errors_raises_the_refusal_as_its_own_kind_with_its_permission():
    with pytest.raises(PermissionRefused) as error:
        with kube_errors("list", "nodes"):
            raise api_exception(403, forbidden('nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope'))
    assert isinstance(error.value, RolloutError)
    assert error.value.msg.startswith("list nodes: permission denied: Kubernetes refused list nodes")
    assert error.value.details["permission"]["granted_by"].startswith('ClusterRole nodeops-rollout rule {apiGroups: [""], resources: [nodes]')


def test_kube_errors_keeps_other_errors_as_they_were():
    with pytest.raises(RolloutError) as error:
        with kube_errors("list", "nodes"):
            raise api_exception(403, forbidden("unable to create new content in namespace shop because it is being terminated"))
    assert not isinstance(error.value, PermissionRefused)
    assert error.value.msg == "list nodes: Forbidden: unable to create new content in namespace shop because it is being terminated"


def test_the_one_catch_reports_the_permission_beside_the_message():
    class Module:
        failed = None

        def fail_json(self, **kwargs):
            self.failed = kwargs
            raise SystemExit(1)

    @reports_errors
    def run(module):  # pylint: disable=unused-argument
        with kube_errors("evict", "pod shop/web-1", detailed=True):
            raise api_exception(403, forbidden(
                'pods "web-1" is forbidden: User "u" cannot create resource "pods/eviction" in API group "" in the namespace "shop"'))

    module = Module()
    with pytest.raises(SystemExit):
        run(module)
    assert module.failed["msg"].startswith("evict pod shop/web-1: permission denied")
    assert module.failed["permission"]["resource"] == "pods/eviction"
    assert module.failed["error"]["status"] == 403 and "exception" in module.failed


# ---- an AWS refusal ------------------------------------------------------------------------------------------------------
def client_error(code, message, operation):
    from botocore.exceptions import ClientError  # pylint: disable=import-outside-toplevel
    return ClientError({"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 403}}, operation)


def test_aws_errors_names_the_action_sent_its_statement_and_that_nothing_changed():
    arn = "arn:aws:autoscaling:us-east-1:111122223333:autoScalingGroup:abc:autoScalingGroupName/web"
    with pytest.raises(PermissionRefused) as error:
        with aws_errors("SetDesiredCapacity", "Auto Scaling group 'web'"):
            raise client_error("AccessDenied", "User: arn:aws:iam::111122223333:user/ops is not authorized to perform: "
                               "autoscaling:UpdateAutoScalingGroup on resource: %s because no identity-based policy allows "
                               "the autoscaling:UpdateAutoScalingGroup action" % arn, "UpdateAutoScalingGroup")
    assert error.value.details["permission"] == {
        "kind": "aws", "verb": "autoscaling:UpdateAutoScalingGroup", "resource": arn, "namespace": None,
        "user": "arn:aws:iam::111122223333:user/ops", "code": "AccessDenied",
        "granted_by": "statement SurgeTerminateAndRestoreNodeGroups of docs/iam-policy.json", "required": True}
    assert error.value.msg == (
        "SetDesiredCapacity on Auto Scaling group 'web': permission denied: AWS refused autoscaling:UpdateAutoScalingGroup on "
        "%s to arn:aws:iam::111122223333:user/ops (AccessDenied); granted by statement SurgeTerminateAndRestoreNodeGroups of "
        "docs/iam-policy.json; the request was refused before it was carried out: it changed nothing" % arn)


@pytest.mark.parametrize("code", ["UnauthorizedOperation", "AccessDeniedException", "UnauthorizedAccess"])
def test_an_aws_refusal_without_the_action_in_its_message_is_named_by_the_operation_sent(code):
    with pytest.raises(PermissionRefused) as error:
        with aws_errors("TagInstances", "instance i-0abc"):
            raise client_error(code, "You are not authorized to perform this operation. Encoded authorization failure "
                                     "message: AbC", "CreateTags")
    permission = error.value.details["permission"]
    assert (permission["verb"], permission["resource"], permission["code"]) == ("ec2:CreateTags", "instance i-0abc", code)
    # the statement AWS evaluates when a group launches (tags at launch) never allows the collection's own CreateTags
    assert permission["granted_by"] == "statement DetachMethodTagDetachedInstances of docs/iam-policy.json"


def test_an_action_outside_the_policy_is_named_with_what_docs_iam_md_says():
    with pytest.raises(PermissionRefused) as error:
        with aws_errors("ModifyLaunchTemplate", "launch template lt-1"):
            raise client_error("UnauthorizedOperation", "You are not authorized to perform this operation.", "ModifyLaunchTemplate")
    assert "granted by docs/iam.md, which adds it for launch_template_version's set_default: true" in error.value.msg


def test_other_aws_errors_are_as_they_were():
    with pytest.raises(RolloutError) as error:
        with aws_errors("DescribeAutoScalingGroups", "Auto Scaling group 'web'"):
            raise client_error("ValidationError", "bad", "DescribeAutoScalingGroups")
    assert not isinstance(error.value, PermissionRefused)
    assert error.value.msg == "DescribeAutoScalingGroups on Auto Scaling group 'web': ValidationError: bad"


# ---- the access check ------------------------------------------------------------------------------------------------------
def test_the_access_check_asks_for_every_verb_the_documents_grant_where_the_rollout_uses_it():
    checks = permissions.access_checks(lock_namespace="nodeops-rollout")
    assert len(checks) == sum(len(rule.api_groups) * len(rule.resources) * len(rule.verbs) for rule in permissions.KUBE_RULES)
    by_key = {(check["verb"], check["group"], check["resource"], check["subresource"]): check["namespace"] for check in checks}
    assert by_key[("create", "", "pods", "eviction")] is None            # every namespace
    assert by_key[("create", "", "events", None)] == "default"           # where the rollout writes its Events
    assert by_key[("update", "coordination.k8s.io", "leases", None)] == "nodeops-rollout"
    assert len(by_key) == len(checks)


def test_the_access_report_names_each_missing_permission_and_refuses_for_the_required_ones():
    checks = permissions.access_checks()
    answers = [{"allowed": not ((check["resource"], check["subresource"]) == ("pods", "eviction") or check["resource"] == "events")}
               for check in checks]
    report = permissions.access_report(checks, answers)
    assert report["checked"] and report["reviews"] == len(checks)
    assert [(entry["verb"], entry["resource"], entry["namespace"], entry["required"]) for entry in report["missing"]] == [
        ("create", "pods/eviction", None, True), ("create", "events", "default", False)]
    assert report["refusal"] == (
        'the Kubernetes identity of the run may not create pods/eviction (core API group) in every namespace (granted by '
        'ClusterRole nodeops-rollout rule {apiGroups: [""], resources: [pods/eviction], verbs: [create]} of docs/rbac.yaml); '
        'apply docs/rbac.yaml (docs/rbac.md) or bind its roles to this identity')


def test_nothing_missing_or_only_events_is_no_refusal():
    checks = permissions.access_checks()
    assert permissions.access_report(checks, [{"allowed": True}] * len(checks)) == {
        "checked": True, "reviews": len(checks), "missing": [], "refusal": None, "why": None,
        "summary": "23 access reviews, every permission the rollout needs is granted"}
    only_events = [{"allowed": check["resource"] != "events"} for check in checks]
    report = permissions.access_report(checks, only_events)
    assert report["refusal"] is None
    assert report["summary"] == (
        '23 access reviews, every permission the rollout needs is granted; not granted, done without: create events (core '
        'API group) in namespace "default" (granted by ClusterRole nodeops-rollout rule {apiGroups: [""], resources: '
        '[events], verbs: [create]} of docs/rbac.yaml)')


def test_an_access_check_that_found_a_required_permission_missing_is_a_refusal_naming_the_first():
    checks = permissions.access_checks()
    answers = [{"allowed": check["resource"] not in ("pods", "leases") or check["verb"] in ("list", "watch", "get")}
               for check in checks]
    access = permissions.access_report(checks, answers)
    assert access["summary"].startswith("23 access reviews; the Kubernetes identity of the run may not delete pods (core "
                                        "API group) in every namespace (granted by ")
    error = permissions.access_refused(access)
    assert isinstance(error, permissions.PermissionRefused)
    assert (error.details["permission"]["verb"], error.details["permission"]["resource"]) == ("delete", "pods")
    assert error.details["access"] is access
    assert str(error).endswith("; nor update leases (API group coordination.k8s.io) in namespace \"kube-system\" (granted by "
                               "Role nodeops-rollout-lock in kube-system rule {apiGroups: [coordination.k8s.io], resources: "
                               "[leases], verbs: [get, create, update]} of docs/rbac.yaml); apply docs/rbac.yaml (docs/rbac.md) "
                               "or bind its roles to this identity; found by the access check before any change: nothing was changed")
    unchecked = permissions.access_unchecked("the API server does not answer access reviews: 404")
    assert unchecked["summary"] == "not checked: the API server does not answer access reviews: 404"


# ---- what the plan says a run asks of AWS ------------------------------------------------------------------------------
def test_a_plain_rollout_reads_groups_and_writes_sizes_and_tags_and_the_launch_checks_when_pointed_at_a_new_version():
    same = {"version": 4, "previous_version": 4, "previous_version_spec": "4", "created": False}
    assert permissions.aws_use(same) == {"read": ["ReadGroupsInstancesLaunchTemplatesAndImages"],
                                         "write": ["SurgeTerminateAndRestoreNodeGroups", "RecordRolloutStateInGroupTags"]}
    created = {"version": 5, "previous_version": 4, "previous_version_spec": "4", "created": True}
    assert permissions.aws_use(created)["write"] == [
        "SurgeTerminateAndRestoreNodeGroups", "RecordRolloutStateInGroupTags", "CreateLaunchTemplateVersionsWithTheNewAmi",
        "PointGroupsAtLaunchTemplatesRunInstancesCheck", "PointGroupsAtLaunchTemplatesTagOnLaunchCheck",
        "PointGroupsAtLaunchTemplatesPassNodeRoleCheck"]
    # a group on $Latest is pointed at the explicit version, which AWS checks as a launch from it
    latest = dict(same, previous_version_spec="$Latest")
    assert "PointGroupsAtLaunchTemplatesRunInstancesCheck" in permissions.aws_use(latest)["write"]


def test_each_option_that_asks_aws_for_more_adds_its_statements_and_the_plan_says_which_were_read():
    use = permissions.aws_use({}, group={"name": "web", "ssm_parameter": "/aws/service/eks/optimized-ami/1.30/image_id"},
                              k8s={"eks_cluster": "prod"}, abort_alarms=[{"name": "p99"}], surge_method="detach")
    assert use["read"] == ["ReadGroupsInstancesLaunchTemplatesAndImages", "ReadAmiIdsFromSsmParameters",
                           "ConnectToEksClusters", "ReadAbortAlarms"]
    assert use["write"][-2:] == ["DetachMethodTagDetachedInstances", "DetachMethodTerminateDetachedInstances"]
    assert permissions.aws_use_text(use).startswith(
        "AWS (statements of docs/iam-policy.json): reads granted, this plan made them: ReadGroupsInstancesLaunchTemplatesAndImages, "
        "ReadAmiIdsFromSsmParameters, ConnectToEksClusters, ReadAbortAlarms; writes, checked by AWS only when made: "
        "SurgeTerminateAndRestoreNodeGroups")
