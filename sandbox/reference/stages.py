"""kwok's configuration for the reference backend: the kubelet every node runs, as kwok Stages, with the
embedded backend's delays (converted to wall time through the sandbox's speed) so the two backends keep
the same proportions.

- Node: Ready ``node_ready_seconds`` after it registered, unless annotated ``sandbox.nodeops.io/never-ready``
  (the ``nodes_never_ready`` fault); liveness through node Leases (``--node-lease-duration-seconds``).
- Pod bound to a node: Running (pod IP, containers started, not Ready) ``pod_start_seconds`` later, Ready
  ``pod_ready_seconds`` after that, or the simulated seconds its annotation ``sandbox.nodeops.io/ready-seconds``
  says (as the embedded kubelet reads it; kwok's ``delay.durationFrom`` turns it into wall milliseconds through the
  speed, and falls back to ``pod_ready_seconds`` for a value that is not a number), unless annotated ``never`` (a
  readiness probe that never passes); a pod being deleted goes ``pod_shutdown_seconds`` after its deletion started.
"""

NEVER_READY_NODE = "sandbox.nodeops.io/never-ready"
READY_ANNOTATION = "sandbox.nodeops.io/ready-seconds"

# the conditions a kubelet posts once its node is Ready: type, status, reason, message
NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)
_CONDITION = """\
      - type: %s
        status: "%s"
        reason: %s
        message: %s
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
"""

_NODE_READY = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.metadata.annotations["%(never_ready)s"]', operator: DoesNotExist}
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  delay: {durationMilliseconds: %(node_ready_ms)d}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
%(node_conditions)s      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-heartbeat}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['True']
  delay: {durationMilliseconds: 20000, jitterDurationMilliseconds: 25000}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range .status.conditions }}
      - type: {{ .type | Quote }}
        status: {{ .status | Quote }}
        reason: {{ .reason | Quote }}
        message: {{ .message | Quote }}
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ .lastTransitionTime | Quote }}
      {{ end }}
"""

_POD = """\
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-start}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.podIP', operator: DoesNotExist}
  delay: {durationMilliseconds: %(pod_start_ms)d}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - type: ContainersReady
        status: "False"
        reason: ContainersNotReady
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "False"
        reason: ContainersNotReady
        lastTransitionTime: {{ $now | Quote }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        started: true
        restartCount: 0
        state: {running: {startedAt: {{ $now | Quote }}}}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" )
                ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Running]}
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
    - key: '.metadata.annotations["%(ready_annotation)s"]'
      operator: NotIn
      values: [never]
  delay:
    durationMilliseconds: %(pod_ready_ms)d
    durationFrom:
      jq: {expression: '%(ready_delay_jq)s'}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "True", reason: "", message: "", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "True", reason: "", message: "", lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .status.containerStatuses }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        started: true
        restartCount: 0
        state: {running: {startedAt: {{ .state.running.startedAt | Quote }}}}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-delete}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: Exists}
  delay: {durationMilliseconds: %(pod_shutdown_ms)d}
  next:
    finalizers: {empty: true}
    delete: true
"""


def ready_delay_jq(speed):
    """kwok's ``durationFrom`` of the pod-ready stage: the pod's ``sandbox.nodeops.io/ready-seconds`` (simulated
    seconds, at least 0) as a Go duration of wall milliseconds at ``speed``; no output (kwok then takes the stage's
    ``durationMilliseconds``) when the annotation is missing or not a number, as ``tonumber`` fails on it."""
    return ('.metadata.annotations["%s"] | ([tonumber, 0] | max) * 1000 / %r | round | tostring + "ms"'
            % (READY_ANNOTATION, float(speed)))


def kwok_config(speed, node_ready_seconds, pod_start_seconds, pod_ready_seconds, pod_shutdown_seconds):
    """The YAML kwok reads with ``--config``: the Stages above, delays in wall milliseconds."""
    def wall_ms(sim_seconds):
        return int(round(1000.0 * float(sim_seconds) / float(speed)))
    values = {"never_ready": NEVER_READY_NODE, "ready_annotation": READY_ANNOTATION, "ready_delay_jq": ready_delay_jq(speed),
              "node_ready_ms": wall_ms(node_ready_seconds),
              "node_conditions": "".join(_CONDITION % condition for condition in NODE_CONDITIONS), "pod_start_ms": wall_ms(pod_start_seconds),
              "pod_ready_ms": wall_ms(pod_ready_seconds), "pod_shutdown_ms": wall_ms(pod_shutdown_seconds)}
    return (_NODE_READY + _POD) % values
