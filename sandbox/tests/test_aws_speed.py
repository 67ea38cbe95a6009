"""The sandbox's speed patches of moto (sandbox/aws/speed.py) answer exactly as moto's own code does.

One AwsSandbox with two groups; some instances terminated (they keep their reservations, as in moto) so that every
lookup sees running, terminated and just-launched instances. Each patched lookup is asked the same questions as moto's
own function and must give the same instances in the same order, or the same error.
"""

import pytest
from moto.ec2.exceptions import InvalidInstanceIdError

from sandbox.aws import speed

from .test_aws_fidelity import client, running, wait_for


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    for sandbox in running(tmp_path_factory, boot_seconds=0.0):
        estate = sandbox.provision(nodes=6, azs=3, groups=2)
        asg = client(sandbox, "autoscaling")
        groups = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[group["name"] for group in estate["groups"]])["AutoScalingGroups"]
        members = sorted(instance["InstanceId"] for instance in groups[0]["Instances"])
        for instance_id in members[:2]:   # replaced: each leaves a terminated instance and launches another
            asg.terminate_instance_in_auto_scaling_group(InstanceId=instance_id, ShouldDecrementDesiredCapacity=False)
        client(sandbox, "ec2").terminate_instances(InstanceIds=[members[2]])
        assert wait_for(lambda: len(sandbox.instances()) >= 12)
        yield sandbox._backend("ec2")   # pylint: disable=protected-access


def _shape(answer):
    """Instances as ids, reservations as (id, [instance ids]), in order."""
    if isinstance(answer, list):
        return [_shape(item) for item in answer]
    if hasattr(answer, "instances"):
        return (answer.id, [instance.id for instance in answer.instances])
    return getattr(answer, "id", answer)


def _ask(function, backend, *args, **kwargs):
    try:
        return "answer", _shape(function(backend, *args, **kwargs))
    except InvalidInstanceIdError as error:
        return "error", error.code, str(error)


def _ids(backend):
    return [instance.id for reservation in backend.reservations.values() for instance in reservation.instances]


def _questions(backend):
    ids = _ids(backend)
    first, last = ids[0], ids[-1]
    by_id = {"instance-id": [first, last]}   # DescribeInstances' filters (moto's filter_dict)
    running_only = {"instance-state-name": ["running"]}
    running_state = [{"name": "instance-state-name", "values": ["running"]}]   # Instance.applies' filters
    return [
        ("all_reservations", (), {}),
        ("all_reservations", (), {"filters": by_id}),
        ("all_reservations", (), {"filters": running_only}),
        ("all_reservations", (), {"filters": {"instance-state-name": ["terminated"]}}),
        ("all_reservations", (), {"filters": {"instance-id": ["i-00000000000000000"]}}),
        ("get_reservations_by_instance_ids", ([last, first],), {}),
        ("get_reservations_by_instance_ids", ([last, first],), {"filters": running_only}),
        ("get_reservations_by_instance_ids", ([first, "i-00000000000000000"],), {}),
        ("get_instance", (last,), {}),
        ("get_instance", ("i-00000000000000000",), {}),
        ("get_instance_by_id", (first,), {}),
        ("get_instance_by_id", ("i-00000000000000000",), {}),
        ("get_multi_instances_by_id", ([last, first, last],), {}),
        ("get_multi_instances_by_id", (ids,), {"filters": running_state}),
        ("get_multi_instances_by_id", ([first, "i-00000000000000000", "i-00000000000000001"],), {}),
        ("all_instances", (), {}),
        ("all_instances", (), {"filters": running_state}),
        ("all_instances", (), {"filters": [{"name": "instance-state-name", "values": ["terminated"]}]}),
        ("all_running_instances", (), {}),
        ("all_running_instances", (), {"filters": running_state}),
    ]


def test_the_estate_holds_running_and_terminated_instances(backend):
    states = {instance.state for reservation in backend.reservations.values() for instance in reservation.instances}
    assert states == {"running", "terminated"}


def test_every_patched_lookup_answers_as_moto_does(backend):
    assert set(speed.MOTO) == set(speed.INSTANCE_LOOKUPS)
    for name, args, kwargs in _questions(backend):
        patched, moto = speed.INSTANCE_LOOKUPS[name], speed.MOTO[name]
        assert _ask(patched, backend, *args, **kwargs) == _ask(moto, backend, *args, **kwargs), (name, args, kwargs)


def test_a_filtered_answer_leaves_moto_s_own_reservations_whole(backend):
    before = [(reservation.id, list(reservation.instances)) for reservation in backend.reservations.values()]
    speed.INSTANCE_LOOKUPS["all_reservations"](backend, filters={"instance-id": [_ids(backend)[0]]})
    speed.INSTANCE_LOOKUPS["get_reservations_by_instance_ids"](backend, [_ids(backend)[-1]])
    assert [(reservation.id, list(reservation.instances)) for reservation in backend.reservations.values()] == before
