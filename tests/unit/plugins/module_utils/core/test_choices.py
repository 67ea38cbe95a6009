# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fixed choices: each option offers the same words wherever it is checked (a module's argument spec, the options
object or client that uses the value), and a word outside them is refused naming the field and the words allowed."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import METHODS, RETRY_MODES, TIMEOUT_ACTIONS
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import (
    AWS_ARGUMENT_SPEC, AWSConfigurationError, resolve_aws_options)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.options import DrainOptions
from ansible_collections.nodeops.rollout.plugins.modules import asg_surge, node_drain


def test_the_choices_are_the_documented_words():
    assert RETRY_MODES == ("standard", "adaptive")
    assert TIMEOUT_ACTIONS == ("fail", "skip", "force")
    assert METHODS == ("scale", "detach")


@pytest.mark.parametrize("spec, option, choices", [
    (lambda: AWS_ARGUMENT_SPEC, "retry_mode", RETRY_MODES),
    (node_drain.argument_spec, "timeout_action", TIMEOUT_ACTIONS),
    (asg_surge.argument_spec, "method", METHODS),
])
def test_each_module_offers_exactly_the_shared_choices(spec, option, choices):
    assert spec()[option]["choices"] == list(choices)


@pytest.mark.parametrize("action", TIMEOUT_ACTIONS)
def test_the_drain_options_take_every_timeout_action(action):
    assert DrainOptions({"timeout_action": action}).timeout_action == action


def test_the_drain_options_refuse_another_timeout_action_naming_the_choices():
    with pytest.raises(PlanError) as error:
        DrainOptions({"timeout_action": "wait"})
    assert str(error.value) == "timeout_action: 'wait' is not allowed; use one of fail, skip, force"


@pytest.mark.parametrize("mode", RETRY_MODES)
def test_the_aws_connection_takes_every_retry_mode(mode):
    options, sources = resolve_aws_options({"region": "us-east-1", "retry_mode": mode}, environ={})
    assert (options["retry_mode"], sources["retry_mode"]) == (mode, "option")


def test_the_aws_connection_refuses_another_retry_mode_naming_the_choices():
    with pytest.raises(AWSConfigurationError, match=r"^retry_mode must be one of standard, adaptive, got 'legacy'$"):
        resolve_aws_options({"region": "us-east-1", "retry_mode": "legacy"}, environ={})
