"""Persistent volumes: what kube-controller-manager's PersistentVolume controller and attach/detach controller and a
CSI driver's external attacher do, for statically provisioned volumes.

- **Binding**: a PersistentVolumeClaim naming a volume (``spec.volumeName``), or matched to an ``Available`` volume of
  its storage class whose access modes include the claim's and whose capacity covers its request, is bound: the
  volume gets ``spec.claimRef`` and phase ``Bound``, the claim phase ``Bound`` with the volume's access modes and
  capacity (and ``spec.volumeName`` when the controller chose the volume). No volume is provisioned: a claim nothing
  matches stays ``Pending``.
- **Attaching**: a pod bound to a node needs each of its claims' volumes attached there. A VolumeAttachment
  (``storage.k8s.io/v1``, named ``csi-<sha256 of volume, attacher and node>`` as the attach/detach controller names
  them) is created for the node and reports ``status.attached: true`` ``volume_attach_seconds`` later. A volume whose
  access modes are ``ReadWriteOnce`` (or ``ReadWriteOncePod``) and that is attached to another node is not attached:
  the pod waits (event ``FailedAttachVolume``, "Multi-Attach error ...") until the other attachment is gone.
- **Detaching**: an attachment no running pod on its node needs any more is deleted ``volume_detach_seconds`` after
  the last such pod went (the kubelet unmounting, then the attacher detaching); the volume's annotation
  ``sandbox.nodeops.io/detach-seconds`` overrides it for one volume (a slow EBS detach).
- The kubelet starts a pod only once all its claims' volumes are attached to its node (:meth:`Volumes.attached_for`).

Every pod kept from starting by a volume is logged: ``pod.volume_waiting`` {pod, uid, node, volume, reason:
``Multi-Attach`` or ``attaching``} when it starts waiting and ``pod.volume_attached`` {uid} when it may start; the
scheduler logs pods it cannot place because of a volume's node affinity (``pod.volume_unschedulable`` {pod, uid,
message}) and their placement (``pod.volume_scheduled`` {uid}). The invariant report counts the seconds in between.
"""

import hashlib

from ..errors import ApiError
from .objects import deleting, key_of, shallow, update
from .runtime import Controller

EXCLUSIVE_MODES = ("ReadWriteOnce", "ReadWriteOncePod")
DETACH_ANNOTATION = "sandbox.nodeops.io/detach-seconds"
NO_ATTACHER = "kubernetes.io/no-attacher"


def claim_names(pod):
    """The names of the PersistentVolumeClaims the pod mounts."""
    return [v["persistentVolumeClaim"]["claimName"] for v in (pod.get("spec") or {}).get("volumes") or []
            if (v.get("persistentVolumeClaim") or {}).get("claimName")]


def attacher_of(volume):
    return ((volume.get("spec") or {}).get("csi") or {}).get("driver") or NO_ATTACHER


def attachment_name(volume_name, attacher, node):
    """What the attach/detach controller names a VolumeAttachment: csi-<sha256(volume + attacher + node)>."""
    return "csi-" + hashlib.sha256(("%s%s%s" % (volume_name, attacher, node)).encode()).hexdigest()


def _exclusive(volume):
    return bool(set((volume.get("spec") or {}).get("accessModes") or []) & set(EXCLUSIVE_MODES))


def _quantity(value):
    from .objects import amount  # pylint: disable=import-outside-toplevel
    try:
        return amount(value or "0")
    except ValueError:
        return 0


class Volumes(Controller):
    watches = ("pods", "persistentvolumes", "persistentvolumeclaims", "volumeattachments")
    client = "sandbox-volume-controller"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.dirty_claims = set()     # (namespace, name) of claims to bind
        self.dirty = False            # attachments to reconcile
        self.unneeded_since = {}      # attachment name -> simulated time no pod needed it any more
        self.waiting = {}             # pod uid -> reason it waits for (logged once)

    # ---- events -----------------------------------------------------------------------------------
    def on_event(self, plural, etype, obj):
        if plural == "persistentvolumeclaims" and etype != "DELETED":
            self.dirty_claims.add(key_of(obj))
        elif plural == "persistentvolumes":
            self.dirty_claims.update(self._pending_claims())
        if plural == "pods" and not claim_names(obj):
            return
        self.dirty = True
        if plural in ("persistentvolumes", "persistentvolumeclaims"):
            self.ctl.scheduler.volumes_changed()

    def _pending_claims(self):
        return [key_of(c) for c in self.store.list("persistentvolumeclaims")[0]
                if (c.get("status") or {}).get("phase") != "Bound"]

    def resync(self):
        self.dirty = True
        self.dirty_claims.update(self._pending_claims())

    def idle(self):
        return not self.dirty and not self.dirty_claims

    def sync(self):
        work = False
        if self.dirty_claims:
            claims, self.dirty_claims = self.dirty_claims, set()
            for key in claims:
                work |= self._bind(key)
        if self.dirty:
            self.dirty = False
            self._reconcile()
            work = True
        return work

    # ---- binding ------------------------------------------------------------------------------------
    def _bind(self, key):
        claim = self.store.try_get("persistentvolumeclaims", key[0], key[1])
        if claim is None or deleting(claim) or (claim.get("status") or {}).get("phase") == "Bound":
            return False
        volume = self._volume_for(claim)
        if volume is None:
            return False
        name = volume["metadata"]["name"]
        ref = {"kind": "PersistentVolumeClaim", "namespace": key[0], "name": key[1], "uid": claim["metadata"]["uid"],
               "apiVersion": "v1", "resourceVersion": claim["metadata"].get("resourceVersion")}

        def claim_volume(current):
            if ((current.get("spec") or {}).get("claimRef") or {}).get("uid") not in (None, ref["uid"]):
                return None
            return shallow(current, spec=dict(current.get("spec") or {}, claimRef=ref),
                           status=dict(current.get("status") or {}, phase="Bound"))
        if update(self.store, "persistentvolumes", None, name, claim_volume, self.client) is None:
            return False
        vspec = volume.get("spec") or {}

        def bound(current):
            if current["metadata"]["uid"] != ref["uid"]:
                return None
            new_spec = dict(current.get("spec") or {})
            annotations = dict(current["metadata"].get("annotations") or {})
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
            if not new_spec.get("volumeName"):
                new_spec["volumeName"] = name
                annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
            new = shallow(current, spec=new_spec, status={"phase": "Bound", "accessModes": list(vspec.get("accessModes") or []),
                                                          "capacity": dict(vspec.get("capacity") or {})})
            new["metadata"]["annotations"] = annotations
            return new
        update(self.store, "persistentvolumeclaims", key[0], key[1], bound, self.client)
        return True

    def _volume_for(self, claim):
        spec = claim.get("spec") or {}
        uid = claim["metadata"]["uid"]
        if spec.get("volumeName"):
            volume = self.store.try_get("persistentvolumes", None, spec["volumeName"])
            ref = ((volume or {}).get("spec") or {}).get("claimRef") or {}
            if volume is None or (ref.get("uid") and ref.get("uid") != uid) or \
                    (ref.get("name") and (ref.get("namespace"), ref.get("name")) != key_of(claim)):
                return None
            return volume
        wanted = set(spec.get("accessModes") or [])
        request = _quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
        klass = spec.get("storageClassName") or ""
        fits = []
        for volume in self.store.list("persistentvolumes")[0]:
            vspec = volume.get("spec") or {}
            ref = vspec.get("claimRef") or {}
            if (volume.get("status") or {}).get("phase") not in (None, "Available") or deleting(volume):
                continue
            if ref and (ref.get("namespace"), ref.get("name")) != key_of(claim):
                continue
            if (vspec.get("storageClassName") or "") != klass or not wanted <= set(vspec.get("accessModes") or []):
                continue
            size = _quantity((vspec.get("capacity") or {}).get("storage"))
            if size >= request:
                fits.append((size, volume["metadata"]["name"], volume))
        return min(fits)[2] if fits else None

    # ---- attaching and detaching -----------------------------------------------------------------------
    def _volume_of_claim(self, namespace, claim_name):
        claim = self.store.try_get("persistentvolumeclaims", namespace, claim_name)
        name = ((claim or {}).get("spec") or {}).get("volumeName")
        if not claim or (claim.get("status") or {}).get("phase") != "Bound" or not name:
            return None
        return self.store.try_get("persistentvolumes", None, name)

    def _needed(self):
        """{(volume name, node): [pods]} for every pod bound to a node and not finished (a terminating pod still
        holds its volume until it is gone)."""
        needed = {}
        for pod in self.store.list("pods")[0]:
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for claim in claim_names(pod):
                volume = self._volume_of_claim(pod["metadata"].get("namespace"), claim)
                if volume is not None:
                    needed.setdefault((volume["metadata"]["name"], node), []).append(pod)
        return needed

    def _reconcile(self):
        now = self.clock.now()
        needed = self._needed()
        attachments = {(a["spec"]["source"].get("persistentVolumeName"), a["spec"]["nodeName"]): a
                       for a in self.store.list("volumeattachments")[0]}
        for (volume_name, node), attachment in attachments.items():
            name = attachment["metadata"]["name"]
            if (volume_name, node) in needed:
                self.unneeded_since.pop(name, None)
                continue
            since = self.unneeded_since.setdefault(name, now)
            delay = self._detach_seconds(volume_name)
            if now - since >= delay:
                self._detach(attachment)
            else:
                self.ctl.call_at(since + delay, self._mark_dirty)
        for (volume_name, node), pods in sorted(needed.items()):
            if (volume_name, node) in attachments:
                continue
            volume = self.store.try_get("persistentvolumes", None, volume_name)
            elsewhere = [n for (v, n) in attachments if v == volume_name and n != node]
            if volume is not None and _exclusive(volume) and elsewhere:
                for pod in pods:
                    self._waiting(pod, node, volume_name, "Multi-Attach",
                                  "Multi-Attach error for volume \"%s\" Volume is already exclusively attached to one "
                                  "node and can't be attached to another" % volume_name)
                continue
            if volume is not None:
                attachments[(volume_name, node)] = self._attach(volume, node)
                for pod in pods:
                    self._waiting(pod, node, volume_name, "attaching", None)

    def _detach_seconds(self, volume_name):
        volume = self.store.try_get("persistentvolumes", None, volume_name) or {"metadata": {}}
        value = (volume["metadata"].get("annotations") or {}).get(DETACH_ANNOTATION)
        try:
            return max(0.0, float(value)) if value is not None else self.ctl.cfg.volume_detach_seconds
        except ValueError:
            return self.ctl.cfg.volume_detach_seconds

    def _mark_dirty(self):
        self.dirty = True

    def _waiting(self, pod, node, volume_name, reason, message):
        uid = pod["metadata"]["uid"]
        if self.waiting.get(uid) == reason or deleting(pod):
            return
        self.waiting[uid] = reason
        self.ctl.events.emit("pod.volume_waiting", pod="%s/%s" % key_of(pod), uid=uid, node=node, volume=volume_name,
                             reason=reason)
        if message:
            self.ctl.recorder.record(pod, "FailedAttachVolume", message, "attachdetach-controller", event_type="Warning")

    def _attach(self, volume, node):
        attacher = attacher_of(volume)
        volume_name = volume["metadata"]["name"]
        obj = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
               "metadata": {"name": attachment_name(volume_name, attacher, node)},
               "spec": {"attacher": attacher, "nodeName": node, "source": {"persistentVolumeName": volume_name}},
               "status": {"attached": False}}
        try:
            created = self.store.create("volumeattachments", obj, client=self.client)
        except ApiError:
            return obj
        self.ctl.call_after(self.ctl.cfg.volume_attach_seconds, self._attached, created["metadata"]["name"])
        return created

    def _attached(self, name):
        def attached(current):
            if (current.get("status") or {}).get("attached"):
                return None
            handle = (((self.store.try_get("persistentvolumes", None, current["spec"]["source"]["persistentVolumeName"])
                        or {}).get("spec") or {}).get("csi") or {}).get("volumeHandle")
            return shallow(current, status={"attached": True, "attachmentMetadata": {"devicePath": "/dev/xvdba"}
                                            if handle else {}})
        written = update(self.store, "volumeattachments", None, name, attached, self.client)
        if written is not None:
            self.dirty = True
            self.ctl.kubelet.volumes_changed(written["spec"]["nodeName"])

    def _detach(self, attachment):
        name = attachment["metadata"]["name"]
        self.unneeded_since.pop(name, None)
        try:
            self.store.remove("volumeattachments", None, name, client=self.client)
        except ApiError:
            return
        self.dirty = True   # a pod waiting for the volume elsewhere (Multi-Attach) may have it now

    def attached_for(self, pod, node):
        """Whether every volume of the pod's claims is attached to ``node`` (pods without claims: True)."""
        names = claim_names(pod)
        if not names:
            return True
        for claim in names:
            volume = self._volume_of_claim(pod["metadata"].get("namespace"), claim)
            if volume is None:
                return False
            attachment = self.store.try_get("volumeattachments", None,
                                            attachment_name(volume["metadata"]["name"], attacher_of(volume), node))
            if attachment is None or not (attachment.get("status") or {}).get("attached"):
                return False
        if self.waiting.pop(pod["metadata"]["uid"], None) is not None:
            self.ctl.events.emit("pod.volume_attached", pod="%s/%s" % key_of(pod), uid=pod["metadata"]["uid"], node=node)
        return True
