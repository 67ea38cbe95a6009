# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Every plugins/module_utils source has its unit test file: the same folder under tests/unit/plugins/module_utils,
named test_<source name>.py."""

from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "plugins", "module_utils"))


def sources(root):
    """The module_utils sources, as paths relative to ``root`` (package markers left out)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(name for name in dirs if name != "__pycache__")
        found.extend(os.path.relpath(os.path.join(folder, name), root) for name in files
                     if name.endswith(".py") and name != "__init__.py")
    return sorted(found)


def missing_test_files(source_root, test_root):
    """The sources under ``source_root`` with no test_<name>.py in the same folder under ``test_root``."""
    return [source for source in sources(source_root)
            if not os.path.isfile(os.path.join(test_root, os.path.dirname(source), "test_" + os.path.basename(source)))]


def test_every_module_utils_source_has_a_test_file_named_after_it():
    assert len(sources(SOURCES)) > 50      # the walk found the sources
    assert missing_test_files(SOURCES, HERE) == []


def test_a_source_without_its_test_file_is_named(tmp_path):
    source, tests = tmp_path / "module_utils", tmp_path / "tests"
    for path in ("__init__.py", "tested.py", "rollout/__init__.py", "rollout/untested.py", "rollout/elsewhere.py"):
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text("")
    for path in ("test_tested.py", "test_elsewhere.py", "rollout/test_other.py"):
        (tests / path).parent.mkdir(parents=True, exist_ok=True)
        (tests / path).write_text("")
    # a test file in another folder than its source's does not count
    assert missing_test_files(str(source), str(tests)) == ["rollout/elsewhere.py", "rollout/untested.py"]
