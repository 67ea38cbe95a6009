"""Build the sandbox's real parts from Go modules, once per pinned version set: the reference control plane, and the
Alertmanager of the alert gates.

Small wrapper modules under ``go/`` pin what is built:

- ``go/kubernetes``: ``k8s.io/kubernetes`` (kube-apiserver, kube-controller-manager, kube-scheduler), with a
  ``replace`` line pinning each staging module (``k8s.io/api``, ``k8s.io/client-go``, ...) to its published
  ``v0.x`` release, as ``k8s.io/kubernetes`` cannot be built as a dependency otherwise;
- ``go/etcd``: ``go.etcd.io/etcd/server/v3`` behind etcd's own entry point (``etcdmain.Main``);
- ``go/kwok``: ``sigs.k8s.io/kwok``, which plays every node's kubelet;
- ``go/alertmanager``: ``github.com/prometheus/alertmanager`` (its own set, ``alertmanager``). v0.31.1 is the newest
  release that builds from the module proxy: from v0.32.0 its web interface embeds built assets (``ui/app/dist``) that
  the published module does not hold.

The binaries of a set go to ``<cache>/<key>/bin`` where ``<cache>`` is ``$NODEOPS_REFERENCE_CACHE`` or
``~/.cache/nodeops-rollout/reference`` and ``<key>`` digests the set's ``go.mod``/``go.sum`` pairs and the Go
version: a changed pin builds again, an unchanged one is reused. A lock file in ``<cache>`` makes concurrent builds
(two test workers starting a sandbox each) take turns. Only Go modules are downloaded, through
the module proxy ``go`` is configured with. ``$NODEOPS_REFERENCE_BUILD_JOBS`` limits the parallel compile jobs
(the test command builds with one while other stages run).
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GO_DIR = os.path.join(HERE, "go")
# binary -> (wrapper module directory, package to build)
TARGETS = {
    "etcd": ("etcd", "."),
    "kube-apiserver": ("kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver"),
    "kube-controller-manager": ("kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    "kube-scheduler": ("kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler"),
    "kwok": ("kwok", "sigs.k8s.io/kwok/cmd/kwok"),
    "alertmanager": ("alertmanager", "github.com/prometheus/alertmanager/cmd/alertmanager"),
}
# set -> (the binaries it builds, the module whose version names its cache directory, the cache directory's prefix)
SETS = {
    "reference": (("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"), "k8s.io/kubernetes", "k8s"),
    "alertmanager": (("alertmanager",), "github.com/prometheus/alertmanager", "alertmanager"),
}


class BuildError(RuntimeError):
    pass


def cache_root():
    return os.environ.get("NODEOPS_REFERENCE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "nodeops-rollout", "reference")


def _go():
    go = shutil.which("go")
    if not go:
        raise BuildError("the reference cluster is built with Go, and no 'go' is on PATH")
    return go


def go_version():
    return subprocess.run([_go(), "env", "GOVERSION"], check=True, capture_output=True, text=True).stdout.strip()


def _modules(which):
    return sorted({TARGETS[name][0] for name in SETS[which][0]})


def pins(which="reference"):
    """{module: the version it pins} for what a set builds, read from the wrapper go.mod files."""
    out = {}
    for module, wanted in (("kubernetes", "k8s.io/kubernetes"), ("etcd", "go.etcd.io/etcd/server/v3"),
                           ("kwok", "sigs.k8s.io/kwok"), ("alertmanager", "github.com/prometheus/alertmanager")):
        if module not in _modules(which):
            continue
        with open(os.path.join(GO_DIR, module, "go.mod"), encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2 and parts[-2] == wanted and parts[-1].startswith("v"):
                    out[wanted] = parts[-1]
    return out


def cache_key(which="reference"):
    digest = hashlib.sha256(go_version().encode())
    for module in _modules(which):
        for name in sorted(os.listdir(os.path.join(GO_DIR, module))):
            with open(os.path.join(GO_DIR, module, name), "rb") as fh:
                digest.update(name.encode() + b"\0" + fh.read())
    _names, named_by, prefix = SETS[which]
    return "%s-%s-%s" % (prefix, pins(which).get(named_by, "unknown"), digest.hexdigest()[:12])


def bin_dir(which="reference"):
    return os.path.join(cache_root(), cache_key(which), "bin")


def built(which="reference"):
    """The bin directory when every binary of the set is there, else None."""
    path = bin_dir(which)
    if all(os.access(os.path.join(path, name), os.X_OK) for name in SETS[which][0]):
        return path
    return None


def build(log=sys.stderr, which="reference"):
    """Build what is missing of a set; return the bin directory. Each binary is written under a temporary name and
    renamed, so an interrupted build never leaves a half-written binary that looks built; concurrent builds take turns."""
    path = bin_dir(which)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(cache_root(), ".build-%s.lock" % which), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(path, log, which)


def _build(path, log, which):
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -trimpath")
    for name in sorted(SETS[which][0]):
        module, package = TARGETS[name]
        target = os.path.join(path, name)
        if os.access(target, os.X_OK):
            continue
        started = time.monotonic()
        print("%s: building %s from %s ..." % (which, name, package if package != "." else "go/" + module), file=log, flush=True)
        partial = target + ".partial"
        jobs = ["-p", os.environ["NODEOPS_REFERENCE_BUILD_JOBS"]] if os.environ.get("NODEOPS_REFERENCE_BUILD_JOBS") else []
        proc = subprocess.run([_go(), "build"] + jobs + ["-ldflags=-s -w", "-o", partial, package], cwd=os.path.join(GO_DIR, module),
                              env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError("go build %s failed:\n%s" % (package, (proc.stdout + proc.stderr)[-4000:]))
        os.replace(partial, target)
        print("%s: built %s in %.0fs" % (which, name, time.monotonic() - started), file=log, flush=True)
    return path


def ensure(log=sys.stderr, which="reference"):
    return built(which) or build(log, which)


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "reference"
    if which not in SETS:
        sys.exit("usage: python -m sandbox.reference.build [%s]" % "|".join(sorted(SETS)))
    started = time.monotonic()
    path = ensure(which=which)
    print("%s in %s (%s; %.0fs)" % ("reference control plane" if which == "reference" else which,
                                    path, ", ".join("%s %s" % kv for kv in sorted(pins(which).items())), time.monotonic() - started))


if __name__ == "__main__":
    main()
