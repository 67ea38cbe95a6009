# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout_settings filter: the role's variables known from its argument spec, a misspelt one the error."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.filter.rollout_settings import FilterModule, role_options


def test_the_role_s_options_are_read_from_its_argument_spec():
    options = role_options()
    assert "rolling_update_max_unavailable" in options and "rolling_update_node_groups" in options and "rolling_update_k8s" in options
    assert all(name.startswith("rolling_update_") and not name.startswith("rolling_update__") for name in options)


def test_a_misspelt_variable_is_the_error_before_any_value_is_read():
    settings = FilterModule().filters()["rollout_settings"]
    result = settings({}, None, ["rolling_update_node_groups", "rolling_update_max_unavailble"])
    assert result == {"error": "rolling_update_max_unavailble (did you mean rolling_update_max_unavailable?): not a variable of the "
                               "role nodeops.rollout.rolling_update, so it would be ignored; the role's variables are listed by "
                               "'ansible-doc -t role nodeops.rollout.rolling_update'"}
