"""Bad input is refused before anything changes: every case below is one cluster of one inventory, run by one
``ansible-playbook`` over the sandbox (values as strings, as an AWX survey or ``-e`` gives them). Each must fail with
one message naming the role variable the user set and what is allowed, and the sandbox's request log must show zero
mutating requests for the whole run - so none for any case.

The table (case -> message) is printed with ``pytest -s`` and written to ``tests/output/bad_input.md``."""

import json
import os
import re
import socket
import subprocess
import sys

import pytest

from sandbox.drive.handle import BIN, ROOT
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
DURATION = "a number of seconds (90) or a duration such as '90s', '15m' or '1h30m'"
COUNT = "or a percentage between"
BOOL = "true or false"

PLAYBOOK = """\
- name: Every cluster at once, each failing on its own (the collection's upgrade.yml stops all at the first failure)
  hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: Roll every node group of this cluster
      ansible.builtin.include_role:
        name: nodeops.rollout.rolling_update
"""


def group(**fields):
    return [dict({"name": GROUP}, **fields)]


# the cases whose whole failure must be one short line (a misspelt name, a word that is no boolean: no argument spec
# dumped with it)
ONE_LINE = ("variable_typo", "ami_id_typo", "canary_maybe", "force_maybe", "emptydir_2", "plan_perhaps")
# case id -> (host vars that differ from a good cluster, the strings its message must hold)
CASES = {
    # numbers and percentages
    "max_unavailable_0": ({"rolling_update_max_unavailable": "0"}, ["rolling_update_max_unavailable", COUNT]),
    "max_unavailable_negative": ({"rolling_update_max_unavailable": "-1"}, ["rolling_update_max_unavailable", COUNT]),
    "max_unavailable_150pct": ({"rolling_update_max_unavailable": "150%"}, ["rolling_update_max_unavailable", "100%"]),
    "max_unavailable_word": ({"rolling_update_max_unavailable": "abc"}, ["rolling_update_max_unavailable", COUNT]),
    "max_unavailable_fraction": ({"rolling_update_max_unavailable": "1.5"}, ["rolling_update_max_unavailable", COUNT]),
    "max_surge_negative": ({"rolling_update_max_surge": "-1"}, ["rolling_update_max_surge", COUNT]),
    "max_surge_word": ({"rolling_update_max_surge": "abc"}, ["rolling_update_max_surge", COUNT]),
    "max_surge_150pct": ({"rolling_update_max_surge": "150%"}, ["rolling_update_max_surge", "100%"]),
    "max_surge_fraction": ({"rolling_update_max_surge": "1.5"}, ["rolling_update_max_surge", COUNT]),
    "validate_passes_0": ({"rolling_update_validate_passes": "0"}, ["rolling_update_validate_passes", "at least 1"]),
    "validate_passes_word": ({"rolling_update_validate_passes": "abc"}, ["rolling_update_validate_passes", "int"]),
    # choices and booleans
    "surge_method": ({"rolling_update_surge_method": "replace"}, ["rolling_update_surge_method", "scale", "detach"]),
    "taint_effect": ({"rolling_update_taint_effect": "NoExecute"}, ["rolling_update_taint_effect", "NoSchedule", "PreferNoSchedule"]),
    "timeout_action": ({"rolling_update_drain_timeout_action": "ignore"}, ["rolling_update_drain_timeout_action", "fail", "skip", "force"]),
    "canary_maybe": ({"rolling_update_canary": "maybe"}, ["rolling_update_canary: 'maybe' is not allowed", BOOL]),
    "force_maybe": ({"rolling_update_force": "maybe"}, ["rolling_update_force: 'maybe' is not allowed", BOOL]),
    "emptydir_2": ({"rolling_update_delete_emptydir_data": "2"}, ["rolling_update_delete_emptydir_data: '2' is not allowed", BOOL]),
    "plan_perhaps": ({"rolling_update_plan": "perhaps"}, ["rolling_update_plan: 'perhaps' is not allowed", BOOL]),
    "taint_key_empty": ({"rolling_update_taint_key": ""}, ["rolling_update_taint_key", "label key"]),
    "taint_key_spaces": ({"rolling_update_taint_key": "not a key"}, ["rolling_update_taint_key", "label key"]),
    "lock_namespace": ({"rolling_update_lock_namespace": "Kube_System"}, ["rolling_update_lock_namespace", "DNS label"]),
    "report_relative": ({"rolling_update_report_file": "out/result.json"}, ["rolling_update_report_file", "absolute path"]),
    # a misspelt variable would be ignored, its default used
    "variable_typo": ({"rolling_update_max_unavailble": "3"},
                      ["rolling_update_max_unavailble", "did you mean rolling_update_max_unavailable?"]),
    # durations
    "grace_period_word": ({"rolling_update_grace_period": "abc"}, ["rolling_update_grace_period", DURATION]),
    "grace_period_negative": ({"rolling_update_grace_period": "-1"}, ["rolling_update_grace_period", DURATION]),
    "drain_timeout_negative": ({"rolling_update_drain_timeout": "-5s"}, ["rolling_update_drain_timeout", DURATION]),
    "drain_timeout_0": ({"rolling_update_drain_timeout": "0"}, ["rolling_update_drain_timeout", "at least 1 second"]),
    "post_drain_delay_fraction": ({"rolling_update_post_drain_delay": "1.5m"}, ["rolling_update_post_drain_delay", DURATION]),
    "node_ready_timeout_0": ({"rolling_update_node_ready_timeout": "0"}, ["rolling_update_node_ready_timeout", "at least 1 second"]),
    "validate_interval_word": ({"rolling_update_validate_interval": "often"}, ["rolling_update_validate_interval", DURATION]),
    "validate_timeout_units": ({"rolling_update_validate_timeout": "10x"}, ["rolling_update_validate_timeout", DURATION]),
    "lock_duration_0": ({"rolling_update_lock_duration": "0"}, ["rolling_update_lock_duration", "at least 15 seconds"]),
    # the node groups
    "no_groups": ({"rolling_update_node_groups": []}, ["rolling_update_node_groups", "at least one"]),
    "groups_not_a_list": ({"rolling_update_node_groups": GROUP}, ["rolling_update_node_groups", "dict"]),
    "group_without_name": ({"rolling_update_node_groups": [{"image_id": "ami-0123456789abcdef0"}]},
                           ["rolling_update_node_groups", "name"]),
    "ami_id_typo": ({"rolling_update_node_groups": group(ami_id="ami-0123456789abcdef0")},
                    ["rolling_update_node_groups[0].ami_id", "did you mean image_id?", "name, image_id, ssm_parameter"]),
    "two_targets": ({"rolling_update_node_groups": group(image_id="ami-0123456789abcdef0", ssm_parameter="/sandbox/ami/new")},
                    ["rolling_update_node_groups[0]", "at most one of image_id, ssm_parameter, launch_template_version"]),
    "duplicate_group": ({"rolling_update_node_groups": group() + group()}, ["rolling_update_node_groups[1]", "twice"]),
    "group_max_unavailable": ({"rolling_update_node_groups": group(max_unavailable="150%")},
                              ["rolling_update_node_groups[0].max_unavailable", "100%"]),
    "group_max_surge": ({"rolling_update_node_groups": group(max_surge="x")}, ["rolling_update_node_groups[0].max_surge", COUNT]),
    # the strategies and their controls
    "strategy_unknown": ({"rolling_update_strategy": "blue_green"}, ["rolling_update_strategy", "surge", "terminate_first"]),
    "max_node_age_short": ({"rolling_update_max_node_age": "10m"}, ["rolling_update_max_node_age", "at least 3600 seconds"]),
    "max_node_age_word": ({"rolling_update_max_node_age": "a month"}, ["rolling_update_max_node_age", DURATION]),
    "group_max_node_age": ({"rolling_update_node_groups": group(max_node_age="1w")}, ["rolling_update_node_groups[0].max_node_age", DURATION]),
    "max_quarantined_negative": ({"rolling_update_max_quarantined": "-1"}, ["rolling_update_max_quarantined", "0 or more"]),
    "blocking_pods_selector": ({"rolling_update_blocking_pods": "app in ()"}, ["rolling_update_blocking_pods[0]", "label selector"]),
    # the alert gates
    "abort_alerts_matcher": ({"rolling_update_abort_alerts": ["severity==critical"], "rolling_update_alertmanager_url": "http://127.0.0.1:9093"},
                             ["rolling_update_abort_alerts[0]", "is not a matcher", 'name=~"regex"']),
    "pause_alerts_no_url": ({"rolling_update_pause_alerts": ['severity="warning"']}, ["rolling_update_alertmanager_url", "http://"]),
    "pause_alerts_timeout": ({"rolling_update_pause_alerts_timeout": "soon"}, ["rolling_update_pause_alerts_timeout", DURATION]),
    "alertmanager_auth": ({"rolling_update_abort_alerts": ['severity="critical"'], "rolling_update_alertmanager_url": "http://127.0.0.1:9093",
                           "rolling_update_alertmanager_auth": "basic"}, ["rolling_update_alertmanager_auth", "none", "bearer", "sigv4"]),
    "pushgateway_url": ({"rolling_update_pushgateway_url": "pushgateway:9091"}, ["rolling_update_pushgateway_url", "http://"]),
    "metrics_file_relative": ({"rolling_update_metrics_file": "rollout.prom"}, ["rolling_update_metrics_file", "absolute path"]),
    "metrics_file_no_directory": ({"rolling_update_metrics_file": "/no/such/directory/rollout.prom"},
                                  ["rolling_update_metrics_file", "/no/such/directory does not exist"]),
    "image_id_malformed": ({"rolling_update_node_groups": group(image_id="ubuntu-22.04")},
                           ["rolling_update_node_groups[0].image_id", "ami-"]),
    "version_word": ({"rolling_update_node_groups": group(launch_template_version="newest")},
                     ["rolling_update_node_groups[0].launch_template_version", "$Latest", "$Default"]),
    "version_0": ({"rolling_update_node_groups": group(launch_template_version="0")},
                  ["rolling_update_node_groups[0].launch_template_version", "$Latest"]),
    # what only AWS and the cluster can answer, asked read-only before the first group is touched
    "unknown_group": ({"rolling_update_node_groups": group() + [{"name": "no-such-group"}]},
                      ["rolling_update_node_groups[1] (no-such-group)", "not found in region"]),
    "unknown_ami": ({"rolling_update_node_groups": group(image_id="ami-0000000000000dead")},
                    ["rolling_update_node_groups[0].image_id", "ami-0000000000000dead", "not found"]),
    "unknown_ssm_parameter": ({"rolling_update_node_groups": group(ssm_parameter="/no/such/parameter")},
                              ["rolling_update_node_groups[0].ssm_parameter", "/no/such/parameter"]),
    "unknown_version": ({"rolling_update_node_groups": group(launch_template_version="999")},
                        ["rolling_update_node_groups[0].launch_template_version", "999"]),
    "launch_configuration_group": ({"rolling_update_node_groups": group() + [{"name": "lc-group"}]},
                                   ["rolling_update_node_groups[1]", "lc-group", "launch configuration"]),
    "empty_group": ({"rolling_update_node_groups": group() + [{"name": "empty-group"}]},
                    ["rolling_update_node_groups[1]", "empty-group", "no instances"]),
    # connections
    "kubeconfig_missing": ({"rolling_update_k8s": {"kubeconfig": "/nonexistent/kubeconfig"}},
                           ["rolling_update_k8s.kubeconfig", "/nonexistent/kubeconfig"]),
    "kubeconfig_malformed": ({"rolling_update_k8s": {"kubeconfig": "@MALFORMED@"}}, ["rolling_update_k8s.kubeconfig", "cannot load"]),
    "k8s_unreachable": ({"rolling_update_k8s": {"host": "https://127.0.0.1:9", "api_key": "not-a-token", "validate_certs": "false"}},
                        ["rolling_update_k8s.host", "127.0.0.1:9"]),
    "k8s_conflicting_auth": ({"rolling_update_k8s": {"kubeconfig": "@KUBECONFIG@", "eks_cluster": "prod"}},
                             ["rolling_update_k8s.eks_cluster", "kubeconfig"]),
    "k8s_unknown_option": ({"rolling_update_k8s": {"kubeconfig": "@KUBECONFIG@", "token": "a-token"}},
                           ["rolling_update_k8s", "token", "api_key"]),
    # the kubeconfig from $KUBECONFIG (the sweep sets it), a context it does not have: the context is named, not the kubeconfig
    "k8s_context_from_kubeconfig_variable": ({"rolling_update_k8s": {"context": "prod-eu1"}},
                                             ["rolling_update_k8s.context", "'prod-eu1' is not a context", "$KUBECONFIG",
                                              "use one of its contexts: sandbox"]),
    "aws_unknown_option": ({"rolling_update_aws": {"region": "@REGION@", "endpoint_url": "@AWS_URL@", "secret": "x"}},
                           ["rolling_update_aws", "secret", "secret_key"]),
    "aws_unreachable": ({"rolling_update_aws": {"region": "@REGION@", "endpoint_url": "http://127.0.0.1:9"}},
                        ["rolling_update_aws.endpoint_url: http://127.0.0.1:9 cannot be reached", "EndpointConnectionError"]),
}


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=3, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])
    # a launch-configuration group and an empty launch-template group, beside the sandbox's own
    autoscaling, ec2 = handle.aws("autoscaling", "test-setup"), handle.aws("ec2", "test-setup")
    subnets = ",".join(handle.state["subnets"].values()) if handle.state.get("subnets") else None
    if subnets is None:
        subnets = ",".join(s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if not s.get("DefaultForAz"))
    autoscaling.create_launch_configuration(LaunchConfigurationName="lc", ImageId=handle.state["amis"]["old"], InstanceType="m5.large")
    autoscaling.create_auto_scaling_group(AutoScalingGroupName="lc-group", LaunchConfigurationName="lc", MinSize=0, MaxSize=0,
                                          DesiredCapacity=0, VPCZoneIdentifier=subnets)
    template = ec2.describe_launch_templates()["LaunchTemplates"][0]["LaunchTemplateId"]
    autoscaling.create_auto_scaling_group(AutoScalingGroupName="empty-group", MinSize=0, MaxSize=3, DesiredCapacity=0,
                                          LaunchTemplate={"LaunchTemplateId": template, "Version": "1"}, VPCZoneIdentifier=subnets)
    return handle


def _fill(value, sandbox, tmp_path):
    """The placeholders of a case: the sandbox's own endpoints, a kubeconfig file that is not YAML."""
    if isinstance(value, dict):
        return {key: _fill(item, sandbox, tmp_path) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, sandbox, tmp_path) for item in value]
    if value == "@MALFORMED@":
        path = tmp_path / "malformed-kubeconfig"
        path.write_text("apiVersion: v1\nclusters: [this is: not: yaml\n")
        return str(path)
    return {"@KUBECONFIG@": sandbox.state["kubeconfig"], "@REGION@": sandbox.state["region"],
            "@AWS_URL@": sandbox.state["aws_url"]}.get(value, value) if isinstance(value, str) else value


def _last_failures(output):
    """host -> the message of the last task that failed on it (``fatal: [host]: FAILED! => {json}``)."""
    failures = {}
    for line in output.splitlines():
        found = re.match(r"^fatal: \[([^\]]+)\]: FAILED! => (\{.*\})\s*$", line)
        if found:
            result = json.loads(found.group(2))
            failures[found.group(1)] = result.get("msg", "")
    return failures


def test_every_bad_input_is_refused_by_name_with_zero_mutating_requests(sandbox, tmp_path):
    good = {
        "ansible_python_interpreter": sys.executable,
        "rolling_update_aws": {"region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"]},
        "rolling_update_k8s": {"kubeconfig": sandbox.state["kubeconfig"]},
        "rolling_update_node_groups": group(image_id=sandbox.state["amis"]["new"]),
        "rolling_update_post_drain_delay": "1",
    }
    hosts = {case: dict(good, **_fill(override, sandbox, tmp_path)) for case, (override, _message) in CASES.items()}
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    playbook = tmp_path / "sweep.yml"
    playbook.write_text(PLAYBOOK)
    env = sandbox.ansible_env({"ANSIBLE_FORKS": "8", "KUBECONFIG": sandbox.state["kubeconfig"]})
    env.pop("K8S_AUTH_KUBECONFIG", None)
    since = sandbox.now()
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), str(playbook)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, check=False)
    failures = _last_failures(proc.stdout)
    table = ["| case | message |", "|---|---|"] + [
        "| %s | %s |" % (case, " ".join(failures.get(case, "(not refused)").split()).replace("|", "\\|")) for case in CASES]
    os.makedirs(os.path.join(ROOT, "tests", "output"), exist_ok=True)
    with open(os.path.join(ROOT, "tests", "output", "bad_input.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(table) + "\n")
    print("\n".join(table))
    assert len(CASES) >= 40
    mutating = sandbox.mutating_requests(since=since)
    assert mutating == [], ["%s %s by %s" % (e.get("verb") or e.get("action"), e.get("path") or "", e.get("client")) for e in mutating]
    wrong = {}
    for case, (_override, needles) in CASES.items():
        message = failures.get(case)
        if message is None or not all(needle in message for needle in needles):
            wrong[case] = (needles, message)
    assert not wrong, json.dumps(wrong, indent=1) + "\n" + proc.stdout[-3000:]
    # a misspelt name: the message is one line, and nothing else (the argument spec) is printed with it
    long_failures = {case: len(line) for line in proc.stdout.splitlines() for case in ONE_LINE
                     if line.startswith("fatal: [%s]: FAILED!" % case) and len(line) > 1000}
    assert not long_failures and not [case for case in ONE_LINE if "\n" in failures.get(case, "")], long_failures
    # one message per case: no traceback, no second error stacked on the first
    assert not [case for case, message in failures.items() if "Traceback" in message]
    assert_safe(sandbox.report())


def test_a_region_botocore_does_not_know_is_refused_in_one_line_naming_it_and_the_known_ones(sandbox, tmp_path):
    """``region: eu-west-9`` with no endpoint_url (none in the environment either): the first read cannot reach
    ``autoscaling.eu-west-9.amazonaws.com``; the run stops at the check, in one line naming the region and the regions
    botocore knows - not a crash of the check, not the endpoint blamed."""
    since = sandbox.now()
    aws = {"region": "eu-west-9", "max_attempts": 1}
    cmd, env = sandbox.role_playbook_command(tmp_path, host_vars={"rolling_update_aws": aws})
    for name in ("AWS_ENDPOINT_URL", "AWS_URL", "AWS_ENDPOINT_URL_AUTO_SCALING", "AWS_ENDPOINT_URL_EC2"):
        env.pop(name, None)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
                          check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    message = _last_failures(proc.stdout).get("cluster") or ""
    assert message.startswith("rolling_update_aws.region: 'eu-west-9' is not a region botocore knows; use one of "), proc.stdout[-3000:]
    assert "eu-west-1" in message and "us-east-1" in message and "\n" not in message
    assert "is undefined" not in proc.stdout and "Traceback" not in proc.stdout, proc.stdout[-3000:]
    assert sandbox.mutating_requests(since=since) == []


def test_the_inventory_plugin_names_an_endpoint_url_on_a_closed_port_and_the_error(sandbox, tmp_path):
    """The inventory plugin nodeops.rollout.nodes with an endpoint_url nothing listens on: one error naming the file,
    the option, the endpoint and botocore's error - not the region."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = "http://127.0.0.1:%d" % sock.getsockname()[1]
    path = tmp_path / "cluster.nodes.yml"
    path.write_text(json.dumps({"plugin": "nodeops.rollout.nodes", "region": sandbox.state["region"], "endpoint_url": closed,
                                "max_attempts": 1, "kubeconfig": sandbox.state["kubeconfig"], "node_groups": [{"name": GROUP}]}))
    env = sandbox.ansible_env({"ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"})
    env.pop("K8S_AUTH_KUBECONFIG", None)
    proc = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", str(path), "--list"], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    text = " ".join(proc.stdout.split())
    assert "%s: endpoint_url: %s cannot be reached: DescribeAutoScalingGroups on Auto Scaling group '%s': EndpointConnectionError" % (
        path, closed, GROUP) in text, proc.stdout[-3000:]
    assert "region:" not in text, proc.stdout[-3000:]


def test_a_misspelt_extra_variable_is_refused_in_one_line_with_zero_mutating_requests(sandbox, tmp_path):
    """``-e rolling_update_max_unavailble=3``: refused before any change, naming the variable meant, not run
    with the default."""
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, extra=["rolling_update_max_unavailble=3"])
    assert rc != 0, out[-3000:]
    message = _last_failures(out).get("cluster")
    assert message == ("rolling_update_max_unavailble (did you mean rolling_update_max_unavailable?): not a variable of the role "
                       "nodeops.rollout.rolling_update, so it would be ignored; the role's variables are listed by "
                       "'ansible-doc -t role nodeops.rollout.rolling_update'"), out[-3000:]
    assert sandbox.mutating_requests(since=since) == []


def test_a_report_file_in_the_home_directory_is_written_there(sandbox, tmp_path):
    """``rolling_update_report_file: ~/plan.json`` is an absolute path once ``~`` is expanded, as the shell would: the plan
    is written there (and its HTML page beside it), not refused as relative."""
    home = tmp_path / "home"
    home.mkdir()
    since = sandbox.now()
    cmd, env = sandbox.role_playbook_command(tmp_path, playbook="plan.yml", report="~/plan.json")
    env["HOME"] = str(home)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert json.loads((home / "plan.json").read_text())["node_groups"][0]["status"] == "planned"
    assert (home / "plan.html").is_file()
    assert sandbox.mutating_requests(since=since) == []


# module -> (options, the option its message must name); a node and an instance of the sandbox fill @NODE@/@INSTANCE@
MODULE_CASES = {
    "node_drain timeout": ("node_drain", {"nodes": ["@NODE@"], "timeout": "abc"}, "timeout"),
    "node_drain grace_period": ("node_drain", {"nodes": ["@NODE@"], "grace_period": "-1"}, "grace_period"),
    "node_drain timeout_action": ("node_drain", {"nodes": ["@NODE@"], "timeout_action": "ignore"}, "timeout_action"),
    "node_taint effect": ("node_taint", {"nodes": ["@NODE@"], "taints": [{"key": "k", "effect": "NoRun"}]}, "effect"),
    "asg_surge surge": ("asg_surge", {"name": GROUP, "surge": "150%"}, "surge"),
    "asg_surge wait_timeout": ("asg_surge", {"name": GROUP, "surge": 1, "wait_timeout": "0.5h"}, "wait_timeout"),
    "instance_terminate instance_ids": ("instance_terminate", {"asg_name": GROUP, "instance_ids": ["web-1"]}, "instance_ids"),
    "instance_terminate decrement": ("instance_terminate", {"asg_name": GROUP, "instance_ids": ["@INSTANCE@"],
                                                            "decrement_desired_capacity": "maybe"}, "decrement_desired_capacity"),
    "cluster_validate interval": ("cluster_validate", {"label_selector": "eks:nodegroup-name=sandbox-nodes", "expected_count": 3,
                                                       "interval": "-5s"}, "interval"),
    "rollout_lock duration": ("rollout_lock", {"name": GROUP, "holder": "me", "duration": "0"}, "duration"),
    "launch_template_version two targets": ("launch_template_version", {"asg_name": GROUP, "image_id": "ami-0123456789abcdef0",
                                                                        "ssm_parameter": "/sandbox/ami/new"}, "image_id"),
    "node_group_info max_unavailable": ("node_group_info", {"name": GROUP, "max_unavailable": "0%"}, "max_unavailable"),
}


@pytest.mark.parametrize("case", sorted(MODULE_CASES))
def test_every_module_refuses_a_bad_option_by_name_with_zero_mutating_requests(sandbox, case):
    module, options, option = MODULE_CASES[case]
    instance = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]["Instances"][0]
    node = sandbox.core().list_node().items[0].metadata.name
    filled = json.loads(json.dumps(options).replace("@NODE@", node).replace("@INSTANCE@", instance["InstanceId"]))
    since = sandbox.now()
    result = sandbox.run_module(module, module_args=filled)
    assert result["rc"] != 0, result
    assert option in result["msg"], result["msg"]
    assert "Traceback" not in result["msg"]
    assert sandbox.mutating_requests(since=since) == []
