# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/targets.py: which target groups still hold a drained instance, and how long it may wait for them."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import targets

WEB = {"name": "web", "arn": "arn:tg/web", "target_type": "instance", "deregistration_delay": 300}
API = {"name": "api", "arn": "arn:tg/api", "target_type": "instance", "deregistration_delay": 60}
PODS = {"name": "pods", "arn": "arn:tg/pods", "target_type": "ip", "deregistration_delay": 30}


@pytest.mark.parametrize("state, held", [("healthy", True), ("initial", True), ("draining", True), ("unhealthy", False),
                                         ("unused", False), (None, False)])
def test_an_instance_is_held_while_it_takes_or_finishes_connections(state, held):
    found = targets.holding("i-1", [WEB, PODS], {"arn:tg/web": {"i-1": state} if state else {}, "arn:tg/pods": {"i-1": "healthy"}})
    assert found == ([{"kind": "target_group", "name": "web", "state": state, "timeout": 300 + targets.MARGIN_SECONDS}]
                     if held else [])


def test_each_hold_times_out_after_its_delay_plus_the_margin_unless_a_timeout_is_given():
    states = {"arn:tg/web": {"i-1": "draining"}, "arn:tg/api": {"i-1": "healthy"}}
    assert [hold["timeout"] for hold in targets.holding("i-1", [WEB, API], states)] == [330, 90]
    assert [hold["timeout"] for hold in targets.holding("i-1", [WEB, API], states, timeout=45)] == [45, 45]


@pytest.mark.parametrize("value, seconds", [(None, None), ("", None), ("  ", None), (0, 0), ("0", 0), ("5m", 300), (90, 90)])
def test_the_timeout_option_reads_as_a_duration_or_empty(value, seconds):
    assert targets.parse_deregistration_timeout(value) == seconds


@pytest.mark.parametrize("value", ["soon", -1, "1.5m", True])
def test_a_bad_timeout_is_refused_naming_the_option(value):
    with pytest.raises(PlanError) as raised:
        targets.parse_deregistration_timeout(value, "rolling_update_deregistration_timeout")
    assert str(raised.value).startswith("rolling_update_deregistration_timeout: ")
    assert "leave it empty" in str(raised.value)


def test_the_plan_shows_every_target_group_and_which_are_waited_for():
    assert [(tg["name"], tg["waited_for"]) for tg in targets.plan_target_groups([WEB, PODS])] == [("web", True), ("pods", False)]


def service(name, hostnames=(), ips=(), kind="LoadBalancer", namespace="shop"):
    ingress = [{"hostname": host} for host in hostnames] + [{"ip": ip} for ip in ips]
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"type": kind},
            "status": {"loadBalancer": {"ingress": ingress} if ingress else {}}}


def test_only_services_of_type_load_balancer_route_through_a_load_balancer():
    services = [service("web"), service("db", kind="ClusterIP"), service("ports", kind="NodePort")]
    assert [item["metadata"]["name"] for item in targets.load_balancer_services(services)] == ["web"]


def test_a_service_s_load_balancer_is_found_by_its_dns_name_and_its_instance_target_groups_are_watched():
    balancers = {"web-1.elb.us-east-1.amazonaws.com": [WEB, PODS]}
    found = targets.cluster_load_balancers([service("web", hostnames=["WEB-1.elb.us-east-1.amazonaws.com"])], balancers, {})
    # an ip target group lists pods, which the drain moves: only the instance one is watched
    assert found == {"target_groups": [dict(WEB, sources=["service shop/web"])], "unseen": []}


def test_a_load_balancer_that_cannot_be_read_is_named_with_its_address_and_why():
    services = [service("legacy", hostnames=["legacy-123.us-east-1.elb.amazonaws.com"]), service("metal", ips=["203.0.113.10"]),
                service("pending")]
    found = targets.cluster_load_balancers(services, {}, {})
    assert found["target_groups"] == []
    # a Service whose load balancer has no address yet routes nothing: not a reason to wait
    assert [(item["service"], item["address"]) for item in found["unseen"]] == [
        ("shop/legacy", "legacy-123.us-east-1.elb.amazonaws.com"), ("shop/metal", "203.0.113.10")]
    assert "Classic Load Balancer" in found["unseen"][0]["why"] and "IP address" in found["unseen"][1]["why"]


def test_target_group_bindings_of_instance_targets_are_watched_and_one_target_group_is_listed_once():
    bindings = [{"metadata": {"name": "web-tgb", "namespace": "shop"}, "spec": {"targetGroupARN": "arn:tg/web", "targetType": "instance"}},
                {"metadata": {"name": "pods-tgb", "namespace": "shop"}, "spec": {"targetGroupARN": "arn:tg/pods", "targetType": "ip"}},
                {"metadata": {"name": "api-tgb", "namespace": "ops"}, "spec": {"targetGroupARN": "arn:tg/api"}}]
    arns = targets.binding_target_groups(bindings)
    # ip targets are pods; a binding without a target type goes by its target group's type
    assert arns == {"arn:tg/web": ["targetgroupbinding shop/web-tgb"], "arn:tg/api": ["targetgroupbinding ops/api-tgb"]}
    assert targets.binding_target_groups(None) == {}
    described = {"arn:tg/web": (WEB, arns["arn:tg/web"]), "arn:tg/api": (API, arns["arn:tg/api"])}
    found = targets.cluster_load_balancers([service("web", hostnames=["web-1.elb"])], {"web-1.elb": [WEB]}, described)
    assert [(tg["name"], tg["sources"]) for tg in found["target_groups"]] == [
        ("api", ["targetgroupbinding ops/api-tgb"]), ("web", ["service shop/web", "targetgroupbinding shop/web-tgb"])]
    # the group's own target group is one entry with every source
    watched = targets.watched_target_groups([WEB], found["target_groups"])
    assert [(tg["name"], tg["sources"]) for tg in watched] == [
        ("api", ["targetgroupbinding ops/api-tgb"]), ("web", ["group", "service shop/web", "targetgroupbinding shop/web-tgb"])]
    assert [tg["sources"] for tg in targets.plan_target_groups(watched)] == [tg["sources"] for tg in watched]


@pytest.mark.parametrize("configured, unseen, seconds", [
    (None, [], 0),                      # every load balancer read: their target groups are waited for instead
    (None, [{"service": "shop/metal"}], targets.BLIND_DELAY_SECONDS),
    (0, [{"service": "shop/metal"}], 0),   # a number is the operator's, as given
    (90, [], 90),
])
def test_the_post_drain_delay_is_blind_only_where_a_load_balancer_cannot_be_read(configured, unseen, seconds):
    assert targets.post_drain_delay(configured, unseen) == seconds


def test_target_groups_given_to_a_step_are_checked_naming_the_option():
    assert targets.checked_target_groups([dict(WEB, deregistration_delay="120")])[0]["deregistration_delay"] == 120
    for bad in ("web", [{"name": "web"}], [dict(WEB, deregistration_delay="soon")]):
        with pytest.raises(PlanError) as raised:
            targets.checked_target_groups(bad)
        assert str(raised.value).startswith("target_groups: ")


def test_an_instance_is_still_served_while_an_instance_target_group_sends_it_new_connections():
    groups = [{"name": "web", "arn": "arn:web", "target_type": "instance", "deregistration_delay": 60},
              {"name": "api", "arn": "arn:api", "target_type": "instance", "deregistration_delay": 60},
              # an ip target group lists pods, never an instance
              {"name": "pods", "arn": "arn:pods", "target_type": "ip", "deregistration_delay": 60}]
    states = {"arn:web": {"i-1": "healthy", "i-2": "draining", "i-3": "initial"},
              "arn:api": {"i-1": "unused", "i-2": "healthy"}, "arn:pods": {"i-4": "healthy"}}
    assert targets.still_serving(groups, states, ["i-1", "i-2", "i-3", "i-4", "i-5"]) == {"i-1": ["web"], "i-2": ["api"], "i-3": ["web"]}
    # once each has left (draining, unused, gone), nothing
    assert targets.still_serving(groups, {"arn:web": {"i-1": "draining"}}, ["i-1"]) == {}
