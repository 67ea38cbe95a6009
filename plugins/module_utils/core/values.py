# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Reading what a user writes, once for the whole collection: counts as an integer or a percentage, durations, times.

Pure. Every bad value raises :class:`PlanError` with one message that names the field and the values allowed.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError


FALSE_WORDS = ("", "false", "0", "no", "off", "none", "null")


class PlanError(RolloutError, ValueError):
    """Bad input to a planning function; the message names the field and the values allowed."""


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def int_at_least(value, field, minimum):
    if not is_int(value) or value < minimum:
        raise PlanError("%s: %r is not allowed; use an integer >= %d" % (field, value, minimum))
    return value


def truthy(value):
    """Return whether an annotation or tag value means yes: anything but empty/false/0/no/off/none."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in FALSE_WORDS


# the words Ansible's strict boolean reads (any case), as the role's yes-or-no variables accept them
TRUE_WORDS = ("true", "yes", "on", "1", "y", "t")
STRICT_FALSE_WORDS = ("false", "no", "off", "0", "n", "f")


def parse_bool(value, field):
    """``value`` as a bool: a bool, or a word of TRUE_WORDS or STRICT_FALSE_WORDS (0 and 1 too); else PlanError naming
    ``field`` and the words allowed."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if word in TRUE_WORDS:
        return True
    if word in STRICT_FALSE_WORDS:
        return False
    raise PlanError("%s: %r is not allowed; use true or false (or yes/no, on/off, 1/0)" % (field, value))


def counted(count, noun, plural=None):
    """``count`` and ``noun`` as a person writes them: ``1 instance``, ``3 instances``, ``0 instances`` (``plural``
    when adding an s is not the word's plural)."""
    count = int(count)
    return "%d %s" % (count, noun if count == 1 else plural or noun + "s")


def ceil_percent(percent, total):
    """``percent`` of ``total`` rounded up, in integers only (no float error at exact boundaries)."""
    return -(-percent * total // 100)


def floor_percent(percent, total):
    return percent * total // 100


INT_RE = re.compile(r"^[0-9]+$")


PERCENT_RE = re.compile(r"^([0-9]+)%$")


def int_or_percent(value):
    """``("int", n)`` for ``3`` or ``"3"``, ``("percent", p)`` for ``"25%"`` (spaces around allowed); None for anything else.

    The one reader of Kubernetes' IntOrString counts: the user's max_unavailable/max_surge (checked by
    :func:`parse_int_or_percent`), a Deployment's rolling update and a PodDisruptionBudget's numbers.
    """
    if is_int(value):
        return ("int", value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if INT_RE.match(text):
        return ("int", int(text))
    match = PERCENT_RE.match(text)
    if match:
        return ("percent", int(match.group(1)))
    return None


def scaled_value(value, total, round_up):
    """A count read by :func:`int_or_percent` as a number of ``total``: a percentage rounds up or down, as Kubernetes'
    GetScaledValueFromIntOrPercent."""
    kind, number = value
    if kind == "int":
        return number
    return ceil_percent(number, total) if round_up else floor_percent(number, total)


def parse_int_or_percent(value, field, allow_zero=False):
    """Read a count written as an integer (``3``, ``"3"``) or a percentage (``"25%"``).

    Returns ``("int", n)`` or ``("percent", p)``. Integers must be >= 1 and percentages between 1% and 100%
    (with ``allow_zero``, 0 and 0% are accepted too). Booleans, floats, negative numbers and other strings
    are refused with a message naming ``field``.
    """
    low = 0 if allow_zero else 1
    parsed = int_or_percent(value)
    if parsed is None or parsed[1] < low or (parsed[0] == "percent" and parsed[1] > 100):
        raise PlanError("%s: %r is not allowed; use an integer >= %d or a percentage between %d%% and 100%%"
                        % (field, value, low, low))
    return parsed


_TIME_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$", re.IGNORECASE)


def parse_time(value, field):
    """Read an ISO 8601 time (``2024-05-01T12:00:00Z``, offsets and fractions allowed) or a datetime.

    Times without an offset are taken as UTC. Returns an aware UTC datetime.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)
    error = PlanError("%s: %r is not allowed; use an ISO 8601 time such as '2024-05-01T12:00:00Z'" % (field, value))
    match = _TIME_RE.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise error
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    stamp = None
    try:
        micro = int((fraction or "0")[:6].ljust(6, "0"))
        stamp = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro,
                         tzinfo=timezone.utc)
    except ValueError:
        pass
    if stamp is None:
        raise error
    if offset and offset.upper() != "Z":
        digits = offset[1:].replace(":", "")
        delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        stamp = stamp - delta if offset[0] == "+" else stamp + delta
    return stamp


_DURATION_RE = re.compile(r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$")


def parse_duration(value, field, minimum=0):
    """Read a duration as whole seconds: an integer (``90``) or a string ``"90"``, ``"90s"``, ``"15m"``, ``"1h30m"``.

    Units d, h, m and s may be combined in that order (``"30d"``, ``"1d12h"``). Negative numbers, fractions, booleans and other units
    are refused with a message naming ``field``, as is a duration shorter than ``minimum`` seconds (1 for a
    timeout or an interval, where 0 makes no sense). This is the one parser of durations: the modules and the
    role (through the ``nodeops.rollout.duration_seconds`` filter) use it.
    """
    allowed = "use a number of seconds (90) or a duration such as '90s', '15m' or '1h30m'"
    if minimum:
        allowed += ", of at least %d second%s" % (minimum, "" if minimum == 1 else "s")
    error = PlanError("%s: %r is not allowed; %s" % (field, value, allowed))
    if is_int(value):
        seconds = value
    elif isinstance(value, str):
        text = value.strip().lower()
        match = _DURATION_RE.match(text)
        if INT_RE.match(text):
            seconds = int(text)
        elif not text or not match:
            raise error
        else:
            days, hours, minutes, secs = (int(group) if group else 0 for group in match.groups())
            seconds = days * 86400 + hours * 3600 + minutes * 60 + secs
    else:
        raise error
    if seconds < max(minimum, 0):
        raise error
    return seconds


# Instance Refresh's limit for BakeTime and CheckpointDelay: 48 hours.
LONGEST_HOLD = 172800


def parse_hold(value, field):
    """A bake time or a checkpoint's wait: a duration (:func:`parse_duration`) of at most 48 hours, as Instance Refresh."""
    seconds = parse_duration(value, field)
    if seconds > LONGEST_HOLD:
        raise PlanError("%s: %r is not allowed; use at most 48h (172800 seconds)" % (field, value))
    return seconds


_CHECKPOINT_SYNTAX = ("a list of checkpoints, each a percentage of the group and a wait, such as "
                      "[{'percent': 25, 'wait': '10m'}, {'percent': 50, 'wait': '30m'}] or '25%:10m, 50%:30m'")


def _checkpoint(item, field):
    if isinstance(item, str):
        percent, sep, wait = item.partition(":")
        if not sep:
            raise PlanError("%s: %r is not a checkpoint; write %s" % (field, item, _CHECKPOINT_SYNTAX))
        item = {"percent": percent, "wait": wait}
    if not isinstance(item, dict) or set(item) - {"percent", "wait"} or "percent" not in item:
        raise PlanError("%s: %r is not a checkpoint; write %s" % (field, item, _CHECKPOINT_SYNTAX))
    text = str(item["percent"]).strip().rstrip("%").strip()
    if isinstance(item["percent"], bool) or not INT_RE.match(text) or not 1 <= int(text) <= 100:
        raise PlanError("%s.percent: %r is not allowed; use a whole percentage of the group between 1 and 100"
                        % (field, item["percent"]))
    wait = item.get("wait")
    return {"percent": int(text), "wait_seconds": parse_hold(0 if wait in (None, "") else wait, field + ".wait")}


def parse_checkpoints(value, field):
    """Checkpoints (Instance Refresh's CheckpointPercentages, each with its own wait): a list of ``{"percent", "wait"}``
    or of ``"25%:10m"`` texts, or one text with them separated by commas; empty means none. Returns
    ``[{"percent", "wait_seconds"}]`` in increasing percent; a percentage listed twice is refused."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, (list, tuple)):
        raise PlanError("%s: %r is not allowed; write %s" % (field, value, _CHECKPOINT_SYNTAX))
    checkpoints = [_checkpoint(item, "%s[%d]" % (field, index)) for index, item in enumerate(value)]
    seen = set()
    for index, checkpoint in enumerate(checkpoints):
        if checkpoint["percent"] in seen:
            raise PlanError("%s[%d].percent: %d%% is listed twice; list each percentage once" % (field, index, checkpoint["percent"]))
        seen.add(checkpoint["percent"])
    return sorted(checkpoints, key=lambda checkpoint: checkpoint["percent"])
