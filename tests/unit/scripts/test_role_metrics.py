# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""scripts/role_metrics.py measured on a small tree laid out as the collection, whose every figure is known."""

from __future__ import annotations

import importlib.util
import json
import os
import textwrap

import pytest

_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "role_metrics.py")
_PACKAGE = "ansible_collections.nodeops.rollout.plugins.module_utils"

TREE = {
    "roles/rolling_update/defaults/main.yml": """
        rolling_update_max_unavailable: 1
        """,
    "roles/rolling_update/vars/main.yml": """
        # run_record in a comment is no call
        rolling_update__action: rollout
        rolling_update__mode: "{{ 'fast' if rolling_update_fast else 'slow' }}"
        rolling_update__batch: "{{ rolling_update_max_unavailable | int }}"
        rolling_update__first: "{{ {} | nodeops.rollout.run_record('open') }}"
        rolling_update__title: "{{ rolling_update__action ~ ' | ' ~ rolling_update__mode }}"
        """,
    "roles/rolling_update/tasks/main.yml": """
        - name: Settle the settings
          ansible.builtin.set_fact:
            rolling_update__settings: "{{ {'rolling_update_max_unavailable': rolling_update_max_unavailable} | nodeops.rollout.rollout_settings }}"
        - name: Read the group
          nodeops.rollout.node_group_info:
            name: demo
          register: rolling_update__info
        - name: Each group
          when: rolling_update__action == 'rollout'
          block:
            - name: One group
              ansible.builtin.include_tasks: node_group.yml
              loop: "{{ rolling_update__settings.node_groups }}"
              loop_control:
                loop_var: rolling_update__group_spec
            - name: Record it
              ansible.builtin.set_fact:
                rolling_update__run: "{{ rolling_update__run | nodeops.rollout.run_record('step', rolling_update__info) }}"
              when: rolling_update__info.action == 'drain'
        """,
    "roles/rolling_update/tasks/node_group.yml": """
        - name: Settle the group
          ansible.builtin.set_fact:
            rolling_update__max_unavailable: "{{ rolling_update__group_spec.max_unavailable }}"
            rolling_update__run: "{{ rolling_update__run | run_record('open', 'setup') }}"
        - name: The group's path
          ansible.builtin.include_tasks: "{{ rolling_update__action }}.yml"
          when: rolling_update__changing | bool
        - name: Steps
          ansible.builtin.include_tasks: upgrade.yml
          when:
            - rolling_update__run.started
            - rolling_update__left | length > 0
        """,
    "roles/rolling_update/tasks/cancel.yml": """
        - name: Every group, cancelled
          ansible.builtin.include_role:
            name: nodeops.rollout.rolling_update
            tasks_from: main
          vars:
            rolling_update__action: cancel
        """,
    "roles/rolling_update/tasks/upgrade.yml": """
        - name: Step
          nodeops.rollout.rollout_step:
            max_unavailable: "{{ rolling_update__max_unavailable }}"
            skip: "{{ rolling_update__skip | select('match', 'ip-') | list }}"
          register: rolling_update__step
        - name: Next step
          ansible.builtin.include_tasks: upgrade.yml
          when: rolling_update__step.step.does.more
        """,
    "roles/rolling_update/tasks/hooks.yml": """
        - name: A hook
          ansible.builtin.include_tasks: "{{ rolling_update__hook_file }}"
        - name: Another role's main, not this one's
          ansible.builtin.include_role:
            name: other.collection.rolling
        """,
    "playbooks/serial.yml": """
        - name: A canary, then max_unavailable at a time
          hosts: nodes
          serial:
            - 1
            - "{{ rolling_update_max_unavailable | default(1) }}"
          tasks: []
        """,
    "plugins/modules/rollout_step.py": """
        from %(package)s.step import run_step
        from %(package)s.values import parse_count


        def main():
            run_step({"max_unavailable": 1})
        """,
    "plugins/modules/node_group_info.py": """
        from %(package)s.group import read_group
        """,
    "plugins/module_utils/__init__.py": "",
    "plugins/module_utils/values.py": """
        from %(package)s.group import read_group


        def parse_count(value):
            return int(value)
        """,
    "plugins/module_utils/group.py": """
        from %(package)s.values import parse_count


        def read_group(params):
            return {"max_unavailable": params.get("max_unavailable")}
        """,
    "plugins/module_utils/step.py": """
        import functools

        from %(package)s.values import parse_count
        from %(package)s.rollout.steps import next_step


        def check_options(params):
            if params.get("max_unavailable") is not None:
                parse_count(params["max_unavailable"])


        def described(params):
            return "at most %%s at once" %% params.get("max_unavailable")


        class Reader:
            def __init__(self, params):
                self.params = params

            def decide(self):
                count = parse_count(self.params.get("max_unavailable"))
                decide = functools.partial(next_step, [], count)
                return decide()


        def run_step(params):
            check_options(params)
            return Reader(params).decide()
        """,
    "plugins/module_utils/rollout/__init__.py": "",
    "plugins/module_utils/rollout/steps.py": """
        def next_step(instances, max_unavailable):
            if max_unavailable < 1:
                raise ValueError("max_unavailable")
            return instances[:max_unavailable]


        def max_unavailable_text(value):
            return str(value)
        """,
    "plugins/module_utils/rollout/settings.py": """
        def settle(group, defaults):
            for key, allow_zero in (("max_unavailable", False), ("max_surge", True)):
                group[key] = _count(group.get(key) or defaults[key], allow_zero)
            return group


        def _count(value, allow_zero):
            return value
        """,
    "plugins/module_utils/drain/__init__.py": "",
    "plugins/module_utils/drain/rules.py": """
        def one_at_a_time(budget):
            return int(budget["max_unavailable"]) == 1
        """,
}

EXPECTED = {
    "task_files": 5,
    # main.yml 5 (its block and the two inside), node_group.yml 3, cancel.yml 1, upgrade.yml 2, hooks.yml 2
    "tasks": 13,
    "rolling_update__names": 15,
    # rolling_update__action == 'rollout' (a role variable compared), rolling_update__left | length > 0; not the
    # registered answer rolling_update__info.action == 'drain', nor the flags
    "jinja_deciding_when": 2,
    # the select of upgrade.yml's skip
    "jinja_deciding_values": 1,
    # vars/main.yml's if
    "jinja_deciding_vars": 1,
    "jinja_deciding": 4,
    # main.yml 1, node_group.yml 1, vars/main.yml 1; not the comment
    "run_record_calls": 3,
    "include_cycles": [["cancel.yml", "main.yml", "node_group.yml"], ["upgrade.yml"]],
    "include_unresolved": ["hooks.yml: {{ rolling_update__hook_file }}"],
    "largest_module_utils_file": "plugins/module_utils/step.py",
    "largest_module_utils_lines": 28,
    "import_cycles_modules": [["group", "values"]],
    "import_cycles_packages": [["group", "values"]],
    "module_utils_loose_files": 3,
    "max_unavailable_place_list": [
        "plugins/module_utils/step.py check_options",
        "plugins/module_utils/step.py Reader.decide",
        "plugins/module_utils/rollout/settings.py settle",
        "plugins/module_utils/rollout/steps.py next_step",
        "plugins/module_utils/rollout/steps.py max_unavailable_text",
        "roles/rolling_update/vars/main.yml {{ rolling_update_max_unavailable | int }}",
        "playbooks/serial.yml serial: of 'A canary, then max_unavailable at a time'",
    ],
    "max_unavailable_places": 7,
    "max_unavailable_hops": 6,
    "max_unavailable_path": [
        "rolling_update_max_unavailable (the role's variable)",
        "roles/rolling_update/tasks/main.yml: rolling_update__settings",
        "roles/rolling_update/tasks/main.yml: rolling_update__group_spec",
        "roles/rolling_update/tasks/node_group.yml: rolling_update__max_unavailable",
        "roles/rolling_update/tasks/upgrade.yml: rollout_step.max_unavailable",
        "plugins/module_utils/step.py Reader.decide (the runner reads the option)",
        "plugins/module_utils/rollout/steps.py next_step(max_unavailable)",
    ],
}


@pytest.fixture(scope="module")
def metrics():
    spec = importlib.util.spec_from_file_location("role_metrics", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(root, files):
    for path, text in files.items():
        full = os.path.join(str(root), *path.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text).lstrip("\n") % {"package": _PACKAGE} if path.endswith(".py") else textwrap.dedent(text).lstrip("\n"))
    return str(root)


@pytest.fixture
def tree(tmp_path):
    return _write(tmp_path, TREE)


def _figures(metrics, root, capsys):
    assert metrics.main(["--json", "--root", root]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_figure_of_the_fixture(metrics, tree, capsys):
    assert _figures(metrics, tree, capsys) == EXPECTED


def test_a_comparison_with_a_literal_decides_unless_it_reads_a_registered_answer(metrics, tmp_path, capsys):
    files = dict(TREE)
    files["roles/rolling_update/tasks/main.yml"] = files["roles/rolling_update/tasks/main.yml"].replace(
        "register: rolling_update__info", "register: rolling_update__other")
    figures = _figures(metrics, _write(tmp_path, files), capsys)
    # rolling_update__info is no longer a module's answer: its comparison with 'drain' decides
    assert figures["jinja_deciding_when"] == EXPECTED["jinja_deciding_when"] + 1


def test_a_second_parse_of_max_unavailable_is_a_place(metrics, tmp_path, capsys):
    files = dict(TREE)
    files["plugins/module_utils/group.py"] = files["plugins/module_utils/group.py"].replace(
        'params.get("max_unavailable")', 'parse_count(params.get("max_unavailable"))')
    figures = _figures(metrics, _write(tmp_path, files), capsys)
    assert figures["max_unavailable_places"] == EXPECTED["max_unavailable_places"] + 1
    assert "plugins/module_utils/group.py read_group" in figures["max_unavailable_place_list"]


def test_a_fact_fewer_is_a_hop_fewer(metrics, tmp_path, capsys):
    files = dict(TREE)
    files["roles/rolling_update/tasks/upgrade.yml"] = files["roles/rolling_update/tasks/upgrade.yml"].replace(
        "rolling_update__max_unavailable }}", "rolling_update__group_spec.max_unavailable }}")
    figures = _figures(metrics, _write(tmp_path, files), capsys)
    assert figures["max_unavailable_hops"] == EXPECTED["max_unavailable_hops"] - 1
    assert "roles/rolling_update/tasks/node_group.yml: rolling_update__max_unavailable" not in figures["max_unavailable_path"]


def test_settings_gathered_by_their_names_are_followed(metrics, tmp_path, capsys):
    files = dict(TREE)
    files["roles/rolling_update/tasks/main.yml"] = files["roles/rolling_update/tasks/main.yml"].replace(
        "{{ {'rolling_update_max_unavailable': rolling_update_max_unavailable} | nodeops.rollout.rollout_settings }}",
        "{{ query('ansible.builtin.varnames', '^rolling_update_[^_]') | nodeops.rollout.rollout_settings }}")
    figures = _figures(metrics, _write(tmp_path, files), capsys)
    # the variable is read by the names the query matches: the same way, the same hops
    assert figures["max_unavailable_path"] == EXPECTED["max_unavailable_path"]
    # a query whose pattern the variable does not match reads it not
    files["roles/rolling_update/tasks/main.yml"] = files["roles/rolling_update/tasks/main.yml"].replace("'^rolling_update_[^_]'", "'^other_'")
    assert _figures(metrics, _write(tmp_path / "other", files), capsys)["max_unavailable_hops"] is None


def test_a_method_of_an_object_the_runner_holds_is_followed_to_the_key_it_reads(metrics, tmp_path, capsys):
    files = dict(TREE)
    files["plugins/module_utils/step.py"] = files["plugins/module_utils/step.py"].replace(
        """                decide = functools.partial(next_step, [], count)
                return decide()""",
        """                view = {"instances": [], "max_unavailable": count}
                return self.goal.step(view)""").replace(
        "from %(package)s.rollout.steps import next_step", "from %(package)s.rollout.goals import Replace")
    files["plugins/module_utils/rollout/goals.py"] = """
        from %(package)s.rollout.steps import next_step


        class Replace:
            def step(self, view):
                return next_step(view["instances"], view["max_unavailable"])
        """
    figures = _figures(metrics, _write(tmp_path, files), capsys)
    assert figures["max_unavailable_hops"] == EXPECTED["max_unavailable_hops"] + 1
    # the dict's other key (instances) is not the value followed
    assert figures["max_unavailable_path"][-2:] == ["plugins/module_utils/rollout/goals.py Replace.step(view)",
                                                    "plugins/module_utils/rollout/steps.py next_step(max_unavailable)"]


def test_a_runner_that_does_not_pass_it_on_has_no_hops(metrics, tmp_path, capsys):
    files = dict(TREE)
    files["plugins/module_utils/step.py"] = files["plugins/module_utils/step.py"].replace(
        "functools.partial(next_step, [], count)", "functools.partial(next_step, [], 1)")
    figures = _figures(metrics, _write(tmp_path, files), capsys)
    assert figures["max_unavailable_hops"] is None
    assert figures["max_unavailable_path"] == [
        "no way from rolling_update_max_unavailable through a module's option max_unavailable to rollout/steps.py next_step"]


def test_a_file_that_includes_nothing_again_breaks_the_cycle(metrics, tmp_path, capsys):
    files = dict(TREE)
    files["roles/rolling_update/tasks/cancel.yml"] = """
        - name: Cancel
          ansible.builtin.debug:
            msg: cancelled
        """
    figures = _figures(metrics, _write(tmp_path, files), capsys)
    assert figures["include_cycles"] == [["upgrade.yml"]]


def test_the_figures_print_one_a_line(metrics, tree, capsys):
    assert metrics.main(["--root", tree]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["task_files", "5"]
    assert any(line.split()[:2] == ["max_unavailable_hops", "6"] for line in lines)
