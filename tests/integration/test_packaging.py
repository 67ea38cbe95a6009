"""The collection as Galaxy ships it: ``ansible-galaxy collection build`` of this tree, installed as a user installs it.
The tarball holds what runs without this repository - the plugins, roles, playbooks, docs and the unit tests - and
none of what needs the sandbox it does not ship (the end-to-end tests, molecule, the benchmarks, the test command);
and the modules ``ansible-doc`` lists from it are the modules the README's table names, with their action groups."""

import json
import os
import re
import subprocess
import tarfile

import pytest
import yaml

from sandbox.drive.handle import BIN, ROOT

# what needs the sandbox (or the repository) to run: never in the tarball
NOT_SHIPPED = ("sandbox/", "bench/", "tests/integration/", "extensions/", "scripts/", ".ci/", "tests/output/", ".hypothesis/")
SHIPPED = ("MANIFEST.json", "FILES.json", "README.md", "LICENSE", "meta/runtime.yml", "meta/execution-environment.yml",
           "requirements.txt", "bindep.txt", "plugins/modules/node_drain.py", "plugins/action/node_drain.py",
           "plugins/plugin_utils/in_worker.py", "roles/rolling_update/meta/argument_specs.yml", "playbooks/upgrade.yml",
           "docs/rbac.yaml", "docs/iam-policy.json", "tests/config.yml", "tests/unit/plugins/modules/test_action_groups.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(tarball, member names, installed collections path)``."""
    out = tmp_path_factory.mktemp("galaxy")
    proc = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out), ROOT],
                          cwd=str(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout
    tarball = next(out.glob("nodeops-rollout-*.tar.gz"))
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
    installed = out / "collections"
    # only the install path is configured: this tree, installed for the tests, would count as installed already
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(installed))
    proc = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "-p", str(installed), str(tarball)],
                          cwd=str(out), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout
    assert (installed / "ansible_collections" / "nodeops" / "rollout" / "MANIFEST.json").exists(), proc.stdout
    return tarball, names, installed


def test_the_tarball_ships_the_collection_and_nothing_that_needs_the_sandbox(built):
    dummy, names, dummy = built
    files = [name for name in names if not name.endswith("/")]
    assert [name for name in files if name.startswith(NOT_SHIPPED) or "__pycache__" in name] == []
    missing = [name for name in SHIPPED if name not in names]
    assert missing == [], missing
    # every module, its action plugin, and every unit test file of the repository
    for folder in ("plugins/modules", "plugins/action", "tests/unit"):
        tracked = subprocess.run(["git", "ls-files", folder], cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True).stdout.split()
        assert tracked and sorted(set(tracked) - set(names)) == [], folder
    # a shipped unit test imports nothing that is not shipped
    for name in files:
        if name.startswith("tests/unit/") and name.endswith(".py"):
            with open(os.path.join(ROOT, name), encoding="utf-8") as fh:
                text = fh.read()
            assert not re.search(r"^\s*(from|import) (sandbox|tests\.integration)\b", text, re.M), name


def readme_modules():
    """``{module: (all, aws, k8s)}`` from the README's table of modules and groups."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| (yes|no) \| (yes|no) \| (yes|no) \|$", fh.read(), re.M)
    return {name: tuple(cell == "yes" for cell in cells) for name, *cells in rows}


def test_ansible_doc_lists_the_modules_the_readme_names_in_the_groups_it_says(built):
    dummy, dummy, installed = built
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(installed))
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), "-l", "nodeops.rollout", "-t", "module", "--json"], cwd=str(installed),
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    listed = sorted(name.split(".")[-1] for name in json.loads(proc.stdout))
    table = readme_modules()
    assert listed == sorted(table) and len(listed) == 10, (listed, table)
    with open(os.path.join(str(installed), "ansible_collections", "nodeops", "rollout", "meta", "runtime.yml"), encoding="utf-8") as fh:
        groups = yaml.safe_load(fh)["action_groups"]
    for index, group in enumerate(("all", "aws", "k8s")):
        members = sorted(entry for entry in groups[group] if isinstance(entry, str))
        assert members == sorted(name for name, cells in table.items() if cells[index]), group
    # the module in no group says so, and why, in its own docs
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), "nodeops.rollout.fleet_state", "--json"], cwd=str(installed), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, check=False)
    attribute = json.loads(proc.stdout)["nodeops.rollout.fleet_state"]["doc"]["attributes"]["action_group"]
    assert attribute["support"] == "none" and attribute["membership"] == [] and "ledger" in " ".join(attribute["details"])
