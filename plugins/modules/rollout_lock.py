#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rollout_lock
short_description: Take, renew or release the lock that lets one rollout at a time change a node group
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Holds a C(coordination.k8s.io/v1) Lease named after the node group in O(namespace), with O(holder) as its
    C(holderIdentity), so that two runs on one group (an AWX schedule and a manual launch, or a job left running)
    never drain the same nodes and write the group's state at once.
  - The Lease of group O(name) is C(nodeops-rollout-<name>). A name that is not already a lower case DNS label
    (letters, digits, dashes) is lower-cased, every other character becomes a dash, and the first 8 hex digits of
    the SHA-256 of the exact name are appended; names too long for 63 characters are cut and get the same suffix.
  - With O(state=acquired) the Lease is taken when there is none, when it has no holder, or when its holder's
    C(renewTime) plus C(leaseDurationSeconds) is past (the run that held it is presumed dead; the take-over counts a
    transition). A Lease O(holder) already holds is renewed, keeping its C(acquireTime). A Lease another holder has
    renewed recently enough is not touched, and the module fails with one message naming the holder, when it
    acquired and renewed the Lease and when it expires. These are the rules of client-go's leader election.
  - A Lease this module takes records the run's own process in its annotation C(nodeops.rollout/holder-process) - the
    host name and boot of the machine, the pid of the topmost C(ansible-playbook) above the module and its start time.
  - With O(state=released) a Lease O(holder) holds gets an empty C(holderIdentity), a duration of 1 second and the
    times set to now (client-go's C(ReleaseOnCancel)), so the next run can take it at once. A Lease that is missing,
    free or held by another identity is left as it is.
  - Every write carries the C(resourceVersion) that was read, so of two runs deciding at once only one succeeds.
    The other gets 409 Conflict (or AlreadyExists), reads the Lease again and decides again.
  - Times are read with the controller's clock, so the controllers that run rollouts need synchronized clocks
    (NTP), as every Lease user does.
  - This is a module of its own because the lock must be taken before the first change to a node group, and
    renewed between the steps of the rollout (every batch, the scale down), each of which is a task of the role; no
    other module runs at all those points.
options:
  name:
    description:
      - The node group (Auto Scaling group) name the lock is for.
    type: str
    required: true
  namespace:
    description:
      - The namespace of the Lease. It must exist.
    type: str
    default: kube-system
  holder:
    description:
      - The identity of this run, stored as the Lease's C(holderIdentity). Every call of one run must give the same
        value, and two runs must never share one.
      - Make it say who runs, for a person reading the refusal, for example V(awx-job-42@awx-ee-7f9c4/0a1b2c3d)
        (the rolling_update role uses C(<AWX job id or user>@<controller host>/<random token>)).
    type: str
    required: true
  duration:
    description:
      - How long the Lease stays valid after each renewal without another one - seconds, or a duration such as
        V(90s), V(30m), V(1h); a list of them is added up (the role passes the timeouts of its longest step).
      - It must be longer than the longest stretch between two renewals, or another run may take the group over
        while this one still works on it. It is also how long a run that died keeps others waiting.
      - Used with O(state=acquired).
    type: raw
    default: 30m
  held_until:
    description:
      - The RV(lease.expires_at) this run's previous call returned. With O(min_valid_for), a renewal is skipped (no
        request at all, RV(action=keep)) while the Lease stays ours for at least that long; nobody may take a Lease
        over before it expires, so there is nothing to read.
      - Used with O(state=acquired). Give both or neither.
    type: str
  min_valid_for:
    description:
      - How long the Lease must still be valid for a renewal to be skipped (see O(held_until)) - seconds, or a duration
        such as V(40m). Give at least the longest stretch until the next renewal.
    type: raw
  unless_renewed_within:
    description:
      - With O(state=released), release the lock of a run that is gone - O(holder) is that run's identity, not this
        one's - only when that run is not alive as far as can be known; otherwise fail, saying why it is taken for alive
        and when its lock frees itself. The playbook C(nodeops.rollout.unlock) releases this way.
      - Where the Lease records the holder's process on this machine (same host name, same boot), the run is alive exactly
        while that process runs (the same pid with the same start time). The lock of a run killed there is released at
        once, that of a run still running is not, whatever this option says.
      - Elsewhere (the run was on another machine, or the Lease records no process), the run is taken for gone once it
        has not renewed the lock for this long (seconds or a duration such as V(2m)).
      - An empty value means the longest a live holder leaves its Lease unrenewed, from the Lease's own duration - half
        of it, plus a margin of 10 seconds or a fifth of the duration, whichever is more (at most the duration).
    type: raw
  state:
    description:
      - V(acquired) takes or renews the lock, V(released) gives it up.
    type: str
    choices: [acquired, released]
    default: acquired
extends_documentation_fragment:
  - nodeops.rollout.k8s
  - nodeops.rollout.aws
  - nodeops.rollout.attributes.K8S
attributes:
  check_mode:
    support: full
    details: Reads the Lease and reports what would be done (and fails when another run holds it); nothing is written.
  diff_mode:
    support: full
    details: Shows the Lease's holder before, and its holder and expiry after, when the Lease is written.
notes:
  - The AWS options are used only with O(eks_cluster).
  - Needs C(get), C(create) and C(update) on C(leases) in group C(coordination.k8s.io) in O(namespace) (see
    C(docs/rbac.md)).
  - A run that was killed stops renewing its lock, which then frees itself within its duration (the rolling_update role
    holds it for 2 minutes and renews it while it runs). To release it sooner, run the playbook C(nodeops.rollout.unlock)
    with the holder the refusal names, or O(state=released) with that O(holder) and O(unless_renewed_within) (see EXAMPLES)
    - on the machine the run ran on at once, once its process has ended; elsewhere once it has stopped renewing the lock.
seealso:
  - name: Kubernetes Leases
    description: How Leases are used for leader election and locks.
    link: https://kubernetes.io/docs/concepts/architecture/leases/
  - module: nodeops.rollout.asg_surge
"""

EXAMPLES = r"""
- name: Take the lock of node group workers before changing anything (fails if another run holds it)
  nodeops.rollout.rollout_lock:
    name: workers
    holder: "awx-job-{{ awx_job_id | default('manual') }}@{{ lookup('ansible.builtin.pipe', 'uname -n') }}"
    duration: 45m
  register: workers_lock

- name: Renew it between two steps of the rollout
  nodeops.rollout.rollout_lock:
    name: workers
    holder: "{{ workers_lock.lease.holder }}"
    duration: 45m

- name: Renew it only when less than 40 minutes of it are left (no request otherwise)
  nodeops.rollout.rollout_lock:
    name: workers
    holder: "{{ workers_lock.lease.holder }}"
    duration: 45m
    held_until: "{{ workers_lock.lease.expires_at }}"
    min_valid_for: 40m
  register: workers_lock

- name: Give it up when the rollout is over
  nodeops.rollout.rollout_lock:
    name: workers
    holder: "{{ workers_lock.lease.holder }}"
    state: released

- name: Free a group whose run was killed - release the lock of the holder named, unless it renewed it in the last 2 minutes
  nodeops.rollout.rollout_lock:
    name: workers
    holder: awx-job-41@awx-ee-7f9c4/0a1b2c3d
    state: released
    unless_renewed_within: 2m
"""

RETURN = r"""
action:
  description:
    - What was done (or would be done, in check mode). V(create) made the Lease; V(acquire) took a Lease without
      holder; V(take_over) took an expired Lease from another holder; V(renew) renewed our own; V(release) cleared our
      hold; V(none) left the Lease as it was (O(state=released) on a Lease that is missing, free or not ours);
      V(keep) sent no request, the Lease this run holds being valid for at least O(min_valid_for) (its RV(lease) then
      has only C(name), C(namespace), C(holder) and C(expires_at)).
    - V(refuse) comes with a failure when another run holds the Lease, or, with O(unless_renewed_within), when the
      holder renewed it within that time.
  returned: success, and on a refusal
  type: str
  sample: take_over
previous_holder:
  description: The C(holderIdentity) the Lease had before this call, or null when it had none.
  returned: success
  type: str
  sample: awx-job-41@awx-ee-7f9c4/0a1b2c3d
was_expired:
  description: With O(state=acquired) and RV(action=renew), whether our own Lease had already expired (a step took longer than O(duration)).
  returned: when action is renew
  type: bool
reason:
  description:
    - Why nothing was released - V(no lease), V(not held), or V(held by <holder>).
    - With O(unless_renewed_within) and RV(action=release), why the run was taken for gone (its process on this machine
      has ended, or it has not renewed the lock for longer than a live run would).
  returned: when state is released and action is none, or released with O(unless_renewed_within)
  type: str
holder:
  description: On a refusal, the holder that keeps the lock.
  returned: failure, when another run holds the lock
  type: str
lease:
  description: The Lease after the call (as it would be, in check mode); on a refusal, its name, namespace, holder and expiry.
  returned: success, and on a refusal
  type: dict
  contains:
    name:
      description: The Lease's name.
      type: str
    namespace:
      description: The Lease's namespace.
      type: str
    holder:
      description: C(spec.holderIdentity); empty when nobody holds the lock.
      type: str
    acquire_time:
      description: C(spec.acquireTime), when the holder took the Lease.
      type: str
    renew_time:
      description: C(spec.renewTime), when the holder last renewed it.
      type: str
    lease_duration_seconds:
      description: C(spec.leaseDurationSeconds).
      type: int
    lease_transitions:
      description: How many times the Lease changed hands.
      type: int
    expires_at:
      description: C(renewTime) plus C(leaseDurationSeconds), when another run may take the Lease over.
      type: str
    resource_version:
      description: The Lease's C(metadata.resourceVersion).
      type: str
  sample:
    name: nodeops-rollout-workers
    namespace: kube-system
    holder: awx-job-42@awx-ee-7f9c4/0a1b2c3d
    acquire_time: "2026-11-23T10:00:00.123456Z"
    renew_time: "2026-11-23T10:12:40.654321Z"
    lease_duration_seconds: 2700
    lease_transitions: 1
    expires_at: "2026-11-23T10:57:40.654321Z"
    resource_version: "18231"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC, k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.locks import run_rollout_lock


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC)
    spec.update(K8S_ARGUMENT_SPEC)
    spec.update(
        name=dict(type="str", required=True),
        namespace=dict(type="str", default="kube-system"),
        holder=dict(type="str", required=True),
        duration=dict(type="raw", default="30m"),
        held_until=dict(type="str"),
        min_valid_for=dict(type="raw"),
        unless_renewed_within=dict(type="raw"),
        state=dict(type="str", choices=["acquired", "released"], default="acquired"),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_rollout_lock(module, k8s_client)


if __name__ == "__main__":
    main()
