# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's ledger in DynamoDB: a write lands only on the version it read, so two workers deciding at once never
both count themselves in one place."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.fleet_store import FleetStore
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError

TABLE = "nodeops-fleet"


@pytest.fixture
def client(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="eu-west-1")
        dynamodb.create_table(TableName=TABLE, AttributeDefinitions=[{"AttributeName": "fleet", "AttributeType": "S"}],
                              KeySchema=[{"AttributeName": "fleet", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
        yield dynamodb


def test_a_write_between_a_read_and_a_write_makes_the_worker_decide_again(client):
    first, second = FleetStore(client, TABLE, "f", lambda _s: None), FleetStore(client, TABLE, "f", lambda _s: None)
    first.change(lambda doc: (None, {"slots": []}))
    seen = []

    def take(doc):
        seen.append(list(doc["slots"]))
        if len(seen) == 1:
            # another worker takes a slot after this one read
            second.change(lambda other: (None, {"slots": other["slots"] + ["b"]}))
        return "a", {"slots": doc["slots"] + ["a"]}

    assert first.change(take)[0] == "a"
    assert seen == [[], ["b"]]
    assert first.read() == ({"slots": ["b", "a"]}, 3)


def test_an_unchanged_document_is_not_written(client):
    store = FleetStore(client, TABLE, "f", lambda _s: None)
    store.change(lambda doc: (None, {"a": 1}))
    store.change(lambda doc: (None, doc))
    assert store.writes == 1


def test_a_missing_table_is_named(client):
    store = FleetStore(client, "no-such-table", "f", lambda _s: None)
    with pytest.raises(RolloutError, match="GetItem on item fleet='f' of DynamoDB table 'no-such-table': ResourceNotFoundException"):
        store.read()
