# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout's resume state, kept as tags on the Auto Scaling group, read and written in one place.

A rollout records on its group, before it changes anything, what it needs to finish or undo later:

=====================================  ==============================================================
tag (prefix ``nodeops.rollout/``)      value
=====================================  ==============================================================
``rollout-id``                         the rollout's id; its presence means "a rollout is recorded"
``method``                             ``scale`` (raise max and desired) or ``detach`` (kops' surge)
``original-min`` / ``-max`` /          the group's sizes before the rollout, integers
``-desired``
``surge``                              extra instances the rollout asked for, integer
``surge-owed``                         how much of desired is still ours to pay back, integer; every
                                       terminate that decrements desired lowers it
``surged-max``                         the maximum size the surge set (tells a rerun the sizes were applied)
``target-launch-template`` /           the launch template id and explicit version being rolled to
``target-version``
``suspended-processes``                the scaling processes this rollout suspended (comma separated, may
                                       be empty); only these are resumed
``started-at``                         UTC time the rollout started, ``2024-05-01T12:00:00Z``
``restore-sizes``                      written by a restore in progress: ``min,max,desired`` it sets
=====================================  ==============================================================

Instances detached for surge carry ``nodeops.rollout/detached=<rollout id>`` and
``nodeops.rollout/detached-from=<group name>`` as EC2 tags, so no run can lose track of them.

Pure: parsing and formatting. The tags are written by ``clients.aws.write_state`` and ``clear_state``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import TAG_DETACHED

TAG_PREFIX = "nodeops.rollout/"

TAG_ROLLOUT_ID = TAG_PREFIX + "rollout-id"
TAG_METHOD = TAG_PREFIX + "method"
TAG_ORIGINAL_MIN = TAG_PREFIX + "original-min"
TAG_ORIGINAL_MAX = TAG_PREFIX + "original-max"
TAG_ORIGINAL_DESIRED = TAG_PREFIX + "original-desired"
TAG_SURGE = TAG_PREFIX + "surge"
TAG_SURGE_OWED = TAG_PREFIX + "surge-owed"
TAG_SURGED_MAX = TAG_PREFIX + "surged-max"
TAG_TARGET_LAUNCH_TEMPLATE = TAG_PREFIX + "target-launch-template"
TAG_TARGET_VERSION = TAG_PREFIX + "target-version"
TAG_SUSPENDED_PROCESSES = TAG_PREFIX + "suspended-processes"
TAG_STARTED_AT = TAG_PREFIX + "started-at"
TAG_RESTORE_SIZES = TAG_PREFIX + "restore-sizes"

# EC2 tags on instances detached for surge.
TAG_INSTANCE_DETACHED = TAG_DETACHED
TAG_INSTANCE_DETACHED_FROM = TAG_PREFIX + "detached-from"

METHODS = ("scale", "detach")

# Every group tag a rollout may write, in the order they are documented.
STATE_TAGS = (
    TAG_ROLLOUT_ID, TAG_METHOD, TAG_ORIGINAL_MIN, TAG_ORIGINAL_MAX, TAG_ORIGINAL_DESIRED, TAG_SURGE,
    TAG_SURGE_OWED, TAG_SURGED_MAX, TAG_TARGET_LAUNCH_TEMPLATE, TAG_TARGET_VERSION, TAG_SUSPENDED_PROCESSES,
    TAG_STARTED_AT, TAG_RESTORE_SIZES,
)

_REQUIRED_INTS = (
    (TAG_ORIGINAL_MIN, "original_min_size"),
    (TAG_ORIGINAL_MAX, "original_max_size"),
    (TAG_ORIGINAL_DESIRED, "original_desired_capacity"),
    (TAG_SURGE, "surge"),
    (TAG_SURGE_OWED, "surge_owed"),
)

_INT_RE = re.compile(r"^[0-9]+$")
_ROLLOUT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_PROCESS_RE = re.compile(r"^[A-Za-z]+$")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class StateError(RolloutError, ValueError):
    """The group's nodeops.rollout/* tags cannot be read; the message names the group, the tag and its value."""


def tags_to_dict(tags):
    """``[{"Key": k, "Value": v}, ...]`` (as Auto Scaling and EC2 return tags) -> ``{k: v}``."""
    return {tag["Key"]: tag.get("Value", "") for tag in tags or [] if "Key" in tag}


def valid_rollout_id(value):
    """Whether ``value`` can be a rollout id: 1-64 letters, digits, ``.``, ``_``, ``:`` or ``-``, not starting with a symbol."""
    return isinstance(value, str) and bool(_ROLLOUT_ID_RE.match(value))


def new_rollout_id(now, suffix):
    """A rollout id from the start time and a short random suffix: ``r-20240501T120000Z-1a2b3c``."""
    return "r-%s-%s" % (now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ"), suffix)


def format_time(moment):
    """A datetime as the ``started-at`` tag writes it (UTC, seconds)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime(_TIME_FORMAT)


def _bad(group_name, tag, value, expected):
    return StateError(
        "Auto Scaling group '%s': tag %s is %r, %s; correct it or delete the %s* tags and restore the group's sizes by hand"
        % (group_name, tag, value, expected, TAG_PREFIX))


def _int_tag(tags, tag, group_name, required=True):
    value = tags.get(tag)
    if value is None:
        if required:
            raise StateError(
                "Auto Scaling group '%s': tag %s is missing although %s is set; the recorded rollout is incomplete: "
                "delete the %s* tags and restore the group's sizes by hand" % (group_name, tag, TAG_ROLLOUT_ID, TAG_PREFIX))
        return None
    text = str(value).strip()
    if not _INT_RE.match(text):
        raise _bad(group_name, tag, value, "not a whole number")
    return int(text)


def parse_processes(value):
    """``"AZRebalance,Launch"`` -> ``["AZRebalance", "Launch"]``; empty text -> ``[]``."""
    return [name.strip() for name in str(value or "").split(",") if name.strip()]


def format_processes(names):
    return ",".join(names or [])


def parse_sizes(value):
    """``"6,9,7"`` -> ``{"min_size": 6, "max_size": 9, "desired_capacity": 7}``; anything else -> None."""
    parts = [part.strip() for part in str(value or "").split(",")]
    if len(parts) != 3 or not all(_INT_RE.match(part) for part in parts):
        return None
    low, high, desired = (int(part) for part in parts)
    return {"min_size": low, "max_size": high, "desired_capacity": desired}


def format_sizes(sizes):
    return "%d,%d,%d" % (sizes["min_size"], sizes["max_size"], sizes["desired_capacity"])


def parse_state(tags, group_name):
    """The rollout recorded in a group's tags (a dict as :func:`tags_to_dict` returns), or None.

    Returns ``{"rollout_id", "method", "original_min_size", "original_max_size", "original_desired_capacity",
    "surge", "surge_owed", "surged_max_size", "target_launch_template", "target_version",
    "suspended_processes", "started_at", "restore_sizes"}``. Raises :class:`StateError` naming the tag when a
    recorded value cannot be read, so no module acts on a state it does not understand.
    """
    tags = tags or {}
    rollout_id = tags.get(TAG_ROLLOUT_ID)
    if rollout_id is None:
        return None
    if not valid_rollout_id(rollout_id):
        raise _bad(group_name, TAG_ROLLOUT_ID, rollout_id, "not a rollout id (letters, digits, '.', '_', ':' or '-')")
    state = {"rollout_id": rollout_id}
    method = tags.get(TAG_METHOD, "scale")
    if method not in METHODS:
        raise _bad(group_name, TAG_METHOD, method, "not one of %s" % ", ".join(METHODS))
    state["method"] = method
    for tag, key in _REQUIRED_INTS:
        state[key] = _int_tag(tags, tag, group_name)
    if state["original_min_size"] > state["original_max_size"]:
        raise _bad(group_name, TAG_ORIGINAL_MIN, tags[TAG_ORIGINAL_MIN],
                   "above %s (%s)" % (TAG_ORIGINAL_MAX, tags[TAG_ORIGINAL_MAX]))
    state["surged_max_size"] = _int_tag(tags, TAG_SURGED_MAX, group_name, required=False)
    state["target_launch_template"] = tags.get(TAG_TARGET_LAUNCH_TEMPLATE) or None
    state["target_version"] = _int_tag(tags, TAG_TARGET_VERSION, group_name, required=False)
    processes = parse_processes(tags.get(TAG_SUSPENDED_PROCESSES))
    for name in processes:
        if not _PROCESS_RE.match(name):
            raise _bad(group_name, TAG_SUSPENDED_PROCESSES, tags[TAG_SUSPENDED_PROCESSES],
                       "not a comma-separated list of scaling process names")
    state["suspended_processes"] = processes
    started = tags.get(TAG_STARTED_AT)
    if started:
        try:
            datetime.strptime(started, _TIME_FORMAT)
        except ValueError:
            raise _bad(group_name, TAG_STARTED_AT, started, "not a UTC time such as 2024-05-01T12:00:00Z") from None
    state["started_at"] = started or None
    restore = tags.get(TAG_RESTORE_SIZES)
    state["restore_sizes"] = None
    if restore:
        state["restore_sizes"] = parse_sizes(restore)
        if state["restore_sizes"] is None:
            raise _bad(group_name, TAG_RESTORE_SIZES, restore, "not 'min,max,desired' whole numbers")
    return state


def group_state(group):
    """The rollout recorded on a group as DescribeAutoScalingGroups returns it (see :func:`parse_state`)."""
    return parse_state(tags_to_dict(group.get("Tags")), group.get("AutoScalingGroupName"))


def state_tags(state):
    """The tag values (strings) that record ``state`` (a dict shaped as :func:`parse_state` returns)."""
    tags = {
        TAG_ROLLOUT_ID: state["rollout_id"],
        TAG_METHOD: state.get("method") or "scale",
        TAG_ORIGINAL_MIN: str(state["original_min_size"]),
        TAG_ORIGINAL_MAX: str(state["original_max_size"]),
        TAG_ORIGINAL_DESIRED: str(state["original_desired_capacity"]),
        TAG_SURGE: str(state["surge"]),
        TAG_SURGE_OWED: str(state["surge_owed"]),
        TAG_SUSPENDED_PROCESSES: format_processes(state.get("suspended_processes")),
    }
    if state.get("surged_max_size") is not None:
        tags[TAG_SURGED_MAX] = str(state["surged_max_size"])
    if state.get("target_launch_template"):
        tags[TAG_TARGET_LAUNCH_TEMPLATE] = state["target_launch_template"]
    if state.get("target_version") is not None:
        tags[TAG_TARGET_VERSION] = str(state["target_version"])
    if state.get("started_at"):
        tags[TAG_STARTED_AT] = state["started_at"]
    if state.get("restore_sizes"):
        tags[TAG_RESTORE_SIZES] = format_sizes(state["restore_sizes"])
    return tags


def recorded_tags(tags):
    """The state tags present in a group's tags (``{key: value}``), for diffs and for clearing."""
    return {key: value for key, value in (tags or {}).items() if key in STATE_TAGS}
