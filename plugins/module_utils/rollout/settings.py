# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The whole input of a rollout, checked before anything changes: every value of the role's variables (as an AWX
survey sends them, strings included), each error naming the role variable the user set and what is allowed.

The role's argument spec (``meta/argument_specs.yml``) refuses wrong types and unknown keys first; this is the one
check of the values, and the one place that settles them: a group's own ``max_unavailable``/``max_surge`` over the
role's, durations in seconds, the lock's duration. The filter group_checks then names the role variable behind a module's
error of the read-only pre-pass (``tasks/main.yml``, the filter group_checks).
"""

from __future__ import annotations

import difflib
import os
import re
import urllib.parse

from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import ALERTMANAGER_AUTH, METHODS, RETRY_MODES, TIMEOUT_ACTIONS
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import stop_message
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import lease_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.control import ON_FAILURE
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import MIN_NODE_AGE, STANDBY_POLICIES
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import plan_step_seconds
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import OUTDATED_TAINT_EFFECTS, max_unavailable_count
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.strategies import STRATEGIES, TERMINATE_FIRST, check_strategy, strategy_surge
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.targets import BLIND_DELAY_SECONDS
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.template import check_target_options
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import (
    PlanError,
    parse_checkpoints,
    parse_duration,
    parse_hold,
    parse_bool,
    parse_int_or_percent,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.window import parse_windows

VARIABLE_PREFIX = "rolling_update_"
# variable -> (the shortest duration allowed in seconds, empty allowed)
DURATIONS = {
    "grace_period": (0, True),
    "drain_timeout": (1, False),
    "post_drain_delay": (0, True),
    "deregistration_timeout": (0, True),
    "volume_detach_timeout": (0, False),
    "node_ready_timeout": (1, False),
    "validate_interval": (1, False),
    "validate_timeout": (1, False),
    "lock_duration": (lease_lock.MIN_SECONDS, True),
    "hook_timeout": (1, False),
    "estimate_boot": (0, False),
    "estimate_drain": (0, False),
    "estimate_task": (0, False),
    "pause_alerts_timeout": (1, True),
}
CHOICES = {
    "strategy": STRATEGIES,
    "surge_method": METHODS,
    "standby_instances": STANDBY_POLICIES,
    "taint_effect": OUTDATED_TAINT_EFFECTS,
    "drain_timeout_action": TIMEOUT_ACTIONS,
    "on_failure": ON_FAILURE,
}
# The role's yes-or-no variables. The argument spec takes them as they come (type raw): its own refusal of a word that is
# no boolean dumps the whole spec (26 KB) with the one line that matters; this check says that line alone.
BOOLEANS = ("canary", "force", "delete_emptydir_data", "restart_single_replica", "plan", "check_access")


def check_boolean(value, field):
    """``value`` as a bool (values.py ``parse_bool``), or SettingsError naming ``field``."""
    try:
        return parse_bool(value, field)
    except PlanError as exc:
        raise SettingsError(str(exc)) from None


# where the role includes the task files of rolling_update_hooks
HOOK_EVENTS = ("before_rollout", "before_step", "after_drain", "after_step", "on_failure", "after_rollout")
# the step events' names before they were named for the step they fire around (a batch is the serial playbook's)
HOOK_ALIASES = {"before_batch": "before_step", "after_batch": "after_step"}
_ALARM_NAME_LIMIT = 255
GROUP_TARGETS = ("image_id", "ssm_parameter", "launch_template_version")
# the module option behind each role field, where the names differ
_MODULE_OPTION = {"launch_template_version": "version"}
# node_drain's options as the role's variables name them, in what the pre-flight says would get past a blocker
DRAIN_OPTION_VARIABLES = {"timeout_action": "rolling_update_drain_timeout_action", "force": "rolling_update_force",
                          "delete_emptydir_data": "rolling_update_delete_emptydir_data",
                          "restart_single_replica": "rolling_update_restart_single_replica"}
# the fields of an item of rolling_update_node_groups
GROUP_FIELDS = ("name",) + GROUP_TARGETS + ("max_unavailable", "max_surge", "strategy", "max_node_age")
# Variables named rolling_update_* that are not options of the role (meta/argument_specs.yml) and still belong to it: the
# playbooks' own (the hosts pattern, the serial waves; the argument spec's "Playbook variables") and the role's outputs a
# later run sees (the fact, the AWX artifact a workflow passes on, a hook's input).
PLAYBOOK_VARIABLES = ("rolling_update_clusters", "rolling_update_serial", "rolling_update_nodes")
ROLE_OUTPUTS = ("rolling_update_result", "rolling_update_results", "rolling_update_hook")
AWS_OPTIONS = ("region", "profile", "access_key", "secret_key", "session_token", "endpoint_url", "aws_ca_bundle", "retry_mode",
               "max_attempts")
K8S_OPTIONS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key", "proxy",
               "eks_cluster")

_LABEL_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class SettingsError(PlanError):
    """A value of the role's input that is not allowed; the message names the variable."""


def _empty(value):
    return value is None or (isinstance(value, str) and not value.strip())


def nearest(name, allowed):
    """`` (did you mean X?)`` for the allowed name closest to a misspelt ``name``, or "" when none is close."""
    close = difflib.get_close_matches(str(name), list(allowed), n=1, cutoff=0.55)
    return " (did you mean %s?)" % close[0] if close else ""


def check_variable_names(names, options):
    """Refuse, in one line, every variable of ``names`` (those named ``rolling_update_*`` that a run sees) that is neither
    one of the role's ``options`` nor one of PLAYBOOK_VARIABLES and ROLE_OUTPUTS, naming the nearest known name: a
    misspelt variable would otherwise be ignored and its default used. The role's own facts (``rolling_update__*``) are
    not the user's and are let be."""
    known = set(options) | set(PLAYBOOK_VARIABLES) | set(ROLE_OUTPUTS)
    unknown = sorted(set(name for name in names or () if str(name).startswith(VARIABLE_PREFIX)
                         and not str(name).startswith(VARIABLE_PREFIX + "_") and name not in known))
    if unknown:
        raise SettingsError("%s: not a variable of the role nodeops.rollout.rolling_update, so it would be ignored; the role's "
                            "variables are listed by 'ansible-doc -t role nodeops.rollout.rolling_update'"
                            % "; ".join(name + nearest(name, known) for name in unknown))


def _renamed(exc, option, field):
    """An error of a shared parser, which names ``option``, as the role's ``field``."""
    text = str(exc)
    if text.startswith(option + ":"):
        text = text[len(option) + 1:].lstrip()
    return SettingsError("%s: %s" % (field, text))


def check_label_key(value, field):
    """A Kubernetes label (and taint) key: an optional DNS subdomain prefix and '/', then a name of 1-63 characters."""
    text = value if isinstance(value, str) else ""
    prefix, _sep, name = text.rpartition("/")
    if not _LABEL_NAME_RE.match(name) or (prefix and not _DNS_SUBDOMAIN_RE.match(prefix)):
        raise SettingsError("%s: %r is not allowed; use a Kubernetes label key such as nodeops.rollout/outdated "
                            "(an optional DNS subdomain and '/', then 1-63 letters, digits, '-', '_' or '.')" % (field, value))
    return text


def _count(value, field, allow_zero):
    """A count checked as the modules check it: max_unavailable (``allow_zero`` false) by the one function that resolves
    it (rollout.sizes ``max_unavailable_count``; node_group_info resolves it against the group's size, and
    :func:`resolved_settings` keeps the result), max_surge as a whole number or a percentage."""
    try:
        if allow_zero:
            parse_int_or_percent(value, field, allow_zero=True)
        else:
            max_unavailable_count(value, 0, field)
    except PlanError as exc:
        raise SettingsError(str(exc)) from None
    return value.strip() if isinstance(value, str) else value


def check_node_groups(groups, field, defaults=None):
    """The node groups of the role's ``rolling_update_node_groups`` and of the inventory plugin's ``node_groups``
    (``field``, the name in the errors), checked by one rule: a list of at least one dict, each with the name of its
    Auto Scaling group, at most one target, and its own ``max_unavailable``/``max_surge``/``strategy``/``max_node_age``
    (seconds) as the role's settings are checked. ``defaults`` (``{"max_unavailable", "max_surge", "strategy",
    "max_node_age"}``) fills what a group does not
    give; without it, what is not given stays out (the inventory's groups, which the role settles later). Raises
    SettingsError naming the field."""
    if not isinstance(groups, list) or not groups or not all(isinstance(item, dict) for item in groups):
        raise SettingsError("%s: %r is not allowed; use a list of at least one node group, each a dict with "
                            "the name of its Auto Scaling group" % (field, groups))
    seen = {}
    return [_check_group("%s[%d]" % (field, index), index, item, seen, defaults) for index, item in enumerate(groups)]


def target_options(group):
    """A node group's target as the options of launch_template_version (``{"image_id"|"ssm_parameter"|"version": ...}``)."""
    return {_MODULE_OPTION.get(target, target): group[target] for target in GROUP_TARGETS if not _empty(group.get(target))}


def _check_group(field, index, item, seen, defaults):
    for key in item:
        if key not in GROUP_FIELDS:
            raise SettingsError("%s.%s: not a field of a node group%s; use %s" % (field, key, nearest(key, GROUP_FIELDS), ", ".join(GROUP_FIELDS)))
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SettingsError("%s: %r has no name; give each node group the name of its Auto Scaling group" % (field, item))
    name = name.strip()
    if name in seen:
        raise SettingsError("%s (%s): the group is listed twice (also at index %d); list each node group once"
                            % (field, name, seen[name]))
    seen[name] = index
    given = [target for target in GROUP_TARGETS if not _empty(item.get(target))]
    if len(given) > 1:
        raise SettingsError("%s (%s): give at most one of %s; got %s" % (field, name, ", ".join(GROUP_TARGETS), ", ".join(given)))
    try:
        check_target_options(target_options(item))
    except RolloutError as exc:
        target = given[0]
        raise _renamed(exc, _MODULE_OPTION.get(target, target), "%s.%s" % (field, target)) from None
    group = {"name": name}
    group.update({target: str(item[target]).strip() for target in given})
    for key, allow_zero in (("max_unavailable", False), ("max_surge", True)):
        if _empty(item.get(key)):
            if defaults is not None:
                group[key] = defaults[key]
        else:
            group[key] = _count(item[key], "%s.%s" % (field, key), allow_zero)
    if not _empty(item.get("max_node_age")):
        group["max_node_age"] = check_node_age(item["max_node_age"], "%s.max_node_age" % field)
    elif defaults is not None:
        group["max_node_age"] = defaults.get("max_node_age")
    # the group's strategy settles its surge: terminate_first launches none (a surge of its own that asks for one is
    # refused); the role's surge is not the group's own, and gives way
    own = not _empty(item.get("strategy"))
    strategy = item["strategy"] if own else (defaults or {}).get("strategy")
    strategy_field = "%s.strategy" % field if own else VARIABLE_PREFIX + "strategy"
    if strategy is not None:
        try:
            group["strategy"] = check_strategy(strategy, strategy_field)
            if strategy == TERMINATE_FIRST and (defaults is not None or not _empty(item.get("max_surge"))):
                group["max_surge"] = strategy_surge(strategy, item.get("max_surge"), "%s.max_surge" % field, strategy_field)
        except PlanError as exc:
            raise SettingsError(str(exc)) from None
    return group


def check_node_age(value, field):
    """A max_node_age in seconds (None: empty, no rotation by age): a duration of at least MIN_NODE_AGE."""
    if _empty(value):
        return None
    try:
        return parse_duration(value, field, minimum=MIN_NODE_AGE)
    except PlanError as exc:
        raise SettingsError(str(exc)) from None


def _check_connection(value, field, allowed):
    unknown = sorted(set(value or {}) - set(allowed))
    if unknown:
        raise SettingsError("%s: %s is not an option; use %s" % (field, ", ".join(unknown), ", ".join(allowed)))


def _check_aws_retries(aws, field):
    if not isinstance(aws, dict):
        return
    mode = aws.get("retry_mode")
    if mode is not None and mode not in RETRY_MODES:
        raise SettingsError("%s.retry_mode: %r is not allowed; use one of %s" % (field, mode, ", ".join(RETRY_MODES)))
    attempts = aws.get("max_attempts")
    if attempts is not None and (isinstance(attempts, bool) or not re.match(r"^\s*[0-9]+\s*$", str(attempts)) or int(attempts) < 1):
        raise SettingsError("%s.max_attempts: %r is not allowed; use a whole number, at least 1" % (field, attempts))


def check_alarm_names(value, field):
    """CloudWatch alarm names: a list, or one text with names separated by commas (an AWX survey's answer)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)):
        raise SettingsError("%s: %r is not allowed; use a list of CloudWatch alarm names" % (field, value))
    checked = []
    for index, name in enumerate(names):
        text = name.strip() if isinstance(name, str) else ""
        if not text or len(text) > _ALARM_NAME_LIMIT:
            raise SettingsError("%s[%d]: %r is not allowed; use the name of a CloudWatch alarm (1-255 characters)" % (field, index, name))
        if text not in checked:
            checked.append(text)
    return checked


def check_hooks(value, field, base_dir=None):
    """``{event: task file or [task files]}`` (or ``"event=file,event=file"``) -> ``{event: [absolute paths]}``: every
    event one of HOOK_EVENTS (or HOOK_ALIASES, its name before), every file there (a relative path is taken from ``base_dir``, the playbook's directory)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        pairs = {}
        for item in value.split(","):
            event, sep, path = item.partition("=")
            if not sep or not event.strip() or not path.strip():
                raise SettingsError("%s: %r is not allowed; use a dict of event to task files, or 'event=file' pairs separated "
                                    "by commas, the events among %s" % (field, item.strip(), ", ".join(HOOK_EVENTS)))
            pairs.setdefault(event.strip(), []).append(path.strip())
        value = pairs
    if not isinstance(value, dict):
        raise SettingsError("%s: %r is not allowed; use a dict of event to task files, the events among %s"
                            % (field, value, ", ".join(HOOK_EVENTS)))
    hooks = {}
    for given, files in value.items():
        event = HOOK_ALIASES.get(given, given)
        if event not in HOOK_EVENTS:
            raise SettingsError("%s: %r is not an event; use %s" % (field, given, ", ".join(HOOK_EVENTS)))
        files = [files] if isinstance(files, str) else files
        if not isinstance(files, (list, tuple)) or not files:
            raise SettingsError("%s.%s: %r is not allowed; use a task file or a list of them" % (field, given, files))
        paths = []
        for index, path in enumerate(files):
            where = "%s.%s[%d]" % (field, given, index)
            if not isinstance(path, str) or not path.strip():
                raise SettingsError("%s: %r is not allowed; use the path of a task file" % (where, path))
            full = path.strip() if os.path.isabs(path.strip()) else os.path.join(base_dir or os.getcwd(), path.strip())
            if not os.path.isfile(full):
                raise SettingsError("%s: %s is not a file%s; give the path of a task file, absolute or relative to the playbook's "
                                    "directory" % (where, path, " (%s)" % full if full != path.strip() else ""))
            paths.append(os.path.normpath(full))
        # an alias and its event both given: the files of both, in the order given
        hooks[event] = hooks.get(event, []) + paths
    return hooks


def check_role_settings(values, base_dir=None, check_mode=False, action="rollout"):
    """Every value of the role's variables (``{"rolling_update_max_unavailable": ..., ...}``), settled.

    Returns ``{"seconds": {duration: int or None}, "lock_duration": int, "node_groups": [...], "report_file" (``~``
    expanded), "report_html", "windows", "bake_seconds",
    "checkpoints", "abort_alarms", "hooks", "step_seconds", ...}``, each node group with its own ``max_unavailable`` and
    ``max_surge`` (None: the default surge) and at most one target; raises SettingsError naming the first variable
    that is not allowed. ``base_dir`` is where relative hook paths are found (the playbook's directory); ``plan_only``
    (check mode, or ``rolling_update_plan``) says that the run plans and changes nothing; ``controls`` what holds the
    run's steps (``action`` rollout: the bake time, checkpoints, abort alarms, maintenance windows and pause requests;
    a rollback or a cancel is the operator's own act, which none of them holds)."""
    def var(name):
        return values.get(VARIABLE_PREFIX + name)

    seconds = {}
    for name, (minimum, allow_empty) in DURATIONS.items():
        value = var(name)
        try:
            seconds[name] = None if allow_empty and _empty(value) else parse_duration(value, VARIABLE_PREFIX + name, minimum=minimum)
        except PlanError as exc:
            raise SettingsError(str(exc)) from None
    flags = {name: check_boolean(var(name), VARIABLE_PREFIX + name) for name in BOOLEANS if var(name) is not None}
    for name, allowed in CHOICES.items():
        if var(name) not in allowed:
            raise SettingsError("%s: %r is not allowed; use one of %s" % (VARIABLE_PREFIX + name, var(name), ", ".join(allowed)))
    check_label_key(var("taint_key"), VARIABLE_PREFIX + "taint_key")
    namespace = var("lock_namespace")
    if not isinstance(namespace, str) or not _DNS_LABEL_RE.match(namespace):
        raise SettingsError("%slock_namespace: %r is not allowed; use a namespace name, a DNS label (lowercase letters, "
                            "digits and '-', 1-63 characters) such as kube-system" % (VARIABLE_PREFIX, namespace))
    given = var("report_file")
    # the path as the result is written to it: ~ is the controller user's home
    report = "" if _empty(given) else os.path.expanduser(str(given).strip())
    if report and not os.path.isabs(report):
        raise SettingsError("%sreport_file: %r is not allowed; use an absolute path (several clusters and the installed "
                            "collection's own directory make a relative one ambiguous)" % (VARIABLE_PREFIX, given))
    sections = _check_report_sections(var("report_sections"))
    metrics = check_metrics_file(var("metrics_file"))
    pushgateway = check_pushgateway_url(var("pushgateway_url"))
    passes = var("validate_passes")
    if isinstance(passes, bool) or not re.match(r"^\s*[0-9]+\s*$", str(passes)) or int(passes) < 1:
        raise SettingsError("%svalidate_passes: %r is not allowed; use a whole number, at least 1" % (VARIABLE_PREFIX, passes))
    cap = var("max_quarantined")
    if not _empty(cap) and (isinstance(cap, bool) or not re.match(r"^\s*[0-9]+\s*$", str(cap))):
        raise SettingsError("%smax_quarantined: %r is not allowed; use a whole number, 0 or more (how many nodes whose drain is "
                            "skipped the rollout goes on past), or leave it empty for no cap" % (VARIABLE_PREFIX, cap))
    defaults = {"max_unavailable": _count(var("max_unavailable"), VARIABLE_PREFIX + "max_unavailable", False),
                # None: the default surge (the modules' max_surge unset)
                "max_surge": None if _empty(var("max_surge")) else _count(var("max_surge"), VARIABLE_PREFIX + "max_surge", True),
                "strategy": var("strategy"),
                # seconds, or None: no rotation by age
                "max_node_age": check_node_age(var("max_node_age"), VARIABLE_PREFIX + "max_node_age")}
    try:
        # the role's strategy and surge say the same (its groups may each say otherwise)
        strategy_surge(var("strategy"), defaults["max_surge"], VARIABLE_PREFIX + "max_surge", VARIABLE_PREFIX + "strategy")
    except PlanError as exc:
        raise SettingsError(str(exc)) from None
    _check_connection(var("aws"), VARIABLE_PREFIX + "aws", AWS_OPTIONS)
    _check_aws_retries(var("aws"), VARIABLE_PREFIX + "aws")
    _check_connection(var("k8s"), VARIABLE_PREFIX + "k8s", K8S_OPTIONS)
    node_groups = check_node_groups(var("node_groups"), VARIABLE_PREFIX + "node_groups", defaults)
    try:
        windows = parse_windows(var("window"), VARIABLE_PREFIX + "window")
        bake = parse_hold(0 if _empty(var("bake_time")) else var("bake_time"), VARIABLE_PREFIX + "bake_time")
        checkpoints = parse_checkpoints(var("checkpoints"), VARIABLE_PREFIX + "checkpoints")
    except PlanError as exc:
        raise SettingsError(str(exc)) from None
    alarms = check_alarm_names(var("abort_alarms"), VARIABLE_PREFIX + "abort_alarms")
    alerts = check_alert_gates(var("alertmanager_url"), var("alertmanager_auth"), var("abort_alerts"), var("pause_alerts"),
                               PAUSE_ALERTS_TIMEOUT if seconds["pause_alerts_timeout"] is None else seconds["pause_alerts_timeout"],
                               not _empty(var("alertmanager_token")))
    blocking = check_blocking_pods(var("blocking_pods"), VARIABLE_PREFIX + "blocking_pods")
    hooks = check_hooks(var("hooks"), VARIABLE_PREFIX + "hooks", base_dir)
    # Short, and kept alive while the run lives: the role renews it between tasks, and every module that waits renews it
    # from its own process (lock_keeper), so no wait outlasts it, whatever it waits for; a run that dies stops renewing,
    # and its lock frees itself within this duration.
    lock = lease_lock.DEFAULT_SECONDS if seconds["lock_duration"] is None else seconds["lock_duration"]
    # a renewal by the role is skipped while the Lease holds for half of it (rollout_lock's min_valid_for): the modules
    # that wait renew it as soon as less is left, and the role's tasks between two of them take seconds
    lock_min_valid = lock - lock // 2
    # what the plan's estimated duration assumes (rollout.plan.estimate_duration): the operator's own waits, and the
    # boot and drain times they expect (the post-drain delay is settled for each group by node_group_info, which reads
    # its load balancers)
    estimate = {"boot_seconds": seconds["estimate_boot"], "drain_seconds": seconds["estimate_drain"],
                "validate_seconds": (int(passes) - 1) * seconds["validate_interval"], "task_seconds": seconds["estimate_task"]}
    # unset, a step's post-drain delay is none unless a load balancer cannot be read: a window counts the longer one
    delay = BLIND_DELAY_SECONDS if seconds["post_drain_delay"] is None else seconds["post_drain_delay"]
    # in the modules' own forms: the windows as their canonical texts, the checkpoints' waits in seconds
    rollout = rollout_controls(bake, checkpoints, alarms, windows, True, blocking, alerts)
    plan_only = bool(check_mode) or flags.get("plan", False)
    return {"plan_only": plan_only,
            "seconds": seconds, "lock_duration": lock, "lock_min_valid": lock_min_valid, "node_groups": node_groups, "validate_passes": int(passes),
            # None: no cap on the nodes a drain skipped (rolling_update_drain_timeout_action skip)
            "max_quarantined": None if _empty(cap) else int(cap),
            "estimate": estimate, "report_file": report, "report_html": report_html_file(report), "report_sections": sections,
            # what write_result.yml writes and reads, each a plain flag or list
            "write_report": bool(report), "report_section_urls": [section for section in sections if "url" in section],
            "report_section_files": [section for section in sections if "file" in section],
            "on_failure": var("on_failure"),
            # the OpenMetrics file of the run ("" for none), written with the result (report.metrics)
            "metrics_file": metrics, "write_metrics": bool(metrics),
            # the Pushgateway the run's metrics are pushed to ("" for none), its grouping key the job and the cluster; a plan
            # pushes nothing, as its metrics would replace those of the last run
            "pushgateway_url": pushgateway, "push_metrics": bool(pushgateway) and not plan_only,
            "windows": rollout["windows"], "bake_seconds": bake, "checkpoints": rollout["checkpoints"],
            "abort_alarms": alarms, "hooks": hooks,
            # what a maintenance window must still hold to start a step: its drain, post-drain delay, replacements, validation
            "step_seconds": plan_step_seconds(post_drain_delay=delay, **estimate),
            "controls": rollout if action == "rollout" else rollout_controls()}


def resolved_settings(settings, reads):
    """``settings`` (:func:`check_role_settings`) with each node group's ``max_unavailable`` resolved, once, as the
    count node_group_info worked out against the group's base size when the read-only pre-pass read it (its plan's
    ``batch_size``, :func:`rollout.sizes.max_unavailable_count`): every later module of the run, and the serial
    playbook's batches, are given that integer. ``reads``: node_group_info's results, one per node group (a group not
    read keeps its setting: the run stops on it first)."""
    counts = {}
    for read in reads or ():
        for group in (read or {}).get("node_groups") or ():
            batch_size = (group.get("plan") or {}).get("batch_size")
            if batch_size is not None:
                counts[group["name"]] = batch_size
    groups = [dict(group, max_unavailable=counts[group["name"]]) if group["name"] in counts else dict(group)
              for group in settings.get("node_groups") or ()]
    return dict(settings, node_groups=groups)


def rollout_controls(bake=0, checkpoints=(), alarms=(), windows=(), respect_pause=False, blocking_pods=(), alerts=None):
    """What rollout_step asks before every step (none of it for a rollback or a cancel). ``alerts``: the alert gates
    (:func:`check_alert_gates`), or None."""
    return {"bake_seconds": bake, "checkpoints": [{"percent": item["percent"], "wait": item["wait_seconds"]} for item in checkpoints],
            "abort_alarms": list(alarms), "windows": [window["text"] for window in windows], "respect_pause": respect_pause,
            "blocking_pods": list(blocking_pods), "alerts": alerts}


# how long a pause alert may hold a step when rolling_update_pause_alerts_timeout is not given (the role's default)
PAUSE_ALERTS_TIMEOUT = 1800
# one matcher of Alertmanager's filter: a label name (or a quoted one), an operator, a value quoted or bare
_MATCHER = re.compile(r'^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)+")\s*(?P<op>=~|!~|!=|=)\s*'
                      r'(?P<value>"(?:[^"\\]|\\.)*"|[^\s"{},=~!]*)\s*$')


def check_alert_matchers(value, field):
    """A gate's Alertmanager matchers (the ``filter`` of its API v2: ``severity="critical"``, ``alertname=~"KubePod.*"``,
    ``team!=db``), all of which an alert matches to count: a list, or one text of matchers separated by commas (an AWX
    survey's answer). Regular expressions must compile. SettingsError naming ``field`` and the item otherwise."""
    if _empty(value):
        return []
    items = _MATCHER_SPLIT.split(value.strip().strip("{}")) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise SettingsError("%s: %r is not allowed; use a list of Alertmanager matchers such as severity=\"critical\"" % (field, value))
    matchers = []
    for index, item in enumerate(items):
        match = _MATCHER.match(item) if isinstance(item, str) else None
        if match is None:
            raise SettingsError("%s[%d]: %r is not a matcher; use name=\"value\", name!=\"value\", name=~\"regex\" or "
                                "name!~\"regex\" (Alertmanager's filter syntax), such as severity=\"critical\"" % (field, index, item))
        if match.group("op") in ("=~", "!~"):
            pattern = match.group("value")
            pattern = pattern[1:-1] if pattern.startswith('"') else pattern
            try:
                re.compile(pattern)
            except re.error as exc:
                raise SettingsError("%s[%d]: %r: the regular expression does not compile (%s)" % (field, index, item, exc)) from None
        matchers.append(item.strip())
    return matchers


def _http_url(value):
    """``value`` as an http(s) URL with a host, without a trailing slash; "" when it is none."""
    text = value.strip().rstrip("/") if isinstance(value, str) else ""
    parsed = urllib.parse.urlparse(text)
    return text if parsed.scheme in ("http", "https") and parsed.netloc else ""


def check_alerts_option(value, token=None):
    """A module's ``alerts`` option (:func:`check_alert_gates`'s record, or None) checked as the role's variables are,
    with ``token`` (the module's ``alertmanager_token``) added for ``auth: bearer``; raises PlanError naming the field."""
    if not value:
        return None
    if not isinstance(value, dict):
        raise PlanError("alerts: %r is not allowed; use a dict with url, auth, abort, pause and pause_timeout" % (value,))
    auth = value.get("auth") or "none"
    if auth not in ALERTMANAGER_AUTH:
        raise PlanError("alerts.auth: %r is not allowed; use one of %s" % (auth, ", ".join(ALERTMANAGER_AUTH)))
    try:
        abort = check_alert_matchers(value.get("abort"), "alerts.abort")
        pause = check_alert_matchers(value.get("pause"), "alerts.pause")
    except SettingsError as exc:
        raise PlanError(str(exc)) from None
    url = _http_url(value.get("url"))
    if (abort or pause) and not url:
        raise PlanError("alerts.url: %r is not allowed; use the URL of an Alertmanager, http:// or https://" % (value.get("url"),))
    if auth == "bearer" and not token:
        raise PlanError("alertmanager_token: is empty; alerts.auth bearer sends it")
    timeout = parse_duration(value.get("pause_timeout") or 0, "alerts.pause_timeout")
    if not abort and not pause:
        return None
    return {"url": url, "auth": auth, "token": token, "abort": abort, "pause": pause, "pause_timeout": timeout}


# commas that separate matchers (not those inside a quoted value)
_MATCHER_SPLIT = re.compile(r',(?=(?:[^"]*"[^"]*")*[^"]*$)')


def check_alert_gates(url, auth, abort, pause, pause_timeout, has_token):
    """The alert gates (``rolling_update_abort_alerts`` / ``pause_alerts`` against ``rolling_update_alertmanager_url``):
    ``{"url", "auth", "abort": [matchers], "pause": [matchers], "pause_timeout"}``, or None without gates. The token of
    ``auth: bearer`` is never part of it (a secret stays in its variable; ``has_token`` says whether it is set)."""
    abort = check_alert_matchers(abort, VARIABLE_PREFIX + "abort_alerts")
    pause = check_alert_matchers(pause, VARIABLE_PREFIX + "pause_alerts")
    if not abort and not pause:
        return None
    auth = "none" if _empty(auth) else auth
    if auth not in ALERTMANAGER_AUTH:
        raise SettingsError("%salertmanager_auth: %r is not allowed; use one of %s" % (VARIABLE_PREFIX, auth, ", ".join(ALERTMANAGER_AUTH)))
    text = _http_url(url)
    if not text:
        raise SettingsError("%salertmanager_url: %r is not allowed; the alert gates need the URL of an Alertmanager, http:// or "
                            "https:// (for Amazon Managed Service for Prometheus, the workspace's URL ending in /alertmanager, "
                            "with rolling_update_alertmanager_auth sigv4)" % (VARIABLE_PREFIX, url))
    if auth == "bearer" and not has_token:
        raise SettingsError("%salertmanager_token: is empty; rolling_update_alertmanager_auth bearer sends it" % VARIABLE_PREFIX)
    return {"url": text, "auth": auth, "abort": abort, "pause": pause, "pause_timeout": pause_timeout}


_SELECTOR_ONE = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_SELECTOR_VALUE = r"(?:%s)?" % _SELECTOR_ONE
_SELECTOR_KEY = r"(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
# a set's values are never empty (the API server refuses "in ()")
_SELECTOR_TERM = re.compile(r"^\s*(?:!\s*%(key)s|%(key)s\s*(?:(?:==|=|!=)\s*%(value)s|\s(?:in|notin)\s*\(\s*%(one)s(?:\s*,\s*%(one)s)*\s*\))?)\s*$"
                            % {"key": _SELECTOR_KEY, "value": _SELECTOR_VALUE, "one": _SELECTOR_ONE})


def check_label_selector(value, field):
    """A Kubernetes label selector (``app=backup``, ``tier!=web``, ``job-name``, ``!canary``, ``env in (prod,stage)``,
    terms joined by commas), as the API server's list of pods takes it; SettingsError naming ``field`` otherwise."""
    text = value.strip() if isinstance(value, str) else ""
    terms = re.split(r",(?![^()]*\))", text) if text else []
    if not terms or not all(_SELECTOR_TERM.match(term) for term in terms):
        raise SettingsError("%s: %r is not allowed; use a label selector such as app=backup, 'job-name', "
                            "'tier!=web' or 'env in (prod,stage)', terms joined by commas" % (field, value))
    return ",".join(term.strip() for term in terms)


def check_blocking_pods(value, field):
    """``rolling_update_blocking_pods``: while a pod that one of them selects runs, no step starts. Each a label selector
    over the whole cluster, or ``{"selector", "namespace"}``; returns ``[{"selector", "namespace" (None: every
    namespace)}]``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    items = [value] if isinstance(value, (str, dict)) else value
    if not isinstance(items, (list, tuple)):
        raise SettingsError("%s: %r is not allowed; use a list of label selectors (app=backup), each optionally a dict "
                            "with selector and namespace" % (field, value))
    checked = []
    for index, item in enumerate(items):
        where = "%s[%d]" % (field, index)
        if isinstance(item, dict):
            unknown = sorted(set(item) - {"selector", "namespace"})
            if unknown:
                raise SettingsError("%s: %s is not allowed; use selector and namespace" % (where, ", ".join(unknown)))
            namespace = item.get("namespace")
            if namespace is not None and (not isinstance(namespace, str) or not _DNS_LABEL_RE.match(namespace)):
                raise SettingsError("%s.namespace: %r is not allowed; use a namespace name (lowercase letters, digits and '-')"
                                    % (where, namespace))
            checked.append({"selector": check_label_selector(item.get("selector"), where + ".selector"), "namespace": namespace})
        else:
            checked.append({"selector": check_label_selector(item, where), "namespace": None})
    return checked


def check_metrics_file(value):
    """``rolling_update_metrics_file``: "" (none), or an absolute path (``~`` expanded) in a directory that exists, as the
    node_exporter textfile collector's (``--collector.textfile.directory``)."""
    field = VARIABLE_PREFIX + "metrics_file"
    if _empty(value):
        return ""
    path = os.path.expanduser(str(value).strip())
    if not os.path.isabs(path):
        raise SettingsError("%s: %r is not allowed; use an absolute path, such as the node_exporter textfile collector's "
                            "directory and a name ending in .prom" % (field, value))
    if not os.path.isdir(os.path.dirname(path)):
        raise SettingsError("%s: %r is not allowed; its directory %s does not exist (the run writes the file, not its directory)"
                            % (field, value, os.path.dirname(path)))
    return path


def check_pushgateway_url(value):
    """``rolling_update_pushgateway_url``: "" (none), or the http(s) URL of a Pushgateway, without a trailing slash."""
    if _empty(value):
        return ""
    text = _http_url(value)
    if not text or urllib.parse.urlparse(text).query or "/metrics" in urllib.parse.urlparse(text).path:
        raise SettingsError("%spushgateway_url: %r is not allowed; use the URL of a Pushgateway, http:// or https://, without "
                            "/metrics/job/... (the run pushes to <url>/metrics/job/nodeops_rollout/cluster/<cluster>)"
                            % (VARIABLE_PREFIX, value))
    return text


def report_html_file(report_file):
    """The HTML report's path beside the JSON result ``report_file``: ``result.json`` -> ``result.html``, ``result`` ->
    ``result.html``; "" when there is no report file."""
    if _empty(report_file):
        return ""
    root, ext = os.path.splitext(str(report_file))
    return (root if ext.lower() == ".json" else str(report_file)) + ".html"


def _check_report_sections(sections):
    """``rolling_update_report_sections``: a list of ``{"title", "url"}`` or ``{"title", "file"}`` (absolute path)."""
    field = VARIABLE_PREFIX + "report_sections"
    if _empty(sections):
        return []
    if not isinstance(sections, list):
        raise SettingsError("%s: %r is not allowed; use a list of sections, each with a title and a url or a file" % (field, sections))
    checked = []
    for index, section in enumerate(sections):
        where = "%s[%d]" % (field, index)
        if not isinstance(section, dict) or _empty(section.get("title")) or not isinstance(section.get("title"), str):
            raise SettingsError("%s: %r is not allowed; use a dict with a title and a url or a file" % (where, section))
        unknown = sorted(set(section) - {"title", "url", "file"})
        if unknown:
            raise SettingsError("%s: %s is not allowed; use title with url or file" % (where, ", ".join(unknown)))
        sources = [key for key in ("url", "file") if not _empty(section.get(key))]
        if len(sources) != 1:
            raise SettingsError("%s: %r is not allowed; give exactly one of url (http or https) and file" % (where, section))
        source = str(section[sources[0]])
        if sources[0] == "url" and not re.match(r"^https?://", source):
            raise SettingsError("%s.url: %r is not allowed; use an http:// or https:// URL" % (where, source))
        if sources[0] == "file" and not os.path.isabs(source):
            raise SettingsError("%s.file: %r is not allowed; use an absolute path" % (where, source))
        checked.append({"title": section["title"], sources[0]: source})
    return checked


def role_error(message, index, group):
    """A module's error in the read-only pre-pass of node group ``index`` (named ``group``), led by the role variable
    behind the module option it names ("image_id: AMI ... not found" -> "rolling_update_node_groups[0].image_id ...")."""
    option, sep, rest = str(message).partition(": ")
    field = "%snode_groups[%d]" % (VARIABLE_PREFIX, index)
    role_fields = {_MODULE_OPTION.get(target, target): target for target in GROUP_TARGETS}
    if sep and option == "abort_alarms":
        return "%sabort_alarms: %s" % (VARIABLE_PREFIX, rest)
    if sep and option in AWS_OPTIONS:
        return "%saws.%s: %s (while checking %s, %s)" % (VARIABLE_PREFIX, option, rest, field, group)
    if sep and option in K8S_OPTIONS:
        return "%sk8s.%s: %s (while checking %s, %s)" % (VARIABLE_PREFIX, option, rest, field, group)
    if sep and option in role_fields:
        return "%s.%s (%s): %s" % (field, role_fields[option], group, rest)
    if sep and option in ("name", "asg_name"):
        return "%s (%s): %s" % (field, group, rest)
    return "%s (%s): %s" % (field, group, message)


def group_checks(targets, groups, action="rollout", plan_only=False, queue=True, preflights=None):
    """What the read-only pre-pass found: ``targets`` and ``groups`` are the results of resolving each node group's
    target and of reading the group (one per node group of the run, in order; a group whose target failed is not read);
    ``preflights`` (a rollout's, not a plan's), node_drain's pre-flight of each group's outdated nodes, in the same order:
    a blocker no option of the run gets past (its ``would_stop``) stops the run before any change, as an error naming the
    pod, its budget and the role variables that would get past it.

    Returns ``{"error": the first error, led by the role variable behind it, or None; "group": the node group it is
    about; "permission": the permission refused to that read, or None; "queued": the outdated nodes of every group after
    the first (a rollout that changes the groups soft-taints them so that the pods of the first groups go to new nodes;
    not the serial playbook's, ``queue`` false, whose batches mix the groups); "taint_queued": whether there are any}``."""
    queued = []
    for index, (target, group) in enumerate(zip(targets, groups)):
        name = (target.get(target.get("ansible_loop_var") or "item") or {}).get("name")
        found = (group.get("node_groups") or [None])[0]
        if "target" not in target:
            message, refused = target.get("msg", "(no message)"), target.get("permission")
        elif found is None:
            message, refused = group.get("msg", "(no message)"), group.get("permission")
        elif found.get("mismatch") or found.get("refusals"):
            message, refused = "; ".join([found["mismatch"]] * bool(found.get("mismatch")) + list(found.get("refusals") or [])), None
        elif action == "rollout" and not plan_only and index < len(preflights or []) and \
                (preflights[index] or {}).get("would_stop"):
            message, refused = stop_message(preflights[index]["would_stop"], DRAIN_OPTION_VARIABLES), None
        else:
            if index > 0 and action == "rollout" and not plan_only and queue:
                queued.extend(node for node in found.get("outdated_nodes") or [] if node not in queued)
            continue
        return {"error": role_error(message, index, name), "group": name, "permission": refused, "queued": [], "taint_queued": False}
    return {"error": None, "group": None, "permission": None, "queued": queued, "taint_queued": bool(queued)}
