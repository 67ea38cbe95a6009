# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""values.py: counts as an integer or a percentage, durations."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import (
    PlanError,
    parse_checkpoints,
    parse_duration,
    parse_hold,
    parse_int_or_percent,
)
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import assert_plan_error


# ---------------------------------------------------------------------------------------------------------
# parse_int_or_percent
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (3, ("int", 3)), ("3", ("int", 3)), (" 7 ", ("int", 7)), ("25%", ("percent", 25)), ("100%", ("percent", 100)),
    ("1%", ("percent", 1)), (1000, ("int", 1000)),
])
def test_parse_int_or_percent_accepts(value, expected):
    assert parse_int_or_percent(value, "max_unavailable") == expected


@pytest.mark.parametrize("value", ["abc", "150%", 0, -1, "0%", "0", True, False, 1.5, None, "", "-3", "3.5", "25 %", "%",
                                   "101%", [3], {"n": 3}])
def test_parse_int_or_percent_refuses_with_the_field_and_allowed_values(value):
    message = assert_plan_error(lambda: parse_int_or_percent(value, "max_unavailable"), "max_unavailable",
                                "is not allowed", "use an integer >= 1 or a percentage between 1% and 100%")
    assert repr(value) in message


def test_parse_int_or_percent_message_matches_the_documented_example():
    with pytest.raises(PlanError) as caught:
        parse_int_or_percent("150%", "max_unavailable")
    assert str(caught.value) == ("max_unavailable: '150%' is not allowed; use an integer >= 1 or a percentage "
                                 "between 1% and 100%")


def test_parse_int_or_percent_allow_zero():
    assert parse_int_or_percent(0, "max_surge", allow_zero=True) == ("int", 0)
    assert parse_int_or_percent("0%", "max_surge", allow_zero=True) == ("percent", 0)
    assert_plan_error(lambda: parse_int_or_percent(-1, "max_surge", allow_zero=True), "max_surge",
                      "use an integer >= 0 or a percentage between 0% and 100%")


@given(st.integers(min_value=1, max_value=10 ** 6), st.booleans())
def test_parse_int_or_percent_any_positive_integer(number, as_text):
    assert parse_int_or_percent(str(number) if as_text else number, "f") == ("int", number)


@given(st.integers(min_value=-(10 ** 6), max_value=0))
def test_parse_int_or_percent_any_non_positive_integer_is_refused(number):
    assert_plan_error(lambda: parse_int_or_percent(number, "rolling_update_max_unavailable"),
                      "rolling_update_max_unavailable")


@given(st.integers(min_value=101, max_value=10 ** 6))
def test_parse_int_or_percent_percentages_above_100_are_refused(number):
    assert_plan_error(lambda: parse_int_or_percent("%d%%" % number, "max_surge"), "max_surge")


@given(st.text(max_size=8))
def test_parse_int_or_percent_arbitrary_text_is_either_valid_or_names_the_field(text):
    stripped = text.strip()
    valid = (stripped.isascii() and stripped.isdigit() and int(stripped) >= 1) or (
        stripped.endswith("%") and stripped[:-1].isascii() and stripped[:-1].isdigit() and 1 <= int(stripped[:-1]) <= 100)
    if valid:
        kind, number = parse_int_or_percent(text, "f")
        assert kind == ("percent" if stripped.endswith("%") else "int")
        assert number == int(stripped.rstrip("%"))
    else:
        assert_plan_error(lambda: parse_int_or_percent(text, "field_x"), "field_x", "is not allowed")


@pytest.mark.parametrize("value, seconds", [
    (90, 90), (0, 0), ("90", 90), ("90s", 90), ("15m", 900), ("1h30m", 5400), ("1h", 3600), ("2h15m30s", 8130),
    (" 15M ", 900), ("0s", 0), ("45m10s", 2710), ("1h5s", 3605),
])
def test_parse_duration(value, seconds):
    assert parse_duration(value, "drain_timeout") == seconds


@pytest.mark.parametrize("value", [-1, "abc", "1w", "1m1h", "", "1.5m", 1.5, True, None, "h", "-5s", "5 m", "1h 30m", [90]])
def test_parse_duration_refuses_with_the_field(value):
    assert_plan_error(lambda: parse_duration(value, "drain_timeout"), "drain_timeout",
                      "use a number of seconds (90) or a duration such as '90s', '15m' or '1h30m'")


@pytest.mark.parametrize("value", [0, "0", "0s", "0h0m0s"])
def test_parse_duration_minimum_refuses_shorter_durations(value):
    assert_plan_error(lambda: parse_duration(value, "drain_timeout", minimum=1), "drain_timeout",
                      "use a number of seconds (90) or a duration such as '90s', '15m' or '1h30m', of at least 1 second")
    assert parse_duration(value, "drain_timeout") == 0


def test_parse_duration_minimum_accepts_the_minimum_and_more():
    assert parse_duration("1s", "drain_timeout", minimum=1) == 1
    assert parse_duration("1m", "drain_timeout", minimum=60) == 60
    assert_plan_error(lambda: parse_duration(59, "drain_timeout", minimum=60), "drain_timeout", "of at least 60 seconds")


@given(st.integers(min_value=0, max_value=99), st.integers(min_value=0, max_value=59), st.integers(min_value=0, max_value=59),
       st.booleans(), st.booleans(), st.booleans())
def test_parse_duration_any_combination(hours, minutes, seconds, with_h, with_m, with_s):
    assume(with_h or with_m or with_s)
    text = ("%dh" % hours if with_h else "") + ("%dm" % minutes if with_m else "") + ("%ds" % seconds if with_s else "")
    expected = (hours * 3600 if with_h else 0) + (minutes * 60 if with_m else 0) + (seconds if with_s else 0)
    assert parse_duration(text, "f") == expected


@pytest.mark.parametrize("value, expected", [
    (None, []), ("", []), ([], []),
    ("50%:10m", [{"percent": 50, "wait_seconds": 600}]),
    ("50%:10m, 25%:1m", [{"percent": 25, "wait_seconds": 60}, {"percent": 50, "wait_seconds": 600}]),
    ([{"percent": 100, "wait": "1h"}], [{"percent": 100, "wait_seconds": 3600}]),
    ([{"percent": "20%"}], [{"percent": 20, "wait_seconds": 0}]),
    (["10:30"], [{"percent": 10, "wait_seconds": 30}]),
])
def test_parse_checkpoints(value, expected):
    assert parse_checkpoints(value, "checkpoints") == expected


@pytest.mark.parametrize("value, message", [
    ("50%", "checkpoints[0]: '50%' is not a checkpoint"),
    ([{"percent": 0, "wait": "1m"}], "checkpoints[0].percent: 0 is not allowed; use a whole percentage of the group between 1 and 100"),
    ([{"percent": True}], "checkpoints[0].percent: True is not allowed"),
    ([{"percent": 50, "wait": "3d"}], "checkpoints[0].wait: '3d' is not allowed"),
    ([{"percent": 50, "wait": "49h"}], "checkpoints[0].wait: '49h' is not allowed; use at most 48h"),
    ([{"percent": 50, "delay": "1m"}], "checkpoints[0]: {'percent': 50, 'delay': '1m'} is not a checkpoint"),
    ("25%:1m,25%:2m", "checkpoints[1].percent: 25% is listed twice"),
    (50, "checkpoints: 50 is not allowed"),
])
def test_parse_checkpoints_refuses_naming_the_item(value, message):
    with pytest.raises(PlanError) as error:
        parse_checkpoints(value, "checkpoints")
    assert str(error.value).startswith(message), str(error.value)


def test_parse_hold_is_a_duration_of_at_most_48_hours():
    assert parse_hold("48h", "bake_time") == 172800 and parse_hold(0, "bake_time") == 0
    with pytest.raises(PlanError):
        parse_hold("48h1s", "bake_time")


def test_a_count_is_said_with_its_noun_in_the_singular_only_for_one():
    from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import counted
    assert [counted(n, "instance") for n in (0, 1, 2)] == ["0 instances", "1 instance", "2 instances"]
    assert counted(1, "drain wave") == "1 drain wave" and counted(3, "policy", "policies") == "3 policies"


def test_a_boolean_is_read_from_the_words_ansible_reads_and_anything_else_is_refused_by_name():
    from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import parse_bool
    assert [parse_bool(word, "f") for word in (True, "yes", "On", "1", 1, "t")] == [True] * 6
    assert [parse_bool(word, "f") for word in (False, "no", "OFF", "0", 0, "f")] == [False] * 6
    for bad in ("maybe", "2", 2, None, []):
        with pytest.raises(PlanError) as raised:
            parse_bool(bad, "rolling_update_canary")
        assert str(raised.value).startswith("rolling_update_canary: ") and "true or false" in str(raised.value)
