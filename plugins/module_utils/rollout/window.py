# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Maintenance windows: when a rollout may start, and whether its next step still fits before the window closes. Pure.

A window is days of the week, a start time of day, a duration and a time zone (IANA name, read with the standard
library's ``zoneinfo``); a rollout has none (any time) or a list of them. Written as a dict
``{"days": "Mon-Fri", "start": "22:00", "duration": "4h", "timezone": "Europe/Berlin"}`` or as text
``"Mon-Fri 22:00 4h Europe/Berlin"`` (several separated by ``;``, as an AWX survey sends one line).

- The days are the days the window *starts* on, in its own zone: ``Fri 22:00 4h`` runs from Friday 22:00 to
  Saturday 02:00.
- The start is a wall-clock time in the zone. On the day clocks go forward, a start in the skipped hour begins the
  window at the same instant as the hour after it (02:30 in Europe/Berlin on the last Sunday of March opens at 03:30
  CEST); on the day they go back, a start in the repeated hour is its first occurrence.
- The duration is elapsed time: a 4h window is four real hours long, also across a change of the clocks.
- Windows that overlap or touch are one: ``daily 00:00 24h`` is always open.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta, timezone

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_duration

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
EVERY_DAY = ("*", "daily", "every day", "everyday")
MIN_DURATION = 60
MAX_DURATION = 7 * 24 * 3600
# how many days around now are looked at: a window lasts at most a week, so one that started 8 days ago has ended,
# and every window starts again within 7 days
_SPAN_DAYS = 8

_START_RE = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")
_KEYS = ("days", "start", "duration", "timezone")
_SYNTAX = ("days of the week, a start time, a duration and a time zone, such as "
           "{'days': 'Mon-Fri', 'start': '22:00', 'duration': '4h', 'timezone': 'Europe/Berlin'} "
           "or 'Mon-Fri 22:00 4h Europe/Berlin' (several separated by ';')")


def _day_index(word, field):
    text = str(word).strip().lower()
    for index, day in enumerate(DAYS):
        full = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")[index]
        if text in (day.lower(), full):
            return index
    raise PlanError("%s.days: %r is not a day of the week; use Mon, Tue, Wed, Thu, Fri, Sat, Sun, ranges such as "
                    "Mon-Fri, or daily" % (field, word))


def parse_days(value, field):
    """``"Mon-Fri"``, ``"Sat,Sun"``, ``["Tue", "Thu"]``, ``"daily"`` -> sorted day indexes (Monday is 0)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in EVERY_DAY):
        return list(range(7))
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    days = set()
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        if text.lower() in EVERY_DAY:
            return list(range(7))
        if "-" in text:
            first, _sep, last = text.partition("-")
            low, high = _day_index(first, field), _day_index(last, field)
            index = low
            while True:  # Fri-Mon wraps over the weekend
                days.add(index)
                if index == high:
                    break
                index = (index + 1) % 7
        else:
            days.add(_day_index(text, field))
    if not days:
        raise PlanError("%s.days: %r names no day; use Mon, Tue, ..., ranges such as Mon-Fri, or daily" % (field, value))
    return sorted(days)


def _zone(name, field):
    text = str(name or "UTC").strip()
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise PlanError("%s.timezone: %r is not a time zone; use an IANA name such as UTC, Europe/Berlin or "
                        "America/New_York" % (field, name)) from None


def _from_text(text, field):
    words = text.split()
    if len(words) not in (3, 4):
        raise PlanError("%s: %r is not a window; write %s" % (field, text, _SYNTAX))
    return dict(zip(_KEYS, words), timezone=words[3] if len(words) == 4 else "UTC")


def parse_window(value, field):
    """One window (a dict or a line of text) -> ``{"days", "start", "duration_seconds", "timezone", "text"}``."""
    if isinstance(value, str):
        value = _from_text(value.strip(), field)
    if not isinstance(value, dict):
        raise PlanError("%s: %r is not a window; write %s" % (field, value, _SYNTAX))
    unknown = sorted(set(value) - set(_KEYS))
    if unknown:
        raise PlanError("%s: %s is not a key of a window; use %s" % (field, ", ".join(unknown), ", ".join(_KEYS)))
    days = parse_days(value.get("days"), field)
    start = str(value.get("start") if value.get("start") is not None else "").strip()
    match = _START_RE.match(start)
    if not match:
        raise PlanError("%s.start: %r is not allowed; use a time of day HH:MM such as 22:00" % (field, value.get("start")))
    if value.get("duration") in (None, ""):
        raise PlanError("%s.duration: a window needs a duration, such as 4h or 90m" % field)
    seconds = parse_duration(value.get("duration"), field + ".duration", minimum=MIN_DURATION)
    if seconds > MAX_DURATION:
        raise PlanError("%s.duration: %r is not allowed; use at most 168h (a week)" % (field, value.get("duration")))
    zone_name = str(value.get("timezone") or "UTC").strip()
    _zone(zone_name, field)
    hour, minute = int(match.group(1)), int(match.group(2))
    day_text = "daily" if len(days) == 7 else ",".join(DAYS[day] for day in days)
    return {"days": [DAYS[day] for day in days], "start": "%02d:%02d" % (hour, minute), "duration_seconds": seconds,
            "timezone": zone_name, "text": "%s %02d:%02d %s %s" % (day_text, hour, minute, _duration_text(seconds), zone_name)}


def parse_windows(value, field):
    """The rollout's windows: empty (``None``, ``""``, ``[]``: no window, any time), one window, text with windows
    separated by ``;``, or a list of windows. Each error names ``field`` (and the index in a list)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if isinstance(value, str):
        parts = [part.strip() for part in value.split(";") if part.strip()]
        if len(parts) == 1:
            return [parse_window(parts[0], field)]
        return [parse_window(part, "%s[%d]" % (field, index)) for index, part in enumerate(parts)]
    if isinstance(value, dict):
        return [parse_window(value, field)]
    if isinstance(value, (list, tuple)):
        return [parse_window(item, "%s[%d]" % (field, index)) for index, item in enumerate(value)]
    raise PlanError("%s: %r is not allowed; write %s" % (field, value, _SYNTAX))


def _duration_text(seconds):
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return "".join("%d%s" % (number, unit) for number, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if number) or "0s"


def _utc(moment):
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def occurrences(window, now):
    """``[(start, end, window)]`` in UTC: every opening of ``window`` (as :func:`parse_window` returns it) that starts
    within 8 days of ``now`` either way."""
    zone = ZoneInfo(window["timezone"])
    hour, minute = (int(part) for part in window["start"].split(":"))
    today = _utc(now).astimezone(zone).date()
    wanted = set(DAYS.index(day) for day in window["days"])
    found = []
    for offset in range(-_SPAN_DAYS, _SPAN_DAYS + 1):
        day = today + timedelta(days=offset)
        if day.weekday() not in wanted:
            continue
        start = datetime.combine(day, time(hour, minute), tzinfo=zone).astimezone(timezone.utc)
        found.append((start, start + timedelta(seconds=window["duration_seconds"]), window))
    return found


def _merged(windows, now):
    """The openings of every window around ``now``, overlapping or touching ones merged: ``[[start, end, first window]]``."""
    spans = sorted((entry for window in windows for entry in occurrences(window, now)), key=lambda entry: entry[0])
    merged = []
    for start, end, window in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, window])
    return merged


def window_state(windows, now):
    """Where ``now`` (an aware datetime) stands: ``{"open", "closes_at", "next_start", "next_window"}`` (UTC datetimes;
    ``closes_at`` when open, ``next_start`` and ``next_window`` when closed), or None without windows (any time)."""
    if not windows:
        return None
    now = _utc(now)
    for start, end, window in _merged(windows, now):
        if start <= now < end:
            return {"open": True, "closes_at": end, "next_start": None, "next_window": window}
        if start > now:
            return {"open": False, "closes_at": None, "next_start": start, "next_window": window}
    return {"open": False, "closes_at": None, "next_start": None, "next_window": None}  # pragma: no cover - a week always has one


def local_text(moment, window):
    """``Tue 2026-11-24 02:00 CET (Europe/Berlin), 2026-11-24T01:00:00Z``: a UTC instant in the window's zone and in UTC."""
    local = moment.astimezone(ZoneInfo(window["timezone"]))
    utc = _utc(moment)
    if window["timezone"] in ("UTC", "Etc/UTC"):
        return "%s UTC" % utc.strftime("%a %Y-%m-%d %H:%M")
    return "%s %s (%s), %s" % (local.strftime("%a %Y-%m-%d %H:%M"), local.tzname(), window["timezone"],
                               utc.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _next_start_text(windows, moment):
    """When the window after ``moment`` (a closing time) starts, as :func:`local_text` writes it."""
    following = window_state(windows, moment)
    if following["next_start"] is None:
        return "when a window opens again"
    return local_text(following["next_start"], following["next_window"])


def start_refusal(windows, now, step_seconds, field="rolling_update_window"):
    """Why a rollout may not start at ``now``: outside every window, or too close to the end of the open one for one
    step of ``step_seconds``; None when it may (or when there is no window)."""
    state = window_state(windows, now)
    if state is None:
        return None
    listed = "; ".join(window["text"] for window in windows)
    if not state["open"]:
        return ("%s: %s is outside the maintenance window (%s); the next one starts %s. Nothing was changed"
                % (field, _utc(now).strftime("%Y-%m-%dT%H:%M:%SZ"), listed, local_text(state["next_start"], state["next_window"])))
    left = (state["closes_at"] - _utc(now)).total_seconds()
    if left < step_seconds:
        return ("%s: the maintenance window (%s) closes %s, in %s, before one step (predicted %s) could finish; the next one "
                "starts %s. Nothing was changed"
                % (field, listed, local_text(state["closes_at"], state["next_window"]), _duration_text(left),
                   _duration_text(step_seconds), _next_start_text(windows, state["closes_at"])))
    return None


def closing(windows, now, step_seconds):
    """Why the next step of ``step_seconds`` does not fit in the window any more (it is closed, or it closes before the
    step would end), with when the next window starts; None when it fits or there is no window."""
    state = window_state(windows, now)
    if state is None:
        return None
    now = _utc(now)
    if state["open"] and now + timedelta(seconds=step_seconds) <= state["closes_at"]:
        return None
    if state["open"]:
        return "the maintenance window closes %s, before the next step (predicted %s) could finish; the next one starts %s" % (
            local_text(state["closes_at"], state["next_window"]), _duration_text(step_seconds),
            _next_start_text(windows, state["closes_at"]))
    return "the maintenance window is closed; the next one starts %s" % local_text(state["next_start"], state["next_window"])
