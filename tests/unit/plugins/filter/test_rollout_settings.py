# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout_settings filter: the role's variables known from its argument spec, a misspelt one the error."""

from __future__ import annotations

import os

import yaml

from ansible_collections.nodeops.rollout.plugins.filter.rollout_settings import ARGUMENT_SPECS, FilterModule, role_options


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


def test_the_role_s_defaults_and_its_argument_spec_declare_the_same_variables_with_the_same_defaults():
    """The role's variables are declared twice, in defaults/main.yml (what a run sees) and meta/argument_specs.yml
    (what ansible-doc shows and the argument spec checks): the same names in both, for every entry point, and each
    default the same (a variable without one in the spec is required, rolling_update_node_groups)."""
    role = os.path.dirname(os.path.dirname(ARGUMENT_SPECS))
    with open(os.path.join(role, "defaults", "main.yml"), encoding="utf-8") as fh:
        defaults = yaml.safe_load(fh)
    with open(ARGUMENT_SPECS, encoding="utf-8") as fh:
        specs = yaml.safe_load(fh)["argument_specs"]
    assert sorted(specs) == ["cancel", "main", "rollback"]
    for entry, spec in specs.items():
        options = spec["options"]
        assert sorted(options) == sorted(defaults), entry
        assert [name for name in options if "default" not in options[name]] == ["rolling_update_node_groups"], entry
        assert options["rolling_update_node_groups"]["required"] is True and defaults["rolling_update_node_groups"] == []
        differ = {name: (option["default"], defaults[name]) for name, option in options.items()
                  if "default" in option and option["default"] != defaults[name]}
        assert differ == {}, entry
