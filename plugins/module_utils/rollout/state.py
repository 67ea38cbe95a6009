# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout's resume state, kept in two tags on the Auto Scaling group, read and formatted in one place.

A rollout records on its group, before it changes anything, what it needs to finish or undo later. A group takes
at most 50 tags and a tag value at most 256 characters, so the state is a record of named fields in two tags, each
value a format version followed by ``key=value`` fields separated by spaces::

    nodeops.rollout/state     v2 id=r-20240501T120000Z-1a2b3c m=scale min=3 max=6 desired=4 surge=6 smax=12
                              lt=lt-0123456789abcdef0 ver=5 at=2024-05-01T12:00:00Z
    nodeops.rollout/progress  v2 owed=6 sp=AZRebalance

``state`` is what the rollout is (written when it starts), ``progress`` what it did to the group that is still to be
given back or finished: the surge it still owes, the scaling processes it suspended, the sizes a restore is setting.
:data:`FIELDS` lists every field (its name in the state dict, its tag and key, how it is read and written); a new
field is one more line there. Lists are joined with ``+`` and sizes with ``/``, so a value holds only letters,
digits, spaces and ``+ - = . _ : / @``, the characters every AWS service accepts in tags.

The previous release recorded the same fields one tag each (``nodeops.rollout/rollout-id``, ``.../surge-owed``, ...,
:data:`LEGACY_TAGS`). Such a rollout is read as it is, and the next write records it in the current format and
deletes the old tags in the same go (or, on a group without room for two more tags, keeps writing the old ones).

Instances detached for surge carry ``nodeops.rollout/detached=<rollout id>`` and
``nodeops.rollout/detached-from=<group name>`` as EC2 tags, so no run can lose track of them.

Pure: parsing and formatting. The tags are written by ``clients.aws.write_state`` and ``clear_state``.
"""

from __future__ import annotations

import re
from collections import namedtuple
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import METHODS
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import TAG_INSTANCE_DETACHED, TAG_INSTANCE_DETACHED_FROM, TAG_PREFIX, tags_to_dict

TAG_STATE = TAG_PREFIX + "state"
TAG_PROGRESS = TAG_PREFIX + "progress"
STATE_TAGS = (TAG_STATE, TAG_PROGRESS)
# An operator's request to pause the rollout (rollout.control), not part of its state: a rollout never writes it, but
# keeps room for it among the group's tags so that the operator can always set it.
TAG_PAUSE = TAG_PREFIX + "pause"

# The format this release writes; each tag value starts with it.
FORMAT = "v2"

# AWS: a resource takes at most 50 user tags (``aws:`` tags do not count), each value at most 256 characters.
MAX_TAGS = 50
MAX_VALUE_LENGTH = 256
AWS_TAG_PREFIX = "aws:"

# EC2 tags on instances detached for surge.
DETACHED_TAGS = (TAG_INSTANCE_DETACHED, TAG_INSTANCE_DETACHED_FROM)

_INT_RE = re.compile(r"^[0-9]+$")
_ROLLOUT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_TEMPLATE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_INSTANCE_ID_RE = re.compile(r"^i-[0-9a-zA-Z]{1,17}$")
_PROCESS_RE = re.compile(r"^[A-Za-z]+$")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_SIZE_KEYS = ("min_size", "max_size", "desired_capacity")


class StateError(RolloutError, ValueError):
    """The group's nodeops.rollout/* tags cannot be read; the message names the group, the tag and its value."""


class _Unreadable(ValueError):
    """A field's text is not what its kind reads; the message says what was expected."""


# ---------------------------------------------------------------------------------------------------------
# Field kinds: how a value is read from and written to text
# ---------------------------------------------------------------------------------------------------------

def _read_int(text):
    if not _INT_RE.match(text):
        raise _Unreadable("not a whole number")
    return int(text)


def _read_rollout_id(text):
    if not valid_rollout_id(text):
        raise _Unreadable("not a rollout id (letters, digits, '.', '_', ':' or '-')")
    return text


def _read_method(text):
    if text not in METHODS:
        raise _Unreadable("not one of %s" % ", ".join(METHODS))
    return text


def _read_instance_id(text):
    if not _INSTANCE_ID_RE.match(text):
        raise _Unreadable("not an EC2 instance id")
    return text


def _read_template(text):
    if not _TEMPLATE_ID_RE.match(text):
        raise _Unreadable("not a launch template id")
    return text


def _read_time(text):
    try:
        datetime.strptime(text, _TIME_FORMAT)
    except ValueError:
        raise _Unreadable("not a UTC time such as 2024-05-01T12:00:00Z") from None
    return text


def _processes_kind(separator):
    def read(text):
        names = [name.strip() for name in text.split(separator) if name.strip()]
        if not all(_PROCESS_RE.match(name) for name in names):
            raise _Unreadable("not a %s-separated list of scaling process names" % ("comma" if separator == "," else "'%s'" % separator))
        return names

    return read, lambda names: separator.join(names or [])


def _sizes_kind(separator):
    def read(text):
        sizes = parse_sizes(text, separator)
        if sizes is None:
            raise _Unreadable("not 'min%smax%sdesired' whole numbers" % (separator, separator))
        return sizes

    return read, lambda sizes: separator.join(str(sizes[key]) for key in _SIZE_KEYS)


_Kind = namedtuple("_Kind", "read write")
INT = _Kind(_read_int, str)
ROLLOUT_ID = _Kind(_read_rollout_id, str)
METHOD = _Kind(_read_method, str)
TEMPLATE = _Kind(_read_template, str)
INSTANCE_ID = _Kind(_read_instance_id, str)
TIME = _Kind(_read_time, str)
PROCESSES = _Kind(*_processes_kind("+"))
SIZES = _Kind(*_sizes_kind("/"))

# One line per field: its name in the state dict, the tag and the key it is written under, its kind, whether every
# recorded rollout has it (an optional field is None when absent), and its tag in the previous release's format (None:
# a field that format did not have).
_Field = namedtuple("_Field", "name tag key kind required legacy_tag")
FIELDS = (
    _Field("rollout_id", TAG_STATE, "id", ROLLOUT_ID, True, "rollout-id"),
    _Field("method", TAG_STATE, "m", METHOD, True, "method"),
    _Field("original_min_size", TAG_STATE, "min", INT, True, "original-min"),
    _Field("original_max_size", TAG_STATE, "max", INT, True, "original-max"),
    _Field("original_desired_capacity", TAG_STATE, "desired", INT, True, "original-desired"),
    _Field("surge", TAG_STATE, "surge", INT, True, "surge"),
    _Field("surged_max_size", TAG_STATE, "smax", INT, False, "surged-max"),
    _Field("target_launch_template", TAG_STATE, "lt", TEMPLATE, False, "target-launch-template"),
    _Field("target_version", TAG_STATE, "ver", INT, False, "target-version"),
    # the version of that launch template the group launched before: a rollback goes back to it
    _Field("previous_version", TAG_STATE, "prev", INT, False, "previous-version"),
    _Field("started_at", TAG_STATE, "at", TIME, False, "started-at"),
    _Field("surge_owed", TAG_PROGRESS, "owed", INT, True, "surge-owed"),
    _Field("suspended_processes", TAG_PROGRESS, "sp", PROCESSES, False, "suspended-processes"),
    _Field("restore_sizes", TAG_PROGRESS, "restore", SIZES, False, "restore-sizes"),
    # written just before a termination that decrements desired: once that instance has left the group, ``owed`` is one
    # less (rollout.sizes.surge_owed_now), so neither a run killed before its next write nor another actor's scale-in
    # is miscounted
    _Field("paying", TAG_PROGRESS, "paying", INSTANCE_ID, False, None),
)
# A recorded field that is absent reads as this (required fields are never absent).
_ABSENT = {"suspended_processes": []}

# The previous release's tags (one per field), read and, on a group without room for the current ones, written.
LEGACY_TAGS = tuple(TAG_PREFIX + field.legacy_tag for field in FIELDS if field.legacy_tag)
_LEGACY_ID = TAG_PREFIX + "rollout-id"
_LEGACY_KINDS = {"suspended_processes": _Kind(*_processes_kind(",")), "restore_sizes": _Kind(*_sizes_kind(","))}


# ---------------------------------------------------------------------------------------------------------
# Small readers shared with the modules
# ---------------------------------------------------------------------------------------------------------

def valid_rollout_id(value):
    """Whether ``value`` can be a rollout id: 1-64 letters, digits, ``.``, ``_``, ``:`` or ``-``, not starting with a symbol."""
    return isinstance(value, str) and bool(_ROLLOUT_ID_RE.match(value))


def new_rollout_id(now, suffix):
    """A rollout id from the start time and a short random suffix: ``r-20240501T120000Z-1a2b3c``."""
    return "r-%s-%s" % (now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ"), suffix)


def format_time(moment):
    """A datetime as the ``started_at`` field records it (UTC, seconds)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime(_TIME_FORMAT)


def parse_sizes(value, separator="/"):
    """``"6/9/7"`` -> ``{"min_size": 6, "max_size": 9, "desired_capacity": 7}``; anything else -> None."""
    parts = [part.strip() for part in str(value or "").split(separator)]
    if len(parts) != 3 or not all(_INT_RE.match(part) for part in parts):
        return None
    return dict(zip(_SIZE_KEYS, (int(part) for part in parts)))


def user_tag_count(tags):
    """How many of ``tags`` (``{key: value}``) count toward AWS's limit of 50 (``aws:`` tags do not)."""
    return sum(1 for key in tags or {} if not key.startswith(AWS_TAG_PREFIX))


# ---------------------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------------------

def _bad(group_name, where, value, expected):
    return StateError(
        "Auto Scaling group '%s': %s is %r, %s; correct it or delete the %s* tags and restore the group's sizes by hand"
        % (group_name, where, value, expected, TAG_PREFIX))


def _incomplete(group_name, where):
    return StateError(
        "Auto Scaling group '%s': %s is missing although a rollout is recorded; the recorded rollout is incomplete: "
        "delete the %s* tags and restore the group's sizes by hand" % (group_name, where, TAG_PREFIX))


def _fields_of(value, tag, group_name):
    """``"v2 a=1 b=2"`` -> ``{"a": "1", "b": "2"}``; a value of another format is refused, naming it."""
    words = str(value).split(" ")
    if not words or words[0] != FORMAT:
        version = words[0] if words and re.match(r"^v[0-9]+$", words[0]) else None
        expected = ("format %s, written by another release of nodeops.rollout; this one reads %s: finish the rollout with "
                    "that release" % (version, FORMAT)) if version else "not a %s record ('%s key=value ...')" % (FORMAT, FORMAT)
        raise _bad(group_name, "tag %s" % tag, value, expected)
    fields = {}
    for word in words[1:]:
        key, equals, text = word.partition("=")
        if not equals or not key or key in fields:
            raise _bad(group_name, "tag %s" % tag, value, "not a %s record: %r is not one key=value field" % (FORMAT, word))
        fields[key] = text
    return fields


def _read_fields(texts, group_name, legacy):
    """The state dict from ``texts`` (field name -> its text, as found) with every field checked by its kind."""
    state = {}
    for field in FIELDS:
        text = texts.get(field.name)
        where = ("tag " + TAG_PREFIX + (field.legacy_tag or field.key)) if legacy else "field %s of tag %s" % (field.key, field.tag)
        if text is None:
            if field.required:
                raise _incomplete(group_name, where)
            state[field.name] = list(_ABSENT[field.name]) if field.name in _ABSENT else None
            continue
        kind = _LEGACY_KINDS.get(field.name, field.kind) if legacy else field.kind
        try:
            state[field.name] = kind.read(text.strip() if legacy else text)
        except _Unreadable as exc:
            raise _bad(group_name, where, text, str(exc)) from None
    return state


def _parse_current(tags, group_name):
    texts = {}
    for tag in STATE_TAGS:
        if tag not in tags:
            raise _incomplete(group_name, "tag %s" % tag)
        fields = _fields_of(tags[tag], tag, group_name)
        known = {field.key: field.name for field in FIELDS if field.tag == tag}
        for key, text in fields.items():
            if key not in known:
                raise _bad(group_name, "tag %s" % tag, tags[tag], "its field %r is not one this release knows (%s)" % (key, ", ".join(known)))
            texts[known[key]] = text
    return _read_fields(texts, group_name, legacy=False)


def _parse_legacy(tags, group_name):
    texts = {}
    for field in FIELDS:
        value = tags.get(TAG_PREFIX + field.legacy_tag) if field.legacy_tag else None
        if value is not None and (value != "" or field.kind is PROCESSES):
            texts[field.name] = value
    if "method" not in texts:
        texts["method"] = "scale"  # the previous release wrote it since its first version; older runs were all "scale"
    return _read_fields(texts, group_name, legacy=True)


def parse_state(tags, group_name):
    """The rollout recorded in a group's tags (a dict as :func:`tags_to_dict` returns), or None.

    Returns a dict with one key per field of :data:`FIELDS` (``rollout_id``, ``method``, ``original_min_size``,
    ``original_max_size``, ``original_desired_capacity``, ``surge``, ``surged_max_size``, ``target_launch_template``,
    ``target_version``, ``previous_version``, ``started_at``, ``surge_owed``, ``suspended_processes``,
    ``restore_sizes``, ``paying``). Reads the current
    format, else the previous release's tags. Raises :class:`StateError` naming the tag when a recorded value cannot
    be read, so no module acts on a state it does not understand.
    """
    tags = tags or {}
    if TAG_STATE in tags or TAG_PROGRESS in tags:
        state = _parse_current(tags, group_name)
    elif _LEGACY_ID in tags:
        state = _parse_legacy(tags, group_name)
    else:
        return None
    if state["original_min_size"] > state["original_max_size"]:
        raise StateError("Auto Scaling group '%s': the recorded original minimum size %d is above the original maximum size %d; "
                         "delete the %s* tags and restore the group's sizes by hand"
                         % (group_name, state["original_min_size"], state["original_max_size"], TAG_PREFIX))
    return state


def group_state(group):
    """The rollout recorded on a group as DescribeAutoScalingGroups returns it (see :func:`parse_state`)."""
    return parse_state(tags_to_dict(group.get("Tags")), group.get("AutoScalingGroupName"))


def recorded_tags(tags):
    """The state tags present in a group's tags (``{key: value}``), in either format: for diffs and for clearing."""
    return {key: value for key, value in (tags or {}).items() if key in STATE_TAGS or key in LEGACY_TAGS}


# ---------------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------------

def state_tags(state):
    """The two tag values (``{tag: text}``) that record ``state`` (a dict shaped as :func:`parse_state` returns).

    Raises :class:`StateError` when a value would not fit AWS's 256 characters, before anything is written."""
    words = {tag: [FORMAT] for tag in STATE_TAGS}
    for field in FIELDS:
        value = state.get(field.name)
        if value is None or (field.kind is PROCESSES and not value):
            if field.required:
                raise StateError("the rollout state has no %s; a recorded rollout always has one" % field.name)
            continue
        text = field.kind.write(value)
        try:
            field.kind.read(text)
        except _Unreadable as exc:
            raise StateError("the rollout state's %s is %r, %s" % (field.name, value, exc)) from None
        words[field.tag].append("%s=%s" % (field.key, text))
    tags = {tag: " ".join(words[tag]) for tag in STATE_TAGS}
    for tag, text in tags.items():
        if len(text) > MAX_VALUE_LENGTH:
            raise StateError("tag %s would take %d characters, more than the %d AWS allows in a tag value: %s"
                             % (tag, len(text), MAX_VALUE_LENGTH, text))
    return tags


def _legacy_tags(state):
    tags = {}
    for field in FIELDS:
        value = state.get(field.name)
        if value is None or not field.legacy_tag:
            continue
        kind = _LEGACY_KINDS.get(field.name, field.kind)
        tags[TAG_PREFIX + field.legacy_tag] = kind.write(value)
    return tags


def state_writes(state, tags):
    """How to record ``state`` on a group whose tags are ``tags`` (``{key: value}``): ``(write, delete)``, the tags to
    create or overwrite and then the tags to delete.

    The current format, and the previous release's tags deleted once the current ones are written. A group that has
    the previous release's tags and no room for two more keeps them (rewritten in that format): a rollout is never
    left without its state."""
    write = state_tags(state)
    legacy = sorted(key for key in tags or {} if key in LEGACY_TAGS)
    if not legacy:
        return write, []
    if user_tag_count(dict(tags, **write)) <= MAX_TAGS:
        return write, legacy
    return _legacy_tags(state), []


def after_writes(tags, write, delete):
    """The group's tags once ``write`` and ``delete`` (:func:`state_writes`) are applied."""
    after = {key: value for key, value in (tags or {}).items() if key not in delete}
    after.update(write)
    return after


def tag_room_refusal(tags, group_name):
    """Why a rollout cannot record its state on a group whose tags are ``tags`` (text), or None when it can.

    The state takes the two tags :data:`STATE_TAGS`, and the operator's pause request :data:`TAG_PAUSE` must still fit;
    a group takes at most :data:`MAX_TAGS` tags."""
    present = user_tag_count({key: value for key, value in (tags or {}).items() if key not in STATE_TAGS and key not in LEGACY_TAGS})
    wanted = len(STATE_TAGS) + (0 if TAG_PAUSE in (tags or {}) else 1)
    if present + wanted <= MAX_TAGS:
        return None
    return ("Auto Scaling group '%s' has %d tags; a rollout records its state in %d more (%s), keeps room for a pause request "
            "(%s), and a group takes at most %d: remove %d of its tags and run again"
            % (group_name, present, len(STATE_TAGS), ", ".join(STATE_TAGS), TAG_PAUSE, MAX_TAGS, present + wanted - MAX_TAGS))


def detach_room_refusal(instance_id, tags):
    """Why instance ``instance_id`` (EC2 tags ``tags``) cannot take the two tags of an instance detached for surge, or None."""
    present = user_tag_count({key: value for key, value in (tags or {}).items() if key not in DETACHED_TAGS})
    if present + len(DETACHED_TAGS) <= MAX_TAGS:
        return None
    return ("instance %s has %d tags; detaching it for surge tags it with %d more (%s) and an instance takes at most %d: "
            "remove %d of its tags, or use the surge method scale" % (instance_id, present, len(DETACHED_TAGS),
                                                                      ", ".join(DETACHED_TAGS), MAX_TAGS,
                                                                      present + len(DETACHED_TAGS) - MAX_TAGS))
