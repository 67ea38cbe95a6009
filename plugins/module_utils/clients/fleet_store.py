# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's ledger in DynamoDB: one item per fleet, read consistently, written only if no other worker wrote since.

The item is ``{"fleet": <name>, "version": <n>, "document": <JSON>}`` in a table whose partition key is the string
``fleet``. A write carries the version it read as a condition (``attribute_not_exists(fleet)`` for the first), so of two
workers deciding at once one write lands and the other is refused with ConditionalCheckFailedException: it reads again
and decides again (:meth:`FleetStore.change`). DynamoDB's conditional writes are atomic for one item, and an item holds
400 KB: a fleet of about a thousand clusters.
"""

from __future__ import annotations

import json

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import AWS_ERRORS, error_code
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import describe_aws_error
from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import backoff_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError

KEY = "fleet"
CONFLICT = "ConditionalCheckFailedException"
MAX_CONFLICTS = 50


class FleetStore:
    """The ledger of fleet ``fleet`` in DynamoDB table ``table``, through ``client`` (a boto3 dynamodb client)."""

    def __init__(self, client, table, fleet, sleep):
        self.client, self.table, self.fleet, self.sleep = client, table, fleet, sleep
        self.writes = 0

    def _where(self):
        return "item %s=%r of DynamoDB table %r" % (KEY, self.fleet, self.table)

    def read(self):
        """``(document, version)``; ``(None, 0)`` when no worker has written it."""
        try:
            item = self.client.get_item(TableName=self.table, Key={KEY: {"S": self.fleet}}, ConsistentRead=True).get("Item")
        except AWS_ERRORS as exc:
            raise RolloutError(describe_aws_error(exc, "GetItem", self._where())) from None
        if not item:
            return None, 0
        return json.loads(item["document"]["S"]), int(item["version"]["N"])

    def _write(self, document, version):
        """True if written; False if another worker wrote first."""
        condition = {"ConditionExpression": "attribute_not_exists(#k)", "ExpressionAttributeNames": {"#k": KEY}} if not version else {
            "ConditionExpression": "#v = :v", "ExpressionAttributeNames": {"#v": "version"},
            "ExpressionAttributeValues": {":v": {"N": str(version)}}}
        item = {KEY: {"S": self.fleet}, "version": {"N": str(version + 1)},
                "document": {"S": json.dumps(document, sort_keys=True, separators=(",", ":"))}}
        try:
            self.client.put_item(TableName=self.table, Item=item, **condition)
        except AWS_ERRORS as exc:
            if error_code(exc) == CONFLICT:
                return False
            raise RolloutError(describe_aws_error(exc, "PutItem", self._where())) from None
        self.writes += 1
        return True

    def change(self, decide):
        """Read the document, let ``decide(document)`` change it (or make it, from None) and return its answer, and
        write the document back if it changed; on a conflict, all again. Returns ``(answer, document)``."""
        for attempt in range(MAX_CONFLICTS):
            document, version = self.read()
            before = json.dumps(document, sort_keys=True)
            answer, document = decide(document)
            if document is None or json.dumps(document, sort_keys=True) == before or self._write(document, version):
                return answer, document
            self.sleep(backoff_delay(attempt + 1, base=0.05, cap=1.0))
        raise RolloutError("%s: %d workers' writes in a row came between this worker's read and write; try again"
                           % (self._where(), MAX_CONFLICTS))
