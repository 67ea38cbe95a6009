# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/window.py: maintenance windows as tables of windows, instants and what they say - midnight, the week's
end, the days clocks change (Europe/Berlin and America/New_York), several windows, and bad input."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.window import (
    closing,
    parse_window,
    parse_windows,
    start_refusal,
    window_state,
)

FIELD = "rolling_update_window"


def utc(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M").replace(tzinfo=timezone.utc)


def iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M") if moment else None


# 2026-11-27 is a Friday; 2026-03-29 and 2026-10-25 are the Sundays Europe/Berlin changes its clocks; 2026-03-08 and
# 2026-11-01 are America/New_York's.
STATES = [
    # window, now (UTC), open, closes_at (UTC), next_start (UTC)
    ("Fri 22:00 4h UTC", "2026-11-27T21:59", False, None, "2026-11-27T22:00"),
    ("Fri 22:00 4h UTC", "2026-11-27T22:00", True, "2026-11-28T02:00", None),       # the start belongs to the window
    ("Fri 22:00 4h UTC", "2026-11-28T01:59", True, "2026-11-28T02:00", None),       # across midnight, on Saturday
    ("Fri 22:00 4h UTC", "2026-11-28T02:00", False, None, "2026-12-04T22:00"),      # the end does not
    ("Sun 23:00 2h UTC", "2026-11-30T00:30", True, "2026-11-30T01:00", None),       # Sunday night into Monday
    ("Mon-Fri 02:00 3h UTC", "2026-11-28T12:00", False, None, "2026-11-30T02:00"),  # the weekend skipped
    ("Fri-Mon 02:00 1h UTC", "2026-11-29T02:30", True, "2026-11-29T03:00", None),  # a range over the weekend
    ("daily 00:00 24h UTC", "2026-11-27T13:37", True, None, None),                  # always open (closes far away)
    ("Fri 22:00 4h Europe/Berlin", "2026-11-27T21:00", True, "2026-11-28T01:00", None),   # CET is UTC+1
    ("Fri 22:00 4h Europe/Berlin", "2026-11-27T20:59", False, None, "2026-11-27T21:00"),
    ("Sat 23:00 6h Europe/Berlin", "2026-03-29T03:59", True, "2026-03-29T04:00", None),   # 4 elapsed hours: CET -> CEST
    ("Sun 02:30 1h Europe/Berlin", "2026-03-29T00:00", False, None, "2026-03-29T01:30"),  # 02:30 does not exist: 03:30 CEST
    ("Sun 02:30 1h Europe/Berlin", "2026-10-25T00:00", False, None, "2026-10-25T00:30"),  # 02:30 twice: the first (CEST)
    ("Sun 01:00 2h America/New_York", "2026-03-08T06:00", True, "2026-03-08T08:00", None),  # EST start, 2 real hours
    ("Sun 01:00 2h America/New_York", "2026-11-01T04:59", False, None, "2026-11-01T05:00"),  # 01:00 EDT, the first one
    ("Sat 22:00 3h UTC; Tue 02:00 1h UTC", "2026-11-29T00:30", True, "2026-11-29T01:00", None),
    ("Sat 22:00 3h UTC; Tue 02:00 1h UTC", "2026-11-29T01:00", False, None, "2026-12-01T02:00"),
    ("Fri 22:00 2h UTC; Sat 00:00 2h UTC", "2026-11-27T23:00", True, "2026-11-28T02:00", None),  # touching windows are one
    ("Fri 22:00 3h UTC; Fri 23:00 1h UTC", "2026-11-27T23:30", True, "2026-11-28T01:00", None),  # the longer one wins
]


@pytest.mark.parametrize("text, now, is_open, closes_at, next_start", STATES)
def test_window_state(text, now, is_open, closes_at, next_start):
    state = window_state(parse_windows(text, FIELD), utc(now))
    assert state["open"] is is_open
    if closes_at is not None:
        assert iso(state["closes_at"]) == closes_at
    assert iso(state["next_start"]) == next_start


def test_no_window_means_any_time():
    for empty in (None, "", "  ", []):
        windows = parse_windows(empty, FIELD)
        assert windows == [] and window_state(windows, utc("2026-11-27T12:00")) is None
        assert start_refusal(windows, utc("2026-11-27T12:00"), 3600) is None
        assert closing(windows, utc("2026-11-27T12:00"), 3600) is None


SPELLINGS = [
    ({"days": "Mon-Fri", "start": "22:00", "duration": "4h", "timezone": "Europe/Berlin"}, "Mon,Tue,Wed,Thu,Fri 22:00 4h Europe/Berlin"),
    ({"days": ["sat", "Sunday"], "start": "2:05", "duration": 5400}, "Sat,Sun 02:05 1h30m UTC"),
    ({"start": "00:00", "duration": "24h"}, "daily 00:00 24h UTC"),
    ("Tue,Thu 03:00 90m", "Tue,Thu 03:00 1h30m UTC"),
    ("daily 23:30 1h America/New_York", "daily 23:30 1h America/New_York"),
]


@pytest.mark.parametrize("value, text", SPELLINGS)
def test_the_spellings_of_a_window(value, text):
    assert parse_window(value, FIELD)["text"] == text


def test_a_list_of_windows_and_text_with_several():
    assert [w["text"] for w in parse_windows(["Sat 22:00 3h", {"days": "Tue", "start": "02:00", "duration": "1h"}], FIELD)] == \
        ["Sat 22:00 3h UTC", "Tue 02:00 1h UTC"]
    assert len(parse_windows("Sat 22:00 3h; Tue 02:00 1h", FIELD)) == 2


BAD = [
    ("Sat 22:00", "rolling_update_window: 'Sat 22:00' is not a window"),
    ("Sat 24:00 1h", "rolling_update_window.start: '24:00' is not allowed"),
    ("Sat 22:00 1h Mars/Olympus", "rolling_update_window.timezone: 'Mars/Olympus' is not a time zone"),
    ("Sab 22:00 1h", "rolling_update_window.days: 'Sab' is not a day of the week"),
    ("Sat 22:00 30s", "rolling_update_window.duration: '30s' is not allowed; use a number of seconds (90) or a duration "
                      "such as '90s', '15m' or '1h30m', of at least 60 seconds"),
    ("Sat 22:00 200h", "rolling_update_window.duration: '200h' is not allowed; use at most 168h"),
    ({"days": "Sat", "start": "22:00"}, "rolling_update_window.duration: a window needs a duration"),
    ({"day": "Sat", "start": "22:00", "duration": "1h"}, "rolling_update_window: day is not a key of a window"),
    ("Sat 22:00 1h; Sun 25:00 1h", "rolling_update_window[1].start: '25:00' is not allowed"),
    ([{"start": "1:00", "duration": "1h"}, 5], "rolling_update_window[1]: 5 is not a window"),
    (42, "rolling_update_window: 42 is not allowed"),
]


@pytest.mark.parametrize("value, message", BAD)
def test_bad_windows_are_named(value, message):
    with pytest.raises(PlanError) as error:
        parse_windows(value, FIELD)
    assert str(error.value).startswith(message), str(error.value)


def test_start_is_refused_outside_a_window_naming_the_next_start_in_its_zone_and_utc():
    windows = parse_windows("Tue 02:00 3h Europe/Berlin", FIELD)
    message = start_refusal(windows, utc("2026-11-27T12:00"), 600)
    assert message == ("rolling_update_window: 2026-11-27T12:00:00Z is outside the maintenance window (Tue 02:00 3h "
                       "Europe/Berlin); the next one starts Tue 2026-12-01 02:00 CET (Europe/Berlin), 2026-12-01T01:00:00Z. "
                       "Nothing was changed")


def test_start_is_refused_when_one_step_does_not_fit_before_the_window_closes():
    windows = parse_windows("Tue 02:00 3h UTC", FIELD)
    assert start_refusal(windows, utc("2026-12-01T04:00"), 3600) is None          # an hour left for an hour's step
    message = start_refusal(windows, utc("2026-12-01T04:01"), 3600)
    assert "closes Tue 2026-12-01 05:00 UTC, in 59m, before one step (predicted 1h) could finish" in message
    assert "the next one starts Tue 2026-12-08 02:00 UTC" in message


@pytest.mark.parametrize("now, step, expected", [
    ("2026-12-01T03:00", 7200, None),
    ("2026-12-01T03:01", 7200, "the maintenance window closes Tue 2026-12-01 05:00 UTC, before the next step (predicted 2h) "
                               "could finish; the next one starts Tue 2026-12-08 02:00 UTC"),
    ("2026-12-01T06:00", 60, "the maintenance window is closed; the next one starts Tue 2026-12-08 02:00 UTC"),
])
def test_closing(now, step, expected):
    assert closing(parse_windows("Tue 02:00 3h", FIELD), utc(now), step) == expected


def test_a_naive_now_is_utc():
    windows = parse_windows("Fri 22:00 4h", FIELD)
    assert window_state(windows, datetime(2026, 11, 27, 23, 0))["open"] is True
