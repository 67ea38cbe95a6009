# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet_lock_turn filter: the fleet role asks it, with the locks as read, whether to roll, wait or leave the cluster busy."""

from __future__ import annotations

import datetime

from ansible_collections.nodeops.rollout.plugins.filter.fleet_lock_turn import FilterModule
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.lease_lock import micro_time


def test_the_filter_waits_for_the_stopped_attempts_lock_as_long_as_it_still_stands_from_now():
    turn = FilterModule().filters()["fleet_lock_turn"]
    expires = micro_time(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=600))
    read = {"item": {"name": "ng"}, "action": "refuse", "holder": "h1", "lease": {"expires_at": expires}}
    waited = turn([read], "c-2", "h1", {})
    # the wait runs to the lock's expiry counted from the clock now: minutes, not the one second of an unknown time
    assert waited["decision"] == "wait" and 60 < waited["wait_seconds"] <= 602, waited
    assert turn([read], "c-2", None)["decision"] == "busy"
    assert turn([{"item": {"name": "ng"}, "action": "create"}], "c-2", "h1", waited["seen"])["decision"] == "free"
