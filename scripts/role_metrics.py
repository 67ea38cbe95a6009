"""How much of the collection's logic lives where: the role's task files, tasks and internal facts, the Jinja
expressions in it that decide (rather than format or pass a value on), the largest module_utils file, and the import
cycles among module_utils. Prints one figure per line; ``--json`` prints them as JSON.

    python scripts/role_metrics.py [--json]

What counts as a Jinja expression that decides: a ``when`` condition that is not a plain flag (``x``, ``x | bool``,
``not (x | bool)``, ``x is skipped``...) nor one comparison of a value with a literal (``cmd.action == 'drain'``); and
any other templated value whose expression chooses (``if``), filters or builds a list (``select``, ``reject``,
``selectattr``, ``rejectattr``, ``unique``, ``difference``, ``union``, ``flatten``, ``sum``, ``combine``, ``zip``), or
computes (arithmetic, comparisons, ``in``). Formatting (``~``, ``join``, ``default``, ``length`` alone) does not count.
"""

import argparse
import ast
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROLE_TASKS = os.path.join(ROOT, "roles", "rolling_update", "tasks")
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PACKAGE = "ansible_collections.nodeops.rollout.plugins.module_utils"

TASK_KEYS = ("block", "rescue", "always")
PLAIN_WHEN = re.compile(r"^(not \(?)?[\w.\[\]'\"]+( \| bool)?\)?( is (not )?(none|defined|undefined|skipped|failed|succeeded|changed))?$")
ONE_COMPARISON = re.compile(r"^[\w.\[\]'\"]+ (==|!=) ('[^']*'|\"[^\"]*\"|\d+|true|false)$")
DECIDING = re.compile(r"(\bif\b|\bselect\b|\breject\b|selectattr|rejectattr|\bunique\b|\bdifference\b|\bunion\b|\bflatten\b|"
                      r"\|\s*sum\b|\bcombine\b|\bzip\b|[^~|\s]\s[-+*/]\s|==|!=|<=|>=|\s[<>]\s|\bin\b)")
EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)


def tasks_of(items):
    """Every task of a task list, those inside blocks included (a block counts as a task too)."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in TASK_KEYS:
            yield from tasks_of(item.get(key))


def strings_of(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)


def deciding_whens(task):
    conditions = task.get("when")
    if conditions is None:
        return 0
    conditions = conditions if isinstance(conditions, list) else [conditions]
    return sum(1 for condition in conditions if not PLAIN_WHEN.match(str(condition).strip())
               and not ONE_COMPARISON.match(str(condition).strip()))


def deciding_values(task):
    found = 0
    for key, value in task.items():
        if key in ("when", "name") + TASK_KEYS:
            continue
        for text in strings_of(value):
            found += sum(1 for expression in EXPRESSION.findall(text) if DECIDING.search(expression))
    return found


def role_figures():
    files = sorted(name for name in os.listdir(ROLE_TASKS) if name.endswith(".yml"))
    tasks = whens = values = 0
    facts = set()
    for name in files:
        path = os.path.join(ROLE_TASKS, name)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        facts.update(re.findall(r"\brolling_update__\w+", text))
        for task in tasks_of(yaml.safe_load(text)):
            tasks += 1
            whens += deciding_whens(task)
            values += deciding_values(task)
    return {"task_files": len(files), "tasks": tasks, "rolling_update__names": len(facts),
            "jinja_deciding_when": whens, "jinja_deciding_values": values, "jinja_deciding": whens + values}


def module_imports():
    """``{module: {imported modules}}`` for the files of plugins/module_utils, named relative to it (``rollout.steps``)."""
    graph = {}
    for directory, _dirs, names in os.walk(MODULE_UTILS):
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            module = os.path.relpath(path, MODULE_UTILS)[:-3].replace(os.sep, ".")
            module = module[:-len(".__init__")] if module.endswith(".__init__") else module
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            found = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
                    found.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
                    base = node.module[len(PACKAGE) + 1:]
                    found.add(base)
                    # from ...module_utils.rollout import lease_lock imports the module rollout.lease_lock
                    found.update("%s.%s" % (base, alias.name) for alias in node.names)
                elif isinstance(node, ast.Import):
                    found.update(alias.name[len(PACKAGE) + 1:] for alias in node.names if alias.name.startswith(PACKAGE + "."))
            graph[module] = found
    return graph


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in graph:
                continue
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def package_graph(graph):
    """The same imports between the packages of module_utils (a top-level file is its own package)."""
    packages = {}
    for module, imported in graph.items():
        source = module.split(".")[0]
        packages.setdefault(source, set()).update(name.split(".")[0] for name in imported if name.split(".")[0] != source)
    return packages


def module_utils_figures():
    sizes = {}
    for directory, _dirs, names in os.walk(MODULE_UTILS):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as handle:
                    sizes[os.path.relpath(path, ROOT)] = sum(1 for _line in handle)
    largest = max(sizes, key=sizes.get)
    graph = module_imports()
    return {"largest_module_utils_file": largest, "largest_module_utils_lines": sizes[largest],
            "import_cycles_modules": cycles(graph), "import_cycles_packages": cycles(package_graph(graph))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    figures = dict(role_figures(), **module_utils_figures())
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    for key, value in figures.items():
        print("%-28s %s" % (key, value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
