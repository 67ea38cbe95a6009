# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Keep a node group's lock while a module that may wait for long runs: the ``lock`` option of the modules that wait.

A run holds its group's Lease for a short duration (``rolling_update_lock_duration``, 2 minutes by default) and keeps it
alive while it lives, as Kubernetes' own leader election does: the role renews it at every step, and each module of the
rollout (a drain, the validation, a step's waits for boots, deregistration, volume detach, bake time and checkpoints,
the surge's and the terminations' waits, and the reads and taints between them) renews it from its own process while
it runs. A run that dies stops renewing, so
its lock expires within one duration and the next run takes it over with no human step.

:class:`LockKeeper` is a daemon thread. It renews when less than half the duration is left of what this process knows
(the role's ``held_until``, then its own renewals), so a module that ends quickly makes no request at all; a renewal
reads the Lease first and writes only when another module of the run has not renewed it meanwhile. It stops
renewing, and stops the module, when

- the Lease is no longer ours (another run holds it: ours expired, and it was taken over), or our hold expires while
  renewals fail (the API is out of reach): the module must not change the group without the lock;
- the run that started the module is gone (its controller process, or the processes between, ended): an orphaned
  module must neither keep the dead run's lock alive nor go on changing the group.

Stopping the module is a signal to its main thread (``SIGUSR1``), whose handler raises :class:`LockLost`, a
RolloutError: the module fails through its one catch with a message that says why. The signal is sent again at every
check until the module ends, in case code on the way swallows the first one.
"""

from __future__ import annotations

import datetime
import os
import signal
import threading

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import parse_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import lease_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners import locks

LOCK_ARGUMENT_SPEC = dict(
    lock=dict(type="dict", options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", default="kube-system"),
        holder=dict(type="str", required=True),
        duration=dict(type="raw", required=True),
        held_until=dict(type="str"),
    )),
)
# the longest pause between two checks of the keeper
CHECK_SECONDS = 5.0
# how far up the module's process its run is looked for (the shells of the connection, the task's worker, the controller,
# ansible-runner)
ANCESTORS = 8


class LockLost(RolloutError):
    """The module stops: this run no longer holds the group's lock, or the run is gone."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def _parent_of(pid):
    """The parent of process ``pid`` from /proc, or None where it cannot be read (no /proc, the process is gone)."""
    stat = locks.proc_stat(pid)
    try:
        return int(stat[1]) if stat else None
    except (ValueError, IndexError):
        return None


_command_line = locks.command_line


def ancestors(count=ANCESTORS, parent_of=_parent_of, command_line=_command_line):
    """The processes of the run above this module: its parent, grandparent... (``count`` at most, init left out), up to
    the topmost one that is Ansible's (``ansible-playbook``, its task worker, ``ansible-runner``); what started that
    (a shell, cron, a test) is not the run. The parent alone where no command line can be read (no /proc)."""
    found, pid = [], os.getppid()
    while pid and pid > 1 and len(found) < count:
        found.append(pid)
        pid = parent_of(pid)
    ours = [index for index, pid in enumerate(found) if "ansible" in command_line(pid)]
    return found[:ours[-1] + 1] if ours else found[:1]


def _alive(pid):
    """Whether process ``pid`` still runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def renew_due(held_until, duration, now):
    """Whether to renew now: the hold this process knows of (``held_until``, a datetime or None) has less than half of
    ``duration`` seconds left, or is not known at all."""
    return held_until is None or (held_until - now).total_seconds() < duration / 2.0


class LockKeeper:
    """Renew the Lease while the ``with`` block runs; see the module docstring.

    ``renew()`` takes or renews the Lease and returns its new expiry (a datetime), or raises ``lease_lock``'s refusal
    (``locks.LockHeld``) when another run holds it, or any other error when the API cannot be reached. ``lineage``
    lists the processes whose end means the run is gone, ``alive(pid)`` says whether one still runs."""

    def __init__(self, what, renew, duration, held_until=None, now=utc_now, lineage=None, alive=_alive,
                 check_seconds=CHECK_SECONDS, refused=(), signum=signal.SIGUSR1):
        self.what = what
        self._renew = renew
        self.duration = duration
        self.held_until = held_until
        self._now = now
        self.lineage = list(ancestors() if lineage is None else lineage)
        self._alive = alive
        self.interval = max(0.05, min(check_seconds, duration / 10.0))
        self._refused = tuple(refused)
        self._signum = signum
        self._stop = threading.Event()
        self._thread = None
        self._previous_handler = None
        self.lost = None

    # --- the decision of one check ---------------------------------------------------------------------------------

    def check(self):
        """One check: renew when due; returns None, or the reason the module must stop (and the keeper with it)."""
        gone = [pid for pid in self.lineage if not self._alive(pid)]
        if gone:
            return ("the run that started this module is gone (process %d ended), so the lock of %s is no longer renewed "
                    "and this module stops; the next run takes the group over once the lock expires" % (gone[0], self.what))
        now = self._now()
        if not renew_due(self.held_until, self.duration, now):
            return None
        try:
            self.held_until = self._renew()
            return None
        except self._refused as exc:
            return "the lock of %s was lost while this module ran: %s" % (self.what, getattr(exc, "msg", str(exc)))
        except Exception as exc:  # pylint: disable=broad-exception-caught
            # out of reach for now: try again at the next check, while the hold lasts
            if self.held_until is not None and self._now() < self.held_until:
                return None
            return ("the lock of %s expired while this module ran: it could not be renewed (%s), and without it another "
                    "run may change the group" % (self.what, getattr(exc, "msg", str(exc)) or type(exc).__name__))

    # --- the thread -----------------------------------------------------------------------------------------------

    def _raise_lost(self, signum, frame):  # pylint: disable=unused-argument
        if self.lost and not self._stop.is_set():
            raise LockLost("Stopped: %s." % self.lost, lock_lost=True)

    def _loop(self):
        while not self._stop.wait(self.interval if self.lost is None else min(self.interval, 1.0)):
            if self.lost is None:
                self.lost = self.check()
            if self.lost is not None and not self._stop.is_set():
                signal.pthread_kill(threading.main_thread().ident, self._signum)

    def __enter__(self):
        self._previous_handler = signal.signal(self._signum, self._raise_lost)
        # the first check at once: a hold that is short already is renewed before the module's work starts
        self.lost = self.check()
        if self.lost is not None:
            self._stop.set()
            signal.signal(self._signum, self._previous_handler)
            raise LockLost("Stopped before any change: %s." % self.lost, lock_lost=True)
        self._thread = threading.Thread(target=self._loop, name="lock-keeper", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        # a thread still in a renewal's request keeps the handler, which does nothing once stopped: the default action
        # of the signal would end the process
        if self._thread is None or not self._thread.is_alive():
            signal.signal(self._signum, self._previous_handler)
        return False


def keeper_for(module, make_client):
    """The LockKeeper of the module's ``lock`` option, or None (no lock given, or check mode: nothing changes then)."""
    options = module.params.get("lock")
    if not options or module.check_mode:
        return None
    holder = lease_lock.check_holder(options["holder"])
    duration = lease_lock.check_duration(sum(parse_duration(item, "lock.duration")
                                             for item in (options["duration"] if isinstance(options["duration"], list)
                                                          else [options["duration"]])))
    held_until = None
    if options.get("held_until"):
        held_until = lease_lock.parse_time(options["held_until"])
        if held_until is None:
            raise lease_lock.LockError("lock.held_until: %r is not allowed; use the lease.expires_at of this run's last "
                                       "rollout_lock call, an RFC 3339 time" % (options["held_until"],))
    group, namespace = options["name"], options["namespace"]
    what = "node group %s (Lease %s/%s)" % (group, namespace, lease_lock.lease_name(group))
    api = None   # made at the first renewal that is due: most module runs end before one is

    def renew():
        nonlocal api
        if api is None:
            api = KubeApi(make_client(module))
        with kube_errors("renew", "the lock of node group %s" % group):
            # one read, and no write when another module of this run renewed it meanwhile
            result = locks.hold(api, group, namespace, holder, duration, now=utc_now, renew_only=True, fresh_for=duration / 2.0)
        return lease_lock.parse_time(result["lease"]["expires_at"])

    return LockKeeper(what, renew, duration, held_until, refused=(locks.LockHeld, locks.LockGone))


@reports_errors
def run_keeping_lock(module, run, *args):
    """``run(module, *args)`` (a module's runner), with the lock of its ``lock`` option kept alive while it runs."""
    keeper = keeper_for(module, k8s_client)
    if keeper is None:
        run(module, *args)
        return
    with keeper:
        run(module, *args)
