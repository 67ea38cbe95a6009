"""The one check of the role's values: each error names the role variable and what is allowed; good values are
settled (a group's own counts over the role's, durations in seconds, the lock's default)."""

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import (
    SettingsError, check_role_settings, check_variable_names, group_checks, resolved_settings, role_error)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import TASKS_PER_STEP

DEFAULTS = {
    "rolling_update_node_groups": [{"name": "workers", "image_id": "ami-0123456789abcdef0"}],
    "rolling_update_max_unavailable": 1, "rolling_update_max_surge": "", "rolling_update_strategy": "surge",
    "rolling_update_surge_method": "scale",
    "rolling_update_standby_instances": "ignore",
    "rolling_update_taint_key": "nodeops.rollout/outdated", "rolling_update_taint_effect": "NoSchedule",
    "rolling_update_drain_timeout": "15m", "rolling_update_drain_timeout_action": "fail", "rolling_update_grace_period": "",
    "rolling_update_post_drain_delay": "",
    "rolling_update_volume_detach_timeout": "6m", "rolling_update_node_ready_timeout": "15m", "rolling_update_validate_passes": 2,
    "rolling_update_validate_interval": "10s", "rolling_update_validate_timeout": "10m", "rolling_update_aws": {},
    "rolling_update_k8s": {}, "rolling_update_report_file": "", "rolling_update_report_sections": [], "rolling_update_lock_namespace": "kube-system",
    "rolling_update_lock_duration": "", "rolling_update_estimate_boot": "3m", "rolling_update_estimate_drain": "90s", "rolling_update_estimate_task": "1s",
    "rolling_update_on_failure": "hold", "rolling_update_window": "", "rolling_update_bake_time": 0,
    "rolling_update_checkpoints": [], "rolling_update_abort_alarms": [], "rolling_update_hooks": {},
    "rolling_update_hook_timeout": "10m",
}


def settle(**changes):
    return check_role_settings(dict(DEFAULTS, **{"rolling_update_" + key: value for key, value in changes.items()}))


def test_the_defaults_settle_with_a_short_lock_kept_alive():
    settings = settle()
    assert settings["seconds"]["drain_timeout"] == 900 and settings["seconds"]["grace_period"] is None
    # two minutes, whatever the timeouts: the modules that wait renew it while they wait, and a dead run's lock frees
    # itself within it
    assert settings["lock_duration"] == 120 and settings["seconds"]["hook_timeout"] == 600
    # the role's renewals wait while half of it is left, as the modules' do
    assert settings["lock_min_valid"] == 60
    assert settings["node_groups"] == [{"name": "workers", "image_id": "ami-0123456789abcdef0", "max_unavailable": 1, "max_surge": None,
                                        "max_node_age": None, "strategy": "surge"}]
    # the plan's estimate: the boot and drain the operator expects, the waits they configured (2 passes 10 s apart), and
    # the time Ansible takes per task; the post-drain delay is each group's, settled from its load balancers
    assert settings["estimate"] == {"boot_seconds": 180, "drain_seconds": 90, "validate_seconds": 10, "task_seconds": 1}
    assert settings["seconds"]["post_drain_delay"] is None
    # a window must hold a step with the fixed delay a load balancer that cannot be read would take
    assert settings["step_seconds"] == 180 + 90 + 60 + 10 + 2 * TASKS_PER_STEP * 1


def test_a_deregistration_timeout_given_is_waited_within_the_lock():
    assert settle()["seconds"]["deregistration_timeout"] is None   # each target group's delay plus the margin
    settings = settle(deregistration_timeout="8m")
    assert settings["seconds"]["deregistration_timeout"] == 480
    assert settings["lock_duration"] == 120   # waited for by rollout_step, which keeps the lock alive meanwhile
    assert settle(deregistration_timeout="0")["seconds"]["deregistration_timeout"] == 0


def test_a_group_s_own_counts_win_over_the_role_s_and_survey_strings_are_read():
    settings = settle(max_unavailable="2", max_surge="50%", validate_passes="3", lock_duration="45m",
                      node_groups=[{"name": "a"}, {"name": "b", "max_unavailable": "25%", "launch_template_version": 7}])
    assert [(g["name"], g["max_unavailable"], g["max_surge"]) for g in settings["node_groups"]] == [("a", "2", "50%"), ("b", "25%", "50%")]
    assert settings["node_groups"][1]["launch_template_version"] == "7"
    assert settings["validate_passes"] == 3 and settings["lock_duration"] == 2700 and settings["lock_min_valid"] == 1350
    assert settle(lock_duration="15s")["lock_duration"] == 15
    with pytest.raises(SettingsError, match="^rolling_update_lock_duration: '14s' is not allowed; .*at least 15 seconds"):
        settle(lock_duration="14s")


def test_the_html_report_lands_beside_the_json_result_and_the_sections_are_settled():
    assert settle()["report_html"] == "" and settle()["report_sections"] == []
    assert settle(report_file="/var/log/rollout/result.json")["report_html"] == "/var/log/rollout/result.html"
    assert settle(report_file="/var/log/rollout/result")["report_html"] == "/var/log/rollout/result.html"
    assert settle(report_file="/tmp/r.JSON")["report_html"] == "/tmp/r.html"
    sections = [{"title": "Invariants", "url": "http://127.0.0.1:8080/report"}, {"title": "SLO", "file": "/tmp/slo.json", "url": ""}]
    assert settle(report_sections=sections)["report_sections"] == [{"title": "Invariants", "url": "http://127.0.0.1:8080/report"},
                                                                   {"title": "SLO", "file": "/tmp/slo.json"}]
    # what the role's result tasks act on, each a plain flag or list
    settled = settle(report_file="/tmp/r.json", report_sections=sections)
    assert settled["write_report"] and not settle()["write_report"]
    assert [item["title"] for item in settled["report_section_urls"]] == ["Invariants"]
    assert [item["title"] for item in settled["report_section_files"]] == ["SLO"]


def test_the_aws_retry_options_are_taken():
    # the modules' retry_mode and max_attempts (AWS_ARGUMENT_SPEC), a survey's string count included
    # (the connection options go to the modules as given: the settings are those of no options at all)
    defaults = settle()
    assert settle(aws={"region": "eu-west-1", "retry_mode": "adaptive", "max_attempts": "4"}) == defaults
    assert settle(aws={"retry_mode": "standard", "max_attempts": 10}) == defaults
    assert settle(aws={"max_attempts": " 1 "}) == defaults


@pytest.mark.parametrize("change, expected", [
    ({"max_unavailable": "0"}, "rolling_update_max_unavailable: '0' is not allowed; use an integer >= 1 or a percentage between 1% and 100%"),
    ({"max_surge": "150%"}, "rolling_update_max_surge: '150%' is not allowed; use an integer >= 0 or a percentage between 0% and 100%"),
    ({"grace_period": "abc"}, "rolling_update_grace_period: 'abc' is not allowed; use a number of seconds (90)"),
    ({"drain_timeout": "0"}, "of at least 1 second"),
    ({"standby_instances": "skip"}, "rolling_update_standby_instances: 'skip' is not allowed; use one of ignore, terminate, wait"),
    ({"surge_method": "replace"}, "rolling_update_surge_method: 'replace' is not allowed; use one of scale, detach"),
    ({"taint_key": "a b"}, "rolling_update_taint_key: 'a b' is not allowed; use a Kubernetes label key"),
    ({"lock_namespace": "Kube_System"}, "rolling_update_lock_namespace: 'Kube_System' is not allowed"),
    ({"report_file": "r.json"}, "rolling_update_report_file: 'r.json' is not allowed; use an absolute path"),
    ({"report_sections": {"title": "x"}}, "rolling_update_report_sections: {'title': 'x'} is not allowed; use a list of sections"),
    ({"report_sections": [{"url": "http://x"}]}, "rolling_update_report_sections[0]: {'url': 'http://x'} is not allowed; use a dict with a title"),
    ({"report_sections": [{"title": "t"}]}, "rolling_update_report_sections[0]: {'title': 't'} is not allowed; give exactly one of url"),
    ({"report_sections": [{"title": "t", "url": "ftp://x"}]}, "rolling_update_report_sections[0].url: 'ftp://x' is not allowed; use an http"),
    ({"report_sections": [{"title": "t", "file": "r.json"}]}, "rolling_update_report_sections[0].file: 'r.json' is not allowed; use an absolute path"),
    ({"report_sections": [{"title": "t", "path": "/r"}]}, "rolling_update_report_sections[0]: path is not allowed; use title with url or file"),
    ({"validate_passes": "0"}, "rolling_update_validate_passes: '0' is not allowed; use a whole number, at least 1"),
    ({"aws": {"secret": "x"}}, "rolling_update_aws: secret is not an option; use region, profile, access_key, secret_key"),
    ({"on_failure": "undo"}, "rolling_update_on_failure: 'undo' is not allowed; use one of hold, rollback"),
    ({"window": "Mon 25:00 1h"}, "rolling_update_window.start: '25:00' is not allowed; use a time of day HH:MM"),
    ({"window": [{"days": "Tue", "start": "02:00", "duration": "3h", "timezone": "Moon/Base"}]},
     "rolling_update_window[0].timezone: 'Moon/Base' is not a time zone"),
    ({"bake_time": "1w"}, "rolling_update_bake_time: '1w' is not allowed; use a number of seconds (90)"),
    ({"bake_time": "49h"}, "rolling_update_bake_time: '49h' is not allowed; use at most 48h"),
    ({"checkpoints": "50%"}, "rolling_update_checkpoints[0]: '50%' is not a checkpoint"),
    ({"checkpoints": [{"percent": 120, "wait": "1m"}]}, "rolling_update_checkpoints[0].percent: 120 is not allowed; use a whole percentage"),
    ({"checkpoints": "20%:1m,20%:2m"}, "rolling_update_checkpoints[1].percent: 20% is listed twice"),
    ({"abort_alarms": ["api-5xx", ""]}, "rolling_update_abort_alarms[1]: '' is not allowed; use the name of a CloudWatch alarm"),
    ({"hooks": {"before_drain": "/etc/hostname"}}, "rolling_update_hooks: 'before_drain' is not an event; use before_rollout, before_step, "
                                                   "after_drain, after_step, on_failure, after_rollout"),
    ({"hooks": {"after_step": "/nonexistent/hook.yml"}}, "rolling_update_hooks.after_step[0]: /nonexistent/hook.yml is not a file"),
    ({"hooks": "after_step"}, "rolling_update_hooks: 'after_step' is not allowed; use a dict of event to task files"),
    ({"aws": {"retry_mode": "legacy"}}, "rolling_update_aws.retry_mode: 'legacy' is not allowed; use one of standard, adaptive"),
    ({"aws": {"max_attempts": "0"}}, "rolling_update_aws.max_attempts: '0' is not allowed; use a whole number, at least 1"),
    ({"node_groups": []}, "rolling_update_node_groups: [] is not allowed; use a list of at least one node group"),
    ({"deregistration_timeout": "soon"}, "rolling_update_deregistration_timeout: 'soon' is not allowed; use a number of seconds"),
    ({"node_groups": [{"name": "a"}, {"name": "a"}]}, "rolling_update_node_groups[1] (a): the group is listed twice (also at index 0)"),
    ({"node_groups": [{"name": "a", "image_id": "ami-0123456789abcdef0", "launch_template_version": 3}]},
     "rolling_update_node_groups[0] (a): give at most one of image_id, ssm_parameter, launch_template_version; got image_id, launch_template_version"),
    ({"node_groups": [{"name": "a", "launch_template_version": "newest"}]},
     "rolling_update_node_groups[0].launch_template_version: 'newest' is not allowed; use a version number (1 or more), $Latest or $Default"),
    ({"node_groups": [{"name": "a", "image_id": "ubuntu"}]}, "rolling_update_node_groups[0].image_id: 'ubuntu' is not an AMI id"),
    ({"node_groups": [{"name": "a", "max_surge": "-1"}]}, "rolling_update_node_groups[0].max_surge: '-1' is not allowed"),
])
def test_each_value_not_allowed_is_named_with_what_is_allowed(change, expected):
    with pytest.raises(SettingsError) as err:
        settle(**change)
    assert expected in str(err.value)


@pytest.mark.parametrize("message, expected", [
    ("image_id: AMI 'ami-1' not found in region us-east-1", "rolling_update_node_groups[2].image_id (web): AMI 'ami-1' not found in region us-east-1"),
    ("version: launch template lt-1 (web) has no version 9", "rolling_update_node_groups[2].launch_template_version (web): launch template lt-1"),
    ("name: Auto Scaling group 'web' not found", "rolling_update_node_groups[2] (web): Auto Scaling group 'web' not found"),
    ("kubeconfig: kubeconfig file not found: /x",
     "rolling_update_k8s.kubeconfig: kubeconfig file not found: /x (while checking rolling_update_node_groups[2], web)"),
    ("endpoint_url: DescribeImages: EndpointConnectionError", "rolling_update_aws.endpoint_url: DescribeImages: EndpointConnectionError"),
    ("no node of this cluster is an instance", "rolling_update_node_groups[2] (web): no node of this cluster is an instance"),
])
def test_a_module_error_is_led_by_the_role_variable_behind_it(message, expected):
    assert role_error(message, 2, "web").startswith(expected)


def test_the_operator_s_controls_settle_from_a_survey_s_strings(tmp_path):
    hook = tmp_path / "notify.yml"
    hook.write_text("---\n[]\n")
    settings = check_role_settings(dict(DEFAULTS, rolling_update_on_failure="rollback", rolling_update_window="Sat,Sun 22:00 4h Europe/Berlin",
                                        rolling_update_bake_time="10m", rolling_update_checkpoints="50%:30m, 25%:15m",
                                        rolling_update_abort_alarms="api-5xx, latency-p99,api-5xx",
                                        rolling_update_hooks="after_step=notify.yml,on_failure=%s" % hook), str(tmp_path))
    assert settings["on_failure"] == "rollback" and settings["bake_seconds"] == 600
    assert settings["windows"] == ["Sat,Sun 22:00 4h Europe/Berlin"]
    # in the modules' own form, the waits in seconds
    assert settings["checkpoints"] == [{"percent": 25, "wait": 900}, {"percent": 50, "wait": 1800}]
    assert settings["abort_alarms"] == ["api-5xx", "latency-p99"]
    assert settings["hooks"] == {"after_step": [str(hook)], "on_failure": [str(hook)]}
    # one step of the window's check: a drain, the post-drain delay, a boot and a validation
    assert settings["step_seconds"] == 90 + 60 + 180 + 10 + 2 * 3 * 1  # and two steps of three one-second tasks
    # a bake (or a checkpoint's wait) is waited for within one step, by rollout_step, which keeps the lock alive
    assert settings["lock_duration"] == 120


def test_the_step_hooks_take_their_names_before_as_aliases(tmp_path):
    first, second = tmp_path / "first.yml", tmp_path / "second.yml"
    for hook in (first, second):
        hook.write_text("---\n[]\n")
    settings = check_role_settings(dict(DEFAULTS, rolling_update_hooks={"before_batch": str(first), "before_step": str(second),
                                                                        "after_batch": [str(second)]}), str(tmp_path))
    # both names of the event give their files to the one event, in the order given; no event keeps the old name
    assert settings["hooks"] == {"before_step": [str(first), str(second)], "after_step": [str(second)]}
    with pytest.raises(SettingsError, match=r"^rolling_update_hooks\.after_batch\[0\]: /nonexistent\.yml is not a file"):
        check_role_settings(dict(DEFAULTS, rolling_update_hooks={"after_batch": "/nonexistent.yml"}), str(tmp_path))


def test_without_controls_nothing_is_added():
    settings = settle()
    assert (settings["on_failure"], settings["windows"], settings["bake_seconds"], settings["checkpoints"],
            settings["abort_alarms"], settings["hooks"]) == ("hold", [], 0, [], [], {})


def test_only_a_rollout_is_held_by_the_operator_s_controls_and_a_plan_or_check_mode_changes_nothing():
    values = dict(DEFAULTS, rolling_update_bake_time="10m", rolling_update_abort_alarms=["api-5xx"], rolling_update_plan="false",
                  rolling_update_aws={"region": "eu-west-1"}, rolling_update_k8s={"context": "prod"})
    rollout = check_role_settings(values)
    assert rollout["controls"] == {"bake_seconds": 600, "checkpoints": [], "abort_alarms": ["api-5xx"], "windows": [], "respect_pause": True,
                                   "blocking_pods": [], "alerts": None}
    # the connection's secrets are never in the settings, which a verbose run shows
    assert rollout["plan_only"] is False and "eu-west-1" not in str(rollout)
    for action in ("rollback", "cancel"):
        assert check_role_settings(values, action=action)["controls"] == {
            "bake_seconds": 0, "checkpoints": [], "abort_alarms": [], "windows": [], "respect_pause": False, "blocking_pods": [], "alerts": None}
    assert check_role_settings(values, check_mode=True)["plan_only"] is True
    assert check_role_settings(dict(values, rolling_update_plan=True))["plan_only"] is True


def _target(name, **found):
    return dict(found, rolling_update__group_spec={"name": name}, ansible_loop_var="rolling_update__group_spec")


def _group(outdated=(), mismatch=None, refusals=()):
    return {"node_groups": [{"outdated_nodes": list(outdated), "mismatch": mismatch, "refusals": list(refusals)}]}


def test_the_checks_of_every_group_give_the_outdated_nodes_of_the_groups_rolled_later():
    targets = [_target("a", target={}), _target("b", target={}), _target("c", target={})]
    groups = [_group(["a1"]), _group(["b1", "b2"]), _group(["b2", "c1"])]
    found = group_checks(targets, groups)
    assert found == {"error": None, "group": None, "permission": None, "queued": ["b1", "b2", "c1"], "taint_queued": True}
    # a plan, a rollback or a cancel taints nothing
    assert group_checks(targets, groups, plan_only=True)["taint_queued"] is False
    assert group_checks(targets, groups, action="cancel")["queued"] == []
    assert group_checks(targets, groups, queue=False)["taint_queued"] is False


def test_a_blocker_no_option_gets_past_stops_a_rollout_in_the_checks_naming_the_role_variables_that_would():
    targets = [_target("a", target={}), _target("b", target={})]
    groups = [_group(["a1"]), _group(["b1"])]
    stop = {"node": "b1", "pod": "shop/web-1", "kind": "pdb_zero", "pdb": "shop/web",
            "message": "PodDisruptionBudget shop/web allows 0 disruptions: it can never allow one",
            "gets_past": [{"option": "timeout_action", "value": "force", "effect": "deletes the pod"},
                          {"option": "restart_single_replica", "value": True, "effect": "restarted instead"}]}
    preflights = [{"would_stop": []}, {"would_stop": [stop]}]
    found = group_checks(targets, groups, preflights=preflights)
    assert found["group"] == "b" and found["permission"] is None
    assert found["error"] == (
        "rolling_update_node_groups[1] (b): the upgrade would stop at the drain of 1 node(s), whatever it waited for: pod "
        "shop/web-1 on node b1: PodDisruptionBudget shop/web allows 0 disruptions: it can never allow one; gets past with "
        "rolling_update_drain_timeout_action: force (deletes the pod) or rolling_update_restart_single_replica: true "
        "(restarted instead). Nothing was changed: fix what holds them (a budget: relax it or add replicas), or run with "
        "an option named above")
    # a plan shows it instead of stopping; a cancel or a rollback drains nothing that the pre-flight of a rollout found
    assert group_checks(targets, groups, plan_only=True, preflights=preflights)["error"] is None
    assert group_checks(targets, groups, action="cancel", preflights=preflights)["error"] is None
    # a group whose pre-flight was skipped (no outdated node) or failed stops nothing
    assert group_checks(targets, groups, preflights=[{"skipped": True}, {"failed": True, "msg": "?"}])["error"] is None


def test_the_first_error_of_the_checks_names_the_role_variable_and_the_permission_refused():
    targets = [_target("a", target={}), _target("b", msg="image_id: AMI ami-1 not found"), _target("c", target={})]
    groups = [_group(), {"skipped": True}, _group(mismatch="no node of this cluster is an instance")]
    found = group_checks(targets, groups)
    assert found["error"] == "rolling_update_node_groups[1].image_id (b): AMI ami-1 not found" and found["group"] == "b"
    denied = {"msg": "name: DescribeAutoScalingGroups: AccessDenied", "permission": "autoscaling:DescribeAutoScalingGroups"}
    refused = group_checks([_target("a", target={})], [denied])
    assert refused["permission"] == "autoscaling:DescribeAutoScalingGroups" and refused["group"] == "a"
    mismatch = group_checks([_target("a", target={})], [_group(mismatch="no node of this cluster is an instance", refusals=["x: y"])])
    assert mismatch["error"] == "rolling_update_node_groups[0] (a): no node of this cluster is an instance; x: y"
    assert mismatch["permission"] is None and mismatch["taint_queued"] is False


def test_a_missing_alarm_in_the_pre_pass_is_named_by_the_role_variable():
    assert role_error("abort_alarms: CloudWatch alarm(s) api-5xx not found; name existing alarms", 0, "workers") == \
        "rolling_update_abort_alarms: CloudWatch alarm(s) api-5xx not found; name existing alarms"


def test_a_misspelt_variable_is_refused_in_one_line_naming_the_nearest_known_name():
    with pytest.raises(SettingsError) as err:
        check_variable_names(["rolling_update_max_unavailble", "rolling_update_drain_timeout", "rolling_update__settings"],
                             ["rolling_update_max_unavailable", "rolling_update_drain_timeout"])
    message = str(err.value)
    assert message.startswith("rolling_update_max_unavailble (did you mean rolling_update_max_unavailable?): not a variable "
                              "of the role nodeops.rollout.rolling_update"), message
    assert "\n" not in message and "rolling_update_drain_timeout" not in message and "rolling_update__settings" not in message


def test_the_playbooks_variables_the_role_s_outputs_and_its_own_facts_are_known():
    check_variable_names(["rolling_update_clusters", "rolling_update_serial", "rolling_update_nodes", "rolling_update_result",
                          "rolling_update_results", "rolling_update_hook", "rolling_update__info", "rolling_update_plan"],
                         ["rolling_update_plan"])


def test_a_misspelt_field_of_a_node_group_is_refused_in_one_line_naming_the_nearest_field():
    with pytest.raises(SettingsError) as err:
        settle(node_groups=[{"name": "workers", "ami_id": "ami-0123456789abcdef0"}])
    assert str(err.value) == ("rolling_update_node_groups[0].ami_id: not a field of a node group (did you mean image_id?); use name, "
                              "image_id, ssm_parameter, launch_template_version, max_unavailable, max_surge, strategy, max_node_age")
    with pytest.raises(SettingsError, match=r"^rolling_update_node_groups\[1\]\.maxSurge: not a field of a node group \(did you mean max_surge\?\)"):
        settle(node_groups=[{"name": "a"}, {"name": "b", "maxSurge": 2}])
    # nothing close: the fields allowed alone
    with pytest.raises(SettingsError, match=r"^rolling_update_node_groups\[0\]\.zone: not a field of a node group; use name,"):
        settle(node_groups=[{"name": "a", "zone": "us-east-1a"}])


def test_a_report_file_in_the_home_directory_is_expanded_and_taken(monkeypatch):
    monkeypatch.setenv("HOME", "/home/operator")
    settings = settle(report_file="~/plan.json")
    assert settings["report_file"] == "/home/operator/plan.json" and settings["report_html"] == "/home/operator/plan.html"
    assert settle()["report_file"] == ""
    with pytest.raises(SettingsError, match=r"^rolling_update_report_file: 'plan.json' is not allowed; use an absolute path"):
        settle(report_file="plan.json")


@pytest.mark.parametrize("name", ["canary", "force", "delete_emptydir_data", "restart_single_replica", "plan", "check_access"])
def test_a_yes_or_no_variable_that_is_no_boolean_is_refused_in_one_line_naming_it(name):
    field = "rolling_update_" + name
    with pytest.raises(SettingsError) as raised:
        check_role_settings(dict(DEFAULTS, **{field: "maybe"}))
    assert str(raised.value) == "%s: 'maybe' is not allowed; use true or false (or yes/no, on/off, 1/0)" % field
    for word in ("yes", "False", "1", "off", True):
        check_role_settings(dict(DEFAULTS, **{field: word}))
    assert check_role_settings(dict(DEFAULTS, rolling_update_plan="yes"))["plan_only"] is True
    assert check_role_settings(dict(DEFAULTS, rolling_update_plan="off"))["plan_only"] is False


def test_each_group_s_max_unavailable_is_resolved_once_from_its_read():
    """After the read-only pre-pass, every group carries the count its read resolved (a percentage of its size, its
    own over the role's), an integer for every later module; a group not read keeps its setting."""
    settings = settle(max_unavailable="50%", node_groups=[
        {"name": "workers"}, {"name": "batch", "max_unavailable": "25%"}, {"name": "gone"}])
    assert [group["max_unavailable"] for group in settings["node_groups"]] == ["50%", "25%", "50%"]
    reads = [{"node_groups": [{"name": "workers", "plan": {"batch_size": 3}}]},
             {"node_groups": [{"name": "batch", "plan": {"batch_size": 1}}]},
             {"failed": True, "msg": "Auto Scaling group 'gone' not found"}]
    resolved = resolved_settings(settings, reads)
    assert [(group["name"], group["max_unavailable"]) for group in resolved["node_groups"]] == [
        ("workers", 3), ("batch", 1), ("gone", "50%")]
    assert resolved["node_groups"][0]["max_surge"] is None and resolved["seconds"] == settings["seconds"]
    # the settings themselves are left as they were
    assert settings["node_groups"][0]["max_unavailable"] == "50%"


@pytest.mark.parametrize("value, message", [
    ("0", "rolling_update_max_unavailable: '0' is not allowed"),
    ("150%", "rolling_update_max_unavailable: '150%' is not allowed"),
])
def test_max_unavailable_is_refused_by_the_function_that_resolves_it(value, message):
    with pytest.raises(SettingsError, match=message):
        settle(max_unavailable=value)


def test_terminate_first_settles_each_group_with_no_surge_and_a_group_may_say_otherwise():
    settings = settle(strategy="terminate_first", node_groups=[{"name": "gpu"}, {"name": "web", "strategy": "surge"},
                                                               {"name": "batch", "strategy": "surge", "max_surge": 3}])
    assert [(g["name"], g["strategy"], g["max_surge"]) for g in settings["node_groups"]] == [
        ("gpu", "terminate_first", 0), ("web", "surge", None), ("batch", "surge", 3)]
    # a group of its own terminate_first gives way to no role surge
    settings = settle(max_surge="50%", node_groups=[{"name": "gpu", "strategy": "terminate_first"}, {"name": "web"}])
    assert [(g["strategy"], g["max_surge"]) for g in settings["node_groups"]] == [("terminate_first", 0), ("surge", "50%")]


@pytest.mark.parametrize("changes, message", [
    ({"strategy": "blue_green"}, "rolling_update_strategy: 'blue_green' is not allowed; use one of surge, terminate_first"),
    ({"strategy": "terminate_first", "max_surge": "2"},
     "rolling_update_max_surge: '2' is not allowed with rolling_update_strategy terminate_first, which launches no extra instance"),
    ({"node_groups": [{"name": "gpu", "strategy": "minimal"}]},
     "rolling_update_node_groups[0].strategy: 'minimal' is not allowed; use one of surge, terminate_first"),
    ({"node_groups": [{"name": "gpu", "strategy": "terminate_first", "max_surge": "25%"}]},
     "rolling_update_node_groups[0].max_surge: '25%' is not allowed with rolling_update_node_groups[0].strategy terminate_first"),
    ({"strategy": "terminate_first", "node_groups": [{"name": "a"}, {"name": "gpu", "max_surge": 1}]},
     "rolling_update_node_groups[1].max_surge: 1 is not allowed with rolling_update_strategy terminate_first"),
])
def test_a_strategy_and_a_surge_that_contradict_it_are_refused_naming_the_field(changes, message):
    with pytest.raises(SettingsError) as caught:
        settle(**changes)
    assert str(caught.value).startswith(message), str(caught.value)


def test_max_node_age_is_settled_in_seconds_and_a_group_may_say_otherwise():
    settings = settle(max_node_age="30d", node_groups=[{"name": "web"}, {"name": "gpu", "max_node_age": "1d12h"}])
    assert [(g["name"], g["max_node_age"]) for g in settings["node_groups"]] == [("web", 2592000), ("gpu", 129600)]
    # empty: no rotation by age
    assert [g["max_node_age"] for g in settle(node_groups=[{"name": "web"}])["node_groups"]] == [None]


@pytest.mark.parametrize("changes, message", [
    ({"max_node_age": "a month"}, "rolling_update_max_node_age: 'a month' is not allowed; use a number of seconds (90) or a duration"),
    ({"max_node_age": "10m"}, "rolling_update_max_node_age: '10m' is not allowed; use a number of seconds (90) or a duration such as "
                              "'90s', '15m' or '1h30m', of at least 3600 seconds"),
    ({"node_groups": [{"name": "gpu", "max_node_age": "-1h"}]}, "rolling_update_node_groups[0].max_node_age: '-1h' is not allowed"),
])
def test_a_max_node_age_that_does_not_parse_or_is_under_an_hour_is_refused_naming_the_field(changes, message):
    with pytest.raises(SettingsError) as caught:
        settle(**changes)
    assert str(caught.value).startswith(message), str(caught.value)


@pytest.mark.parametrize("value, expected", [("", None), ("0", 0), (2, 2), (" 3 ", 3)])
def test_the_quarantine_cap_is_a_whole_number_or_none(value, expected):
    assert settle(max_quarantined=value)["max_quarantined"] == expected


@pytest.mark.parametrize("value", ["-1", "1.5", "two", True, -1])
def test_a_quarantine_cap_below_zero_or_no_number_is_refused_naming_the_field(value):
    with pytest.raises(SettingsError) as caught:
        settle(max_quarantined=value)
    assert str(caught.value).startswith("rolling_update_max_quarantined: %r is not allowed; use a whole number, 0 or more" % (value,)), str(caught.value)


def test_the_metrics_file_is_an_absolute_path_in_a_directory_that_exists(tmp_path):
    assert settle()["write_metrics"] is False
    settings = settle(metrics_file=str(tmp_path / "rollout.prom"))
    assert settings["metrics_file"] == str(tmp_path / "rollout.prom") and settings["write_metrics"] is True


@pytest.mark.parametrize("value, message", [
    ("rollout.prom", "rolling_update_metrics_file: 'rollout.prom' is not allowed; use an absolute path"),
    ("/no/such/directory/rollout.prom", "rolling_update_metrics_file: '/no/such/directory/rollout.prom' is not allowed; its directory "
                                        "/no/such/directory does not exist"),
])
def test_a_metrics_file_that_cannot_be_written_is_refused_naming_the_field(value, message):
    with pytest.raises(SettingsError) as caught:
        settle(metrics_file=value)
    assert str(caught.value).startswith(message), str(caught.value)


def test_blocking_pods_settle_as_selectors_each_with_its_namespace_or_none():
    settings = settle(blocking_pods=["app=backup", {"selector": "job-name in (nightly, weekly)", "namespace": "db"}])
    assert settings["controls"]["blocking_pods"] == [{"selector": "app=backup", "namespace": None},
                                                     {"selector": "job-name in (nightly, weekly)", "namespace": "db"}]
    # a rollback or a cancel is not held
    assert settle(blocking_pods=["app=backup"]).get("controls")["blocking_pods"]
    assert check_role_settings(dict(DEFAULTS, rolling_update_blocking_pods=["app=backup"]), action="cancel")["controls"]["blocking_pods"] == []


@pytest.mark.parametrize("value, message", [
    (["app=backup", "a b"], "rolling_update_blocking_pods[1]: 'a b' is not allowed; use a label selector such as app=backup"),
    ([{"selector": "app=x", "namespace": "Ops"}], "rolling_update_blocking_pods[0].namespace: 'Ops' is not allowed"),
    ([{"labels": "app=x"}], "rolling_update_blocking_pods[0]: labels is not allowed; use selector and namespace"),
])
def test_a_blocking_pod_selector_that_does_not_parse_is_refused_naming_it(value, message):
    with pytest.raises(SettingsError) as caught:
        settle(blocking_pods=value)
    assert str(caught.value).startswith(message), str(caught.value)


@pytest.mark.parametrize("value, expected", [
    (['severity="critical"', 'alertname=~"KubePod.*"', "team!=db", 'job!~"a|b"'],
     ['severity="critical"', 'alertname=~"KubePod.*"', "team!=db", 'job!~"a|b"']),
    ('severity="critical", alertname=~"a,b"', ['severity="critical"', 'alertname=~"a,b"']),
    ("", []),
    ([], []),
])
def test_alert_matchers_are_alertmanagers_filter(value, expected):
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import check_alert_matchers
    assert check_alert_matchers(value, "f") == expected


@pytest.mark.parametrize("value, message", [
    (["severity==critical"], "f[0]: 'severity==critical' is not a matcher; use name=\"value\""),
    (["=critical"], "f[0]: '=critical' is not a matcher"),
    (['job=~"("'], "f[0]: 'job=~\"(\"': the regular expression does not compile"),
    ({"severity": "critical"}, "f: {'severity': 'critical'} is not allowed; use a list of Alertmanager matchers"),
])
def test_an_alert_matcher_that_does_not_parse_is_refused_naming_it(value, message):
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import SettingsError, check_alert_matchers
    with pytest.raises(SettingsError) as err:
        check_alert_matchers(value, "f")
    assert str(err.value).startswith(message), str(err.value)


def test_alert_gates_need_an_alertmanager_url_and_never_carry_the_token():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import SettingsError, check_alert_gates
    assert check_alert_gates("", "none", [], [], 1800, False) is None
    assert check_alert_gates("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1/alertmanager/", "sigv4",
                             ['severity="critical"'], [], 1800, False) == {
        "url": "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1/alertmanager", "auth": "sigv4",
        "abort": ['severity="critical"'], "pause": [], "pause_timeout": 1800}
    with pytest.raises(SettingsError, match="rolling_update_alertmanager_url: '' is not allowed; the alert gates need the URL"):
        check_alert_gates("", "none", [], ["a=b"], 1800, False)
    with pytest.raises(SettingsError, match="rolling_update_alertmanager_token: is empty"):
        check_alert_gates("http://am:9093", "bearer", ["a=b"], [], 1800, False)
    assert "token" not in check_alert_gates("http://am:9093", "bearer", ["a=b"], [], 1800, True)


def test_the_pushgateway_url_is_an_http_url_without_its_metrics_path():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import SettingsError, check_pushgateway_url
    assert check_pushgateway_url("") == "" and check_pushgateway_url(None) == ""
    assert check_pushgateway_url(" http://pushgateway.monitoring:9091/ ") == "http://pushgateway.monitoring:9091"
    for value in ("pushgateway:9091", "ftp://pgw", "http://pgw:9091/metrics/job/x"):
        with pytest.raises(SettingsError, match="rolling_update_pushgateway_url: .* is not allowed; use the URL of a Pushgateway"):
            check_pushgateway_url(value)
