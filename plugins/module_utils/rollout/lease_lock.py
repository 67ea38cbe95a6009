# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One rollout per node group at a time: what to do with the group's ``coordination.k8s.io/v1`` Lease.

Pure: the Lease as the API returns it (a JSON dict, or None when there is none), our holder identity and the
time now in, a decision out; no kubernetes import. The I/O half (``locks.py``) reads the Lease, calls
:func:`decide_acquire` or :func:`decide_release`, and writes the returned spec with the resourceVersion it read,
so that of two runs deciding at once only one write succeeds (the other gets 409 and decides again).

The semantics are client-go leader election's (``tools/leaderelection``):

- a Lease with no holder, or whose ``renewTime + leaseDurationSeconds`` is past, is free: we take it, and count a
  transition when it was someone else's;
- a Lease we hold is renewed (its ``acquireTime`` and transitions kept);
- a Lease another identity holds and has renewed recently enough is refused, naming the holder and when the
  Lease expires;
- on release (``ReleaseOnCancel``) the holder is cleared, the duration set to 1 second and the times to now, so
  the next run may acquire at once; a Lease that is no longer ours is left alone.

A held Lease whose times or duration cannot be read is refused, not taken over: nobody can tell when it
expires, and taking it could put two rollouts on one group.

The release of a run said to be gone (the unlock playbook) asks what can be known of that run: where the Lease records
the holder's process and that process is on this machine, whether it still runs (:func:`decide_release`'s ``process``,
read by ``locks.py``); elsewhere, whether its renewals stopped - a live holder renews its Lease at least every
:func:`renewal_gap` seconds.
"""

from __future__ import annotations

import datetime
import hashlib
import re

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError

LEASE_PREFIX = "nodeops-rollout-"
# A DNS-1123 label, short enough to be a label value and readable in `kubectl get leases`.
MAX_NAME_LENGTH = 63
HASH_LENGTH = 8
INT32_MAX = 2 ** 31 - 1
MICRO_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

# The rolling_update role's lock duration by default, and the shortest it allows: how long a dead run's lock keeps the next
# run waiting, and what must outlast the longest stretch of the role's tasks between two renewals (the modules that wait
# renew it themselves, lock_keeper).
DEFAULT_SECONDS = 120
MIN_SECONDS = 15

_DNS_LABEL_CHARS = re.compile(r"[^a-z0-9]+")
_RFC3339 = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$")


class LockError(RolloutError, ValueError):
    """Bad input; the message names the field and what is allowed."""


def lease_name(group):
    """The Lease of node group ``group``: ``nodeops-rollout-<group>`` as a DNS-1123 label.

    A group name that is already lower case letters, digits and single dashes is kept as it is. Any other name is
    lower-cased, every run of other characters becomes one dash, and the first 8 hex digits of the SHA-256 of the
    exact group name are appended, so that two groups whose names differ only in case or punctuation
    (``Workers_A``, ``workers-a``) never share a Lease. A name too long for 63 characters is cut and hashed too.
    """
    if not isinstance(group, str) or not group.strip():
        raise LockError("name: %r is not allowed; use the node group's (Auto Scaling group's) name" % (group,))
    slug = _DNS_LABEL_CHARS.sub("-", group.lower()).strip("-")
    plain = LEASE_PREFIX + slug
    if slug == group and len(plain) <= MAX_NAME_LENGTH:
        return plain
    digest = hashlib.sha256(group.encode("utf-8")).hexdigest()[:HASH_LENGTH]
    room = MAX_NAME_LENGTH - len(LEASE_PREFIX) - HASH_LENGTH - 1
    slug = slug[:room].strip("-")
    return "%s%s-%s" % (LEASE_PREFIX, slug, digest) if slug else LEASE_PREFIX + digest


def micro_time(moment):
    """``moment`` (an aware datetime) as a Kubernetes MicroTime: UTC, six fractional digits, ``Z``.

    The API server decodes MicroTime with Go's ``2006-01-02T15:04:05.000000Z07:00`` and refuses anything else, such
    as the ``...:05+00:00`` Python's isoformat() gives for a whole second."""
    return moment.astimezone(datetime.timezone.utc).strftime(MICRO_TIME_FORMAT)


def parse_time(text):
    """An RFC 3339 time (any number of fractional digits) as an aware datetime, or None when it is not one."""
    if not isinstance(text, str):
        return None
    match = _RFC3339.match(text.strip())
    if not match:
        return None
    year, month, day, hour, minute, second = (int(group) for group in match.groups()[:6])
    fraction = match.group(7) or ".0"
    micros = int((fraction[1:] + "000000")[:6])
    zone = match.group(8).upper()
    if zone == "Z":
        offset = datetime.timezone.utc
    else:
        sign = -1 if zone[0] == "-" else 1
        offset = datetime.timezone(sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        return datetime.datetime(year, month, day, hour, minute, second, micros, tzinfo=offset)
    except ValueError:
        return None


def short_time(moment):
    """``2026-11-23T10:15:00Z``: the times a person reads in a message, to the second."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_holder(holder):
    """The holder identity, stripped; refused when empty (an empty holder means "nobody" in a Lease)."""
    if not isinstance(holder, str) or not holder.strip():
        raise LockError("holder: %r is not allowed; use a non-empty identity of this run, for example "
                        "'awx-job-42@awx-ee-7f9c4/0a1b2c3d'" % (holder,))
    return holder.strip()


def check_duration(seconds):
    """Whole seconds of a Lease's duration: more than 0 and at most what an int32 holds (the API's type)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 0 < seconds <= INT32_MAX:
        raise LockError("duration: %r is not allowed; use a duration of at least one second" % (seconds,))
    return seconds


def still_held(held_until, min_valid_for, now):
    """Whether a renewal can wait: the Lease this run wrote last (``held_until``, the ``expires_at`` its previous call
    returned) stays ours for at least ``min_valid_for`` more seconds. Nobody may take a Lease over before it expires,
    so no read is needed to know that. Both or neither given; raises LockError naming a bad one."""
    if held_until is None and min_valid_for is None:
        return False
    if held_until is None or min_valid_for is None:
        raise LockError("held_until and min_valid_for: %s is not allowed alone; give both (the previous call's "
                        "lease.expires_at and how long the Lease must still hold), or neither"
                        % ("held_until" if held_until is not None else "min_valid_for"))
    until = parse_time(held_until)
    if until is None:
        raise LockError("held_until: %r is not allowed; use the lease.expires_at of this run's previous call, an RFC 3339 "
                        "time such as 2026-11-23T10:57:40.654321Z" % (held_until,))
    return (until - now).total_seconds() >= min_valid_for


def lease_state(lease, now):
    """What a Lease says, read once: ``holder`` ("" for nobody), ``acquired``/``renewed``/``expires`` (datetimes
    or None), ``duration`` (seconds or None), ``transitions``, ``resource_version``, ``expired`` and, when the
    Lease is held but its renewal or duration cannot be read, ``unreadable`` saying which field is wrong."""
    spec = (lease or {}).get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    if not isinstance(holder, str):
        holder = str(holder)
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, bool) or not isinstance(duration, int) or duration <= 0:
        duration = None
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, bool) or not isinstance(transitions, int) or transitions < 0:
        transitions = 0
    acquired, renewed = parse_time(spec.get("acquireTime")), parse_time(spec.get("renewTime"))
    state = {"holder": holder, "acquired": acquired, "renewed": renewed, "duration": duration, "transitions": transitions,
             "resource_version": ((lease or {}).get("metadata") or {}).get("resourceVersion"), "expires": None,
             "expired": True, "unreadable": None}
    if renewed is not None and duration is not None:
        state["expires"] = renewed + datetime.timedelta(seconds=duration)
        state["expired"] = state["expires"] < now
    elif holder:
        if renewed is None:
            state["unreadable"] = "spec.renewTime %r is not a time" % (spec.get("renewTime"),)
        else:
            state["unreadable"] = "spec.leaseDurationSeconds %r is not a number of seconds" % (spec.get("leaseDurationSeconds"),)
        state["expired"] = False
    return state


def _spec(holder, now, duration, acquired, transitions):
    return {"holderIdentity": holder, "leaseDurationSeconds": duration, "acquireTime": micro_time(acquired),
            "renewTime": micro_time(now), "leaseTransitions": transitions}


def decide_acquire(lease, holder, now, duration):
    """What to do to hold the Lease for ``duration`` seconds from ``now``.

    Returns ``{"action", "spec", "state"}``: ``action`` is one of ``create`` (no Lease yet), ``acquire`` (free: no
    holder), ``take_over`` (another holder's Lease has expired), ``renew`` (ours) or ``refuse`` (another holder's,
    not expired or unreadable; ``spec`` is None then); ``state`` is :func:`lease_state` of the Lease as read.
    """
    holder = check_holder(holder)
    duration = check_duration(duration)
    if lease is None:
        return {"action": "create", "spec": _spec(holder, now, duration, now, 0), "state": None}
    state = lease_state(lease, now)
    if state["holder"] == holder:
        acquired = state["acquired"] or now
        return {"action": "renew", "spec": _spec(holder, now, duration, acquired, state["transitions"]), "state": state}
    if not state["holder"]:
        return {"action": "acquire", "spec": _spec(holder, now, duration, now, state["transitions"] + 1), "state": state}
    if state["unreadable"] or not state["expired"]:
        return {"action": "refuse", "spec": None, "state": state}
    return {"action": "take_over", "spec": _spec(holder, now, duration, now, state["transitions"] + 1), "state": state}


# What a live holder's renewals may lag behind on top of half its Lease's duration (the keeper's check interval, a
# renewal's request, a task between two renewals of the role), at least.
RENEWAL_MARGIN_SECONDS = 10


def renewal_gap(duration):
    """The longest a live holder leaves a Lease of ``duration`` seconds unrenewed: the role renews it once no more than
    half is left (its lock_min_valid), the modules that wait renew it when less than half is left; plus a margin
    (:data:`RENEWAL_MARGIN_SECONDS` or a fifth of the duration, whichever is more), never more than the duration."""
    duration = check_duration(duration)
    return min(duration, duration // 2 + max(RENEWAL_MARGIN_SECONDS, duration // 5))


def decide_release(lease, holder, now, quiet_for=None, process=None):
    """What to do to give the Lease up: ``{"action": "release" | "none" | "refuse", "spec", "state", "reason"}``.

    Only ``holder``'s Lease is released (client-go's ReleaseOnCancel: no holder, a duration of 1 second, the times set
    to now, transitions kept). No Lease, a free one, or one another run holds now (ours expired and was taken over)
    is left as it is; ``reason`` says which.

    The release of a run that is gone, by another process, gives ``quiet_for`` (seconds, or ``"renewals"``: the
    :func:`renewal_gap` of the Lease's own duration) and ``process``, what the caller could see of the holder's process
    as the Lease records it (None when it records none): ``{"here": whether it is on this machine, "alive": whether it
    still runs (when here), "pid", "host"}``. A holder whose process is on this machine is alive exactly while that
    process runs; elsewhere, a Lease its holder renewed less than ``quiet_for`` seconds ago is refused: a run that is
    alive renews it more often than that (one whose renewal cannot be read is released: the caller says that run is
    gone). ``reason`` of a release so guarded says why the holder is taken for gone."""
    holder = check_holder(holder)
    if lease is None:
        return {"action": "none", "spec": None, "state": None, "reason": "no lease"}
    state = lease_state(lease, now)
    if not state["holder"]:
        return {"action": "none", "spec": None, "state": state, "reason": "not held"}
    if state["holder"] != holder:
        return {"action": "none", "spec": None, "state": state, "reason": "held by %s" % state["holder"]}
    release = {"action": "release", "spec": _spec("", now, 1, now, state["transitions"]), "state": state, "reason": None}
    if quiet_for is None:
        return release
    if process and process.get("here"):
        if process.get("alive"):
            return {"action": "refuse", "spec": None, "state": state, "reason": "process %s runs" % process.get("pid")}
        return dict(release, reason="its process %s on this machine (%s) has ended" % (process.get("pid"), process.get("host")))
    if quiet_for == "renewals":
        quiet_for = renewal_gap(state["duration"]) if state["duration"] else None
    if quiet_for is None:
        return dict(release, reason="its Lease's duration cannot be read")
    if state["renewed"] is not None and (now - state["renewed"]).total_seconds() < quiet_for:
        return {"action": "refuse", "spec": None, "state": state, "reason": "renewed within %s" % _in_words(quiet_for)}
    if state["renewed"] is None:
        return dict(release, reason="its renewal cannot be read")
    return dict(release, reason="not renewed for %s, longer than a live run leaves it (%s)"
                % (_in_words((now - state["renewed"]).total_seconds()), _in_words(quiet_for)))


def _in_words(seconds):
    seconds = max(0, int(round(seconds)))
    if seconds < 120:
        return "%ds" % seconds
    if seconds < 7200:
        return "%dm" % (seconds // 60)
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)


def unlock_command(holder):
    """The command that releases the lock of a run that is gone, as a person types it."""
    return "ansible-playbook nodeops.rollout.unlock -i <inventory> -e rolling_update_unlock_holder='%s'" % holder


def _held_since(state):
    if state["unreadable"]:
        return "; its %s, so nobody can tell when it expires" % state["unreadable"]
    return "%s, renewed %s" % (" since %s" % short_time(state["acquired"]) if state["acquired"] else "", short_time(state["renewed"]))


def refusal_message(group, namespace, name, state, now):
    """Why this run may not roll ``group``: who holds its Lease, since when, when it frees itself, and what to do."""
    head = "node group %s is locked by another run: Lease %s/%s is held by %s%s" % (
        group, namespace, name, state["holder"], _held_since(state))
    if state["unreadable"]:
        frees = "If that run is gone, release its lock"
    else:
        frees = ("A run renews its lock while it works: if that run is alive, wait for it to end. If it is gone, its lock "
                 "frees itself at %s (in %s), and the next run takes the group over. To release it sooner (from the machine "
                 "it ran on at once, as soon as its process has ended; from elsewhere once it has stopped renewing it)"
                 % (short_time(state["expires"]), _in_words((state["expires"] - now).total_seconds())))
    return "%s. Nothing was changed. %s: %s" % (head, frees, unlock_command(state["holder"]))


def release_refusal(group, namespace, name, state, quiet_for, now, process=None):
    """Why the lock of ``group`` is not released for a run said to be gone, from what could be known of it
    (:func:`decide_release`'s ``process`` and ``quiet_for``): its process runs on this machine, or, elsewhere, its
    holder renewed it lately."""
    head = "node group %s: Lease %s/%s is held by %s" % (group, namespace, name, state["holder"])
    if process and process.get("here"):
        return ("%s, whose process %s runs on this machine (%s): that run is alive. Nothing was changed. Stop that run "
                "(it releases its lock as it ends), or let it finish." % (head, process.get("pid"), process.get("host")))
    if quiet_for == "renewals":
        quiet_for = renewal_gap(state["duration"])
    where = ("its process is on another machine (%s), so" % process.get("host") if process
             else "the Lease records no process of it that this machine could look at, so")
    sooner = state["renewed"] + datetime.timedelta(seconds=quiet_for)
    frees = ("at %s (in %s)" % (short_time(state["expires"]), _in_words((state["expires"] - now).total_seconds()))
             if state["expires"] else "once it has not renewed it for %s" % _in_words(quiet_for))
    return ("%s, which renewed it %s ago (%s); %s whether it is alive is told by its renewals: a live run renews its lock "
            "at least every %s, and this one did within that: that run is taken for alive. Nothing was changed. If it is gone, run "
            "the unlock again from %s (in %s), once it has stopped renewing, or its lock frees itself %s."
            % (head, _in_words((now - state["renewed"]).total_seconds()), short_time(state["renewed"]), where,
               _in_words(quiet_for), short_time(sooner), _in_words((sooner - now).total_seconds()), frees))


def lease_result(lease, now):
    """The Lease as the module reports it (times to the microsecond, as stored)."""
    state = lease_state(lease, now)
    spec = (lease or {}).get("spec") or {}
    return {"holder": state["holder"], "acquire_time": spec.get("acquireTime"), "renew_time": spec.get("renewTime"),
            "lease_duration_seconds": spec.get("leaseDurationSeconds"), "lease_transitions": state["transitions"],
            "expires_at": micro_time(state["expires"]) if state["expires"] else None,
            "resource_version": state["resource_version"]}
