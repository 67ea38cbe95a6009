# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""plugins/module_utils imports downwards only: no circle of imports between its modules or its packages, and no
package imports from a layer above its own (docs/architecture.md, Layers). The imports are read by
scripts/role_metrics.py, the same reader that prints ``import_cycles_packages``."""

from __future__ import annotations

import importlib.util
import os

import pytest

_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "scripts", "role_metrics.py")

# Bottom to top. A package (a folder of module_utils) imports only from its own layer or below.
LAYERS = (
    ("shared values and errors", {"core"}),
    ("clients", {"clients"}),
    ("pure rules", {"drain", "rollout", "report", "fleet"}),
    ("runners", {"runners"}),
)


@pytest.fixture(scope="module")
def metrics():
    spec = importlib.util.spec_from_file_location("role_metrics", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def graph(metrics):
    return metrics.module_imports()


def _layer(package):
    for number, (_name, packages) in enumerate(LAYERS):
        if package in packages:
            return number
    return None


def test_no_circle_of_imports_between_modules(metrics, graph):
    assert metrics.cycles(graph) == []


def test_no_circle_of_imports_between_packages(metrics, graph):
    assert metrics.cycles(metrics.package_graph(graph)) == []


def test_every_package_has_a_layer(metrics, graph):
    assert sorted(package for package in metrics.package_graph(graph) if _layer(package) is None) == []


def test_packages_import_downwards_only(metrics, graph):
    upwards = sorted("%s (%s) imports %s (%s)" % (package, LAYERS[_layer(package)][0], other, LAYERS[_layer(other)][0])
                     for package, imported in metrics.package_graph(graph).items() for other in imported
                     if _layer(package) is not None and _layer(other) is not None and _layer(other) > _layer(package))
    assert upwards == []


def test_the_reader_sees_every_form_of_import(metrics, graph):
    assert "rollout.lease_lock" in graph["rollout.settings"]  # from ...module_utils.rollout import lease_lock
    assert "core.values" in graph["rollout.steps"]            # from ...module_utils.core.values import ...


def test_a_circle_is_found(metrics):
    assert metrics.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_nothing_is_loose_at_the_top_of_module_utils(metrics):
    top = os.path.dirname(metrics.MODULE_UTILS + os.sep)
    loose = sorted(name for name in os.listdir(top) if name.endswith(".py"))
    assert loose == []
    assert sorted(name for name in os.listdir(top) if not name.startswith((".", "__"))) == [
        "clients", "core", "drain", "fleet", "report", "rollout", "runners"]
