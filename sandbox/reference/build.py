"""Build the reference control plane from Go modules, once per pinned version set.

Three small wrapper modules under ``go/`` pin what is built:

- ``go/kubernetes``: ``k8s.io/kubernetes`` (kube-apiserver, kube-controller-manager, kube-scheduler), with a
  ``replace`` line pinning each staging module (``k8s.io/api``, ``k8s.io/client-go``, ...) to its published
  ``v0.x`` release, as ``k8s.io/kubernetes`` cannot be built as a dependency otherwise;
- ``go/etcd``: ``go.etcd.io/etcd/server/v3`` behind etcd's own entry point (``etcdmain.Main``);
- ``go/kwok``: ``sigs.k8s.io/kwok``, which plays every node's kubelet.

The binaries go to ``<cache>/<key>/bin`` where ``<cache>`` is ``$NODEOPS_REFERENCE_CACHE`` or
``~/.cache/nodeops-rollout/reference`` and ``<key>`` digests the three ``go.mod``/``go.sum`` pairs and the Go
version: a changed pin builds again, an unchanged one is reused. Only Go modules are downloaded, through
the module proxy ``go`` is configured with. ``$NODEOPS_REFERENCE_BUILD_JOBS`` limits the parallel compile jobs
(the test command builds with one while other stages run).
"""

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


def pins():
    """{module directory: the version it pins} for what is built, read from the wrapper go.mod files."""
    out = {}
    for module, wanted in (("kubernetes", "k8s.io/kubernetes"), ("etcd", "go.etcd.io/etcd/server/v3"),
                           ("kwok", "sigs.k8s.io/kwok")):
        with open(os.path.join(GO_DIR, module, "go.mod"), encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2 and parts[-2] == wanted and parts[-1].startswith("v"):
                    out[wanted] = parts[-1]
    return out


def cache_key():
    digest = hashlib.sha256(go_version().encode())
    for module in sorted({module for module, _package in TARGETS.values()}):
        for name in sorted(os.listdir(os.path.join(GO_DIR, module))):
            with open(os.path.join(GO_DIR, module, name), "rb") as fh:
                digest.update(name.encode() + b"\0" + fh.read())
    return "k8s-%s-%s" % (pins().get("k8s.io/kubernetes", "unknown"), digest.hexdigest()[:12])


def bin_dir():
    return os.path.join(cache_root(), cache_key(), "bin")


def built():
    """The bin directory when every binary is there, else None."""
    path = bin_dir()
    if all(os.access(os.path.join(path, name), os.X_OK) for name in TARGETS):
        return path
    return None


def build(log=sys.stderr):
    """Build what is missing; return the bin directory. Each binary is written under a temporary name and
    renamed, so an interrupted build never leaves a half-written binary that looks built."""
    path = bin_dir()
    os.makedirs(path, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -trimpath")
    for name, (module, package) in sorted(TARGETS.items()):
        target = os.path.join(path, name)
        if os.access(target, os.X_OK):
            continue
        started = time.monotonic()
        print("reference: building %s from %s ..." % (name, package if package != "." else "go/" + module), file=log, flush=True)
        partial = target + ".partial"
        jobs = ["-p", os.environ["NODEOPS_REFERENCE_BUILD_JOBS"]] if os.environ.get("NODEOPS_REFERENCE_BUILD_JOBS") else []
        proc = subprocess.run([_go(), "build"] + jobs + ["-ldflags=-s -w", "-o", partial, package], cwd=os.path.join(GO_DIR, module),
                              env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError("go build %s failed:\n%s" % (package, (proc.stdout + proc.stderr)[-4000:]))
        os.replace(partial, target)
        print("reference: built %s in %.0fs" % (name, time.monotonic() - started), file=log, flush=True)
    return path


def ensure(log=sys.stderr):
    return built() or build(log)


def main():
    started = time.monotonic()
    path = ensure()
    print("reference control plane in %s (%s; %.0fs)" % (
        path, ", ".join("%s %s" % kv for kv in sorted(pins().items())), time.monotonic() - started))


if __name__ == "__main__":
    main()
