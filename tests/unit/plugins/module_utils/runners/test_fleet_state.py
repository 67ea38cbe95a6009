# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""fleet_state's module runner against DynamoDB (moto): what --diff shows of a change of the fleet's ledger."""

from __future__ import annotations

import json

import boto3
import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.fleet import ledger
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.fleet_state import run_fleet_state
from ansible_collections.nodeops.rollout.plugins.modules import fleet_state as fleet_state_module
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.aws_world import AUTH, REGION
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fleet.test_ledger import pinned

TABLE = "nodeops-fleet"


@pytest.fixture
def table(world):  # pylint: disable=unused-argument
    """The fleet's table holding the ledger of fleet-1, pinned (its clusters joined)."""
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(TableName=TABLE, KeySchema=[{"AttributeName": "fleet", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "fleet", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    document = pinned()
    client.put_item(TableName=TABLE, Item={"fleet": {"S": "fleet-1"}, "version": {"N": "1"}, "document": {"S": json.dumps(document)}})
    return document


def claim(run_module, diff):
    args = dict(AUTH, table=TABLE, fleet="fleet-1", action="claim", cluster="c-1", run="r1", _ansible_diff=diff)
    try:
        run_module(fleet_state_module.argument_spec(), args, run_fleet_state)
    except run_module.ModuleExit as done:
        return done.result
    raise AssertionError("the module returned without exit_json or fail_json")


def test_a_change_of_the_ledger_in_diff_mode_shows_the_fleet_before_and_after(table, run_module):
    result = claim(run_module, diff=True)
    assert result["changed"] and result["decision"] == "start", result
    diff = result["diff"]
    assert diff["before_header"] == diff["after_header"] == "fleet fleet-1 (DynamoDB table %s)" % TABLE
    assert diff["before"] == ledger.summary(table) and diff["after"] == result["fleet"]
    assert diff["before"] != diff["after"]


def test_without_diff_mode_no_diff(table, run_module):  # pylint: disable=unused-argument
    assert "diff" not in claim(run_module, diff=False)
