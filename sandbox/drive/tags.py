"""What an operator writes on the node group by hand: the pause request, and any tag set or deleted."""

from sandbox.drive.convergence import GROUP

PAUSE_TAG = "nodeops.rollout/pause"


def set_tag(sandbox, key, value, name=GROUP):
    sandbox.aws("autoscaling").create_or_update_tags(Tags=[
        {"ResourceId": name, "ResourceType": "auto-scaling-group", "Key": key, "Value": value, "PropagateAtLaunch": False}])


def delete_tag(sandbox, key, name=GROUP):
    sandbox.aws("autoscaling").delete_tags(Tags=[{"ResourceId": name, "ResourceType": "auto-scaling-group", "Key": key}])
