# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain/volumes.py: which pods are pinned by their volume's node affinity, which claims one node at a time holds,
and where a pinned pod could start again."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.drain import volumes


def zonal(name, zone, key="topology.kubernetes.io/zone"):
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": [zone]}]}]}}}}


def claim(name, volume, modes=("ReadWriteOnce",), namespace="shop"):
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"volumeName": volume, "accessModes": list(modes)},
            "status": {"phase": "Bound", "accessModes": list(modes)}}


def pod(name, *claims):
    return {"metadata": {"name": name, "namespace": "shop"},
            "spec": {"volumes": [{"name": "v%d" % n, "persistentVolumeClaim": {"claimName": c}} for n, c in enumerate(claims)]
                     + [{"name": "scratch", "emptyDir": {}}]}}


def node(name, zone, ready=True, schedulable=True, taints=()):
    return {"name": name, "ready": ready, "schedulable": schedulable, "taints": list(taints),
            "labels": {"topology.kubernetes.io/zone": zone}}


def test_a_volume_pinned_to_a_zone_names_it_and_fits_only_nodes_there():
    volume = zonal("pv-a", "us-east-1a")
    assert volumes.volume_zones(volume) == ["us-east-1a"]
    assert volumes.fits(volume, {"topology.kubernetes.io/zone": "us-east-1a"})
    assert not volumes.fits(volume, {"topology.kubernetes.io/zone": "us-east-1b"})
    ebs = zonal("pv-b", "us-east-1b", key="topology.ebs.csi.aws.com/zone")
    assert volumes.fits(ebs, volumes.zone_labels("us-east-1b")) and volumes.volume_zones(ebs) == ["us-east-1b"]
    anywhere = {"metadata": {"name": "nfs"}, "spec": {}}
    assert volumes.volume_terms(anywhere) is None and volumes.fits(anywhere, {})


@pytest.mark.parametrize("operator, values, labels, expected", [
    ("NotIn", ["a"], {"k": "b"}, True), ("NotIn", ["a"], {"k": "a"}, False), ("NotIn", ["a"], {}, True),
    ("Exists", [], {"k": "x"}, True), ("DoesNotExist", [], {"k": "x"}, False),
    ("Gt", ["3"], {"k": "4"}, True), ("Lt", ["3"], {"k": "4"}, False), ("Gt", ["3"], {"k": "x"}, False),
])
def test_node_selector_operators_read_as_the_scheduler_reads_them(operator, values, labels, expected):
    volume = {"metadata": {"name": "v"}, "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "k", "operator": operator, "values": values}]}]}}}}
    assert volumes.fits(volume, labels) is expected


def test_pinned_volumes_and_exclusive_claims_of_a_pod():
    claims = {"shop/data": claim("data", "pv-a"), "shop/shared": claim("shared", "nfs", modes=("ReadWriteMany",)),
              "shop/loose": {"metadata": {"name": "loose", "namespace": "shop"}, "spec": {}, "status": {"phase": "Pending"}}}
    found = {"pv-a": zonal("pv-a", "us-east-1a"), "nfs": {"metadata": {"name": "nfs"}, "spec": {}}}
    db = pod("db", "data", "shared", "loose")
    assert volumes.claim_names(db) == ["data", "shared", "loose"]
    assert volumes.pinned_volumes(db, claims, found) == [
        {"claim": "data", "volume": "pv-a", "zones": ["us-east-1a"], "exclusive": True}]
    assert volumes.exclusive_claims(db, claims) == ["data"]
    assert volumes.pinned_volumes(pod("web"), claims, found) == [] and volumes.exclusive_claims(pod("web"), claims) == []


def test_homes_are_schedulable_nodes_that_stay_and_zones_new_nodes_come_in():
    volume = zonal("pv-a", "us-east-1a")
    nodes = [node("old-a", "us-east-1a"), node("new-a", "us-east-1a", ready=False), node("cordoned-a", "us-east-1a", schedulable=False),
             node("tainted-a", "us-east-1a", taints=[{"key": "nodeops.rollout/outdated", "effect": "NoSchedule"}]),
             node("new-b", "us-east-1b")]
    assert volumes.homes(volume, nodes, leaving=["old-a"]) == []
    assert volumes.homes(volume, nodes) == ["old-a"]
    assert volumes.homes(volume, nodes, leaving=["old-a"], new_zones=["us-east-1b", "us-east-1a"]) == ["zone:us-east-1a"]


def attachment(volume, node, attached=True, deleting=False):
    meta = {"name": "csi-" + volume + node}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-25T07:00:00Z"
    return {"metadata": meta, "spec": {"attacher": "ebs.csi.aws.com", "nodeName": node, "source": {"persistentVolumeName": volume}},
            "status": {"attached": attached}}


def test_attachments_hold_their_node_until_they_are_gone_and_name_their_zones():
    attached = volumes.attachments_by_node([attachment("pv-a", "n1"), attachment("pv-b", "n1", attached=False),
                                            attachment("pv-c", "n2", deleting=True), {"metadata": {}, "spec": {}}])
    assert attached == {"n1": [{"volume": "pv-a", "state": "attached"}, {"volume": "pv-b", "state": "attaching"}],
                        "n2": [{"volume": "pv-c", "state": "detaching"}]}
    assert volumes.volume_holds("n2", attached, 360) == [{"kind": "volume", "name": "pv-c", "state": "detaching", "timeout": 360}]
    assert volumes.volume_holds("n3", attached, 360) == []
    known = {"pv-a": zonal("pv-a", "us-east-1a"), "pv-b": {"metadata": {"name": "pv-b"}, "spec": {}}}
    assert volumes.pinned_zones("n1", attached, known) == ["us-east-1a"] and volumes.pinned_zones("n2", attached, known) == []


def test_a_volume_is_stranded_when_no_node_that_stays_and_no_new_zone_fits_it():
    attached = volumes.attachments_by_node([attachment("pv-a", "old-a"), attachment("pv-d", "old-a")])
    known = {"pv-a": zonal("pv-a", "us-east-1a"), "pv-d": dict(zonal("pv-d", "us-east-1d"), spec=dict(
        zonal("pv-d", "us-east-1d")["spec"], claimRef={"namespace": "shop", "name": "data"}))}
    nodes = [node("old-a", "us-east-1a")]
    assert volumes.stranded_volumes(["old-a"], attached, known, nodes, ["us-east-1a", "us-east-1b"]) == [
        {"node": "old-a", "volume": "pv-d", "zones": ["us-east-1d"], "claim": "shop/data"}]
    assert volumes.stranded_volumes(["old-a"], attached, known, nodes + [node("keep-d", "us-east-1d")], ["us-east-1a"]) == []
