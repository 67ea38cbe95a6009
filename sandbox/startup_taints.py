"""Startup taints: nodes that join tainted by another owner until its agent is up, as on EKS.

A new node commonly registers with a taint of its CNI's or CSI driver's agent (Cilium's
``node.cilium.io/agent-not-ready:NoSchedule``, the EBS CSI driver's ``ebs.csi.aws.com/agent-not-ready:NoExecute``,
a GPU operator's, Karpenter's ``startupTaints``); the agent lifts it once it runs, or never when it is broken. The
sandbox gives a node its startup taints at registration, on either backend, from two sources:

- the user data of the instance's launch template version: the kubelet's ``--register-with-taints=key=value:Effect,
  key2:Effect`` (anywhere in it, so also inside EKS bootstrap.sh's ``--kubelet-extra-args '...'`` and nodeadm's
  ``kubelet.flags``), read as the kubelet reads the flag (the last one given wins; a taint it cannot parse stops the
  kubelet, so the instance never registers a node). Each is lifted ``DEFAULT_LIFT_AFTER`` simulated seconds
  after the node turned Ready, or after what ``configure(user_data_lift_after={key: seconds or None})`` says for its
  key (None: never);
- the control endpoint (``POST /startup-taints``, :meth:`StartupTaints.configure`): for a group (``*``: every group),
  and optionally one launch template version of it, a list of taints ``{"key", "value" (optional), "effect",
  "lift_after": simulated seconds after the node turned Ready, or null for never; left out, ``DEFAULT_LIFT_AFTER``}``.
  A rule for the instance's
  version replaces the group's, which replaces the one for every group; a taint of the same key and effect from the
  user data is replaced by the rule's.

The rules apply to nodes that register after they are set: the nodes of a sandbox's start are not tainted unless a
test sets a rule before they register. The agent (:meth:`StartupTaints.start`, client ``sandbox-startup-agent``: the
node's cilium-agent or CSI node plugin) lifts each taint when it falls due by a JSON patch through the Kubernetes API
(``test`` of the node's taints, then ``replace``), as Cilium does, so the API's request log or audit log, and the
``node.taints`` events, see it. Events: ``node.startup_taints`` when a node registers with startup taints (node,
group, instance, launch template version, the taints as ``key=value:Effect``, each one's ``lift_after``), and
``node.startup_taint_lifted`` when the agent lifts one (node, taint, simulated seconds since the node turned Ready).
"""

import base64
import binascii
import re
import threading

DEFAULT_LIFT_AFTER = 10.0
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
EVERY_GROUP = "*"
AGENT_CLIENT = "sandbox-startup-agent"
TAINT_FIELDS = ("key", "value", "effect", "lift_after")

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_FLAG = re.compile(r"--register-with-taints(?:=|\s+)([\"']?)([^\s\"']*)\1")


def check_key(key, field):
    """A taint key as the API validates it: a qualified name (``[prefix/]name``)."""
    if not isinstance(key, str) or not key:
        raise ValueError("%s: a taint key is a non-empty qualified name ([prefix/]name), got %r" % (field, key))
    prefix, name = key.rpartition("/")[::2]
    if (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))) or not _NAME.match(name):
        raise ValueError("%s: %r is not a qualified name ([DNS subdomain/]name of at most 63 characters: letters, "
                         "digits, '-', '_', '.')" % (field, key))
    return key


def check_value(value, field):
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError("%s: a taint value is empty or a label value (at most 63 characters: letters, digits, '-', "
                         "'_', '.'), got %r" % (field, value))
    return value


def check_effect(effect, field):
    if effect not in EFFECTS:
        raise ValueError("%s: effect must be one of %s, got %r" % (field, ", ".join(EFFECTS), effect))
    return effect


def check_lift(value, field):
    """Simulated seconds (a number >= 0), or None for never."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError("%s: lift_after is simulated seconds after the node turned Ready (a number >= 0) or null "
                         "for never, got %r" % (field, value))
    return float(value)


def parse_taint(text, field):
    """``key=value:Effect`` or ``key:Effect``, as the kubelet's ``--register-with-taints`` reads each taint."""
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError("%s: a taint is key[=value]:Effect, got %r" % (field, text))
    key_value, effect = parts
    pair = key_value.split("=")
    if len(pair) > 2:
        raise ValueError("%s: a taint is key[=value]:Effect, got %r" % (field, text))
    taint = {"key": check_key(pair[0], field), "effect": check_effect(effect, field)}
    value = check_value(pair[1] if len(pair) == 2 else "", field)
    if value:
        taint["value"] = value
    return taint


def decode_user_data(user_data):
    """The text of EC2 user data (base64, as the API carries it), or the text itself when it is not base64."""
    if not user_data:
        return ""
    try:
        return base64.b64decode(user_data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return user_data


def register_with_taints(user_data):
    """The taints the kubelet of an instance with ``user_data`` registers its node with: ``[{key, value?, effect}]``.
    Raises ValueError for a value the kubelet would refuse (it does not start then)."""
    found = _FLAG.findall(decode_user_data(user_data))
    if not found:
        return []
    value = found[-1][1]   # the flag given last wins, as the kubelet's flag parser has it
    if not value:
        return []
    return [parse_taint(item, "--register-with-taints") for item in value.split(",")]


def check_taints(taints, field="taints"):
    """The control endpoint's list of taints, each ``{key, value?, effect, lift_after}``, normalized."""
    if not isinstance(taints, list):
        raise ValueError("%s must be a list of {key, value, effect, lift_after}, got %r" % (field, taints))
    out, seen = [], set()
    for index, taint in enumerate(taints):
        where = "%s[%d]" % (field, index)
        if not isinstance(taint, dict):
            raise ValueError("%s must be an object {key, value, effect, lift_after}, got %r" % (where, taint))
        unknown = sorted(set(taint) - set(TAINT_FIELDS))
        if unknown:
            raise ValueError("%s: unknown field(s) %s; allowed: %s" % (where, ", ".join(unknown), ", ".join(TAINT_FIELDS)))
        item = {"key": check_key(taint.get("key"), where + ".key"),
                "effect": check_effect(taint.get("effect"), where + ".effect")}
        value = check_value(taint.get("value"), where + ".value")
        if value:
            item["value"] = value
        item["lift_after"] = (check_lift(taint["lift_after"], where + ".lift_after") if "lift_after" in taint
                              else DEFAULT_LIFT_AFTER)
        if (item["key"], item["effect"]) in seen:
            raise ValueError("%s: a second taint %s:%s (a node has one taint per key and effect)"
                             % (where, item["key"], item["effect"]))
        seen.add((item["key"], item["effect"]))
        out.append(item)
    return out


def parse_cli_taint(text, field="--startup-taint"):
    """``KEY[=VALUE]:EFFECT[@SECONDS|@never]`` (``up --startup-taint``, ``startup-taints --taint``) as ``{key, value?,
    effect, lift_after}``; no ``@``: lifted after ``DEFAULT_LIFT_AFTER``."""
    spec, at, lift = text.partition("@")
    taint = parse_taint(spec, field)
    if not at:
        taint["lift_after"] = DEFAULT_LIFT_AFTER
    elif lift == "never":
        taint["lift_after"] = None
    else:
        try:
            taint["lift_after"] = check_lift(float(lift), field)
        except ValueError:
            raise ValueError("%s: after @ comes simulated seconds (a number >= 0) or never, got %r" % (field, lift)) from None
    return taint


def taint_text(taint):
    """``key=value:Effect``, as ``node.taints`` events write a taint."""
    return "%s=%s:%s" % (taint["key"], taint.get("value", ""), taint["effect"])


def _version(value, field):
    if value is None:
        return None
    text = str(value)
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1:
        raise ValueError("%s: a launch template version number (an integer >= 1), got %r" % (field, value))
    return str(int(text))


class StartupTaints:
    """The rules, the taints each node registered with, and the agent that lifts them."""

    def __init__(self, clock, events, group_names=None):
        self.clock = clock
        self.events = events
        self.group_names = group_names      # () -> the Auto Scaling groups' names, to refuse a misspelt one
        self.lock = threading.Lock()
        self.rules = {}                     # (group, version or None) -> [taint]
        self.user_data_lifts = {}           # taint key -> simulated seconds or None (never)
        self.pending = {}                   # node name -> {"ready_at": t or None, "lifts": [taint], "seen": bool}
        self.refused = {}                   # instance id -> why its kubelet would not start
        self._stop = threading.Event()
        self._thread = None

    # ---- the rules -----------------------------------------------------------------------------------
    def configure(self, body):
        """What ``POST /startup-taints`` takes: ``{"group", "version"?, "taints"}`` and/or ``{"user_data_lift_after":
        {key: seconds or null}}``; every field checked before anything changes. Returns :meth:`status`."""
        if not isinstance(body, dict):
            raise ValueError("the body is an object {group, version, taints, user_data_lift_after}, got %r" % (body,))
        allowed = ("group", "version", "taints", "user_data_lift_after")
        unknown = sorted(set(body) - set(allowed))
        if unknown:
            raise ValueError("unknown field(s) %s; allowed: %s" % (", ".join(unknown), ", ".join(allowed)))
        rule = None
        if "group" in body or "taints" in body or "version" in body:
            group = body.get("group")
            if not isinstance(group, str) or not group:
                raise ValueError("group: an Auto Scaling group's name, or %r for every group, got %r" % (EVERY_GROUP, group))
            known = sorted(self.group_names()) if self.group_names else None
            if known is not None and group != EVERY_GROUP and group not in known:
                raise ValueError("group: %r is not an Auto Scaling group of this sandbox (%s, or %r for every group)"
                                 % (group, ", ".join(known), EVERY_GROUP))
            version = _version(body.get("version"), "version")
            if group == EVERY_GROUP and version is not None:
                raise ValueError("version: a launch template version belongs to one group's template; name the group")
            if "taints" not in body:
                raise ValueError("taints: the list of taints for group %r (an empty list removes the rule)" % group)
            rule = ((group, version), check_taints(body["taints"]))
        lifts = body.get("user_data_lift_after")
        if lifts is not None:
            if not isinstance(lifts, dict):
                raise ValueError("user_data_lift_after: an object {taint key: simulated seconds or null}, got %r" % (lifts,))
            lifts = {check_key(k, "user_data_lift_after"): check_lift(v, "user_data_lift_after[%s]" % k)
                     for k, v in lifts.items()}
        if rule is None and lifts is None:
            raise ValueError("give group and taints (a rule), or user_data_lift_after, or both")
        with self.lock:
            if rule is not None:
                if rule[1]:
                    self.rules[rule[0]] = rule[1]
                else:
                    self.rules.pop(rule[0], None)
            if lifts:
                self.user_data_lifts.update(lifts)
        return self.status()

    def status(self):
        with self.lock:
            return {"rules": [{"group": g, "version": int(v) if v else None, "taints": [dict(t) for t in taints]}
                              for (g, v), taints in sorted(self.rules.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))],
                    "user_data_lift_after": dict(self.user_data_lifts),
                    "default_user_data_lift_after": DEFAULT_LIFT_AFTER,
                    "pending": {name: [taint_text(t) for t in entry["lifts"]] for name, entry in sorted(self.pending.items())}}

    # ---- registration --------------------------------------------------------------------------------
    def for_instance(self, inst):
        """The startup taints the node of EC2 instance record ``inst`` registers with (each with its ``lift_after``),
        or None when its kubelet would not start (a ``--register-with-taints`` it cannot parse)."""
        iid = inst.get("instance_id")
        if iid in self.refused:
            return None
        try:
            from_user_data = register_with_taints(inst.get("user_data"))
        except ValueError as exc:
            self.refused[iid] = str(exc)
            self.events.emit("kubelet.failed", instance_id=iid, group=inst.get("group"), error=str(exc))
            return None
        group = inst.get("group")
        version = (inst.get("launch_template") or {}).get("version")
        with self.lock:
            rule = None
            for key in ((group, str(version) if version is not None else None), (group, None), (EVERY_GROUP, None)):
                if key[0] is not None and key in self.rules:
                    rule = self.rules[key]
                    break
            rule = [dict(t) for t in rule or []]
            taints = [dict(t, lift_after=self.user_data_lifts.get(t["key"], DEFAULT_LIFT_AFTER))
                      for t in from_user_data if not any((r["key"], r["effect"]) == (t["key"], t["effect"]) for r in rule)]
        return taints + rule

    def registered(self, name, inst, taints):
        """The node ``name`` of ``inst`` was created with ``taints`` (from :meth:`for_instance`): the agent lifts them."""
        if not taints:
            return
        with self.lock:
            self.pending[name] = {"ready_at": None, "lifts": [dict(t) for t in taints]}
        self.events.emit("node.startup_taints", node=name, group=inst.get("group"), instance_id=inst.get("instance_id"),
                         launch_template_version=(inst.get("launch_template") or {}).get("version"),
                         taints=[taint_text(t) for t in taints],
                         lift_after={taint_text(t): t["lift_after"] for t in taints})

    @staticmethod
    def node_taints(taints):
        """The taints as a Node's ``spec.taints`` carries them."""
        return [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in taints]

    # ---- the agent -----------------------------------------------------------------------------------
    def start(self, get_node, rest):
        """Run the agent: ``get_node(name)`` reads a Node (or None), ``rest`` is a :class:`sandbox.reference.rest.Rest`
        with the agent's user agent, on the backend's API server."""
        self._thread = threading.Thread(target=self._loop, args=(get_node, rest), name="startup-taint-agent", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()

    def _loop(self, get_node, rest):
        while not self._stop.wait(0.05):
            try:
                self.tick(get_node, rest)
            except Exception as exc:  # pylint: disable=broad-except
                self.events.emit("controller.error", where="StartupTaintAgent", error=repr(exc))

    def tick(self, get_node, rest):
        with self.lock:
            names = list(self.pending)
        now = self.clock.now()
        for name in names:
            node = get_node(name)
            with self.lock:
                entry = self.pending.get(name)
                if entry is None:
                    continue
                if node is None:
                    if entry.get("seen"):
                        del self.pending[name]   # the node is gone, and its agent with it
                    continue
                entry["seen"] = True
                if entry["ready_at"] is None and _is_ready(node):
                    entry["ready_at"] = now
                if entry["ready_at"] is None:
                    continue
                due = [t for t in entry["lifts"] if t["lift_after"] is not None and now >= entry["ready_at"] + t["lift_after"]]
                ready_at = entry["ready_at"]
            for taint in due:
                if self._lift(rest, name, taint):
                    with self.lock:
                        entry = self.pending.get(name)
                        if entry is not None:
                            entry["lifts"] = [t for t in entry["lifts"] if t is not taint]
                            if not entry["lifts"]:
                                del self.pending[name]
                    self.events.emit("node.startup_taint_lifted", node=name, taint=taint_text(taint),
                                     after_ready=round(self.clock.now() - ready_at, 3))

    @staticmethod
    def _lift(rest, name, taint):
        """Remove ``taint`` from node ``name`` as cilium-agent does: read it, then a JSON patch that tests the taints it
        read and replaces them. True once the taint is gone (or the node, or the taint, was gone already)."""
        from .reference.rest import RestError  # pylint: disable=import-outside-toplevel
        path = "/api/v1/nodes/" + name
        try:
            node = rest.request("GET", path)
        except RestError as exc:
            if exc.code == 404:
                return True
            return False
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if (t.get("key"), t.get("effect")) != (taint["key"], taint["effect"])]
        if len(kept) == len(taints):
            return True
        patch = [{"op": "test", "path": "/spec/taints", "value": taints},
                 {"op": "replace", "path": "/spec/taints", "value": kept}]
        try:
            rest.request("PATCH", path, patch, content_type="application/json-patch+json")
        except RestError as exc:
            return exc.code == 404   # a conflict (the taints changed since the read): read again at the next tick
        return True


def _is_ready(node):
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False
