"""How much of the collection's logic lives where, and how far one setting travels. Prints one figure per line;
``--json`` prints them as JSON; ``--root`` measures another tree laid out as this one (the unit test's fixture).

    python scripts/role_metrics.py [--json] [--root DIR] [--role NAME]

The role's figures read ``roles/<role>/tasks/*.yml`` (the task files, their tasks and blocks, the ``<role>__`` names)
and ``roles/<role>/vars/*.yml`` (each templated value there counts as a task's value does).

What counts as a Jinja expression that decides:

- a ``when`` condition, unless it is a plain flag (``x``, ``x | bool``, ``not (x | bool)``, ``x is skipped``, ``x is
  defined``...) or the reading of a module's answer: one comparison with a literal whose left side is a field of a
  result the role registered (``cmd.action == 'drain'``, where some task has ``register: cmd``). Any other comparison
  with a literal (``rolling_update__action != 'rollout'``, ``x == 'a'``) decides;
- any other templated value (a task's argument, ``vars:``, a ``vars/`` value) whose expression chooses (``if``),
  filters or builds a list (``select``, ``reject``, ``selectattr``, ``rejectattr``, ``unique``, ``difference``,
  ``union``, ``flatten``, ``sum``, ``combine``, ``zip``), or computes (arithmetic, comparisons, ``in``). Formatting
  (``~``, ``join``, ``default``, ``length`` alone) does not count.

The other figures:

- ``run_record_calls``: uses of the filter ``run_record`` (``| run_record``, ``| nodeops.rollout.run_record``) in the
  role's task and vars files (comments do not count);
- ``include_cycles``: the role's task files that reach themselves through ``include_tasks`` / ``import_tasks`` /
  ``include_role`` / ``import_role`` of the same role, as strongly connected components (a file that includes itself
  is a component of one). A templated file name ``{{ v }}.yml`` stands for every literal value the role gives ``v``
  (vars, defaults, a task's ``vars:`` or ``set_fact``); a name it cannot resolve is listed in ``include_unresolved``;
- ``module_utils_loose_files``: the ``.py`` files directly in plugins/module_utils (``__init__.py`` aside);
- ``max_unavailable_places``: the places that parse or re-interpret ``max_unavailable``. In Python (plugins/, but
  plugins/module_utils/drain/, whose ``max_unavailable`` is a workload's rolling update field, another meaning): each
  function named after it, and each function in which a read of it - a name ``max_unavailable``, a key
  ``"max_unavailable"`` (subscript, ``.get()``, any call's argument, a loop over keys naming it) - is inside an argument
  of a converting call (``int``, ``float``, or a function whose name says ``parse``, ``percent``, ``count``,
  ``int_``, ``at_least``) or an operand of a comparison (``is None`` aside). In YAML (the role's tasks and vars, the
  playbooks): each Jinja expression that names it and converts (``| int``, ``| float``) or compares it, and each
  ``serial:`` that names it;
- ``max_unavailable_hops``: the handoffs of the value from the role variable ``<role>_max_unavailable`` to
  ``rollout/steps.py`` ``next_step``, found by following the name, shortest path first. In the role's YAML a hop is
  each time the value is given a new name: a fact (``set_fact``), a variable (``vars:``, ``vars/``), a loop variable
  (``loop:`` -> ``loop_var``), a task argument (the module's option), and ``query('varnames', regex)`` reads each
  role variable its regex matches; then one hop from the option to the functions of the runner (the
  module_utils/runners/ file the module imports) that read the option's key; then one hop per call that passes it on (a
  local assigned from it is the same hop's value, and so is a dict built from it; ``functools.partial(f, ...)`` calls
  ``f``; a call on an object it holds, ``goal.step(view)``, reaches each imported method of that name).
  ``max_unavailable_path`` lists each name on the way.
"""

import argparse
import ast
import collections
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROLE = "rolling_update"
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PACKAGE = "ansible_collections.nodeops.rollout.plugins.module_utils"
COLLECTION = "nodeops.rollout"

TASK_KEYS = ("block", "rescue", "always")
# the keywords of a task; any other key of a task is its module
TASK_KEYWORDS = frozenset((
    "name", "when", "register", "loop", "loop_control", "vars", "tags", "become", "become_user", "become_method",
    "delegate_to", "delegate_facts", "run_once", "changed_when", "failed_when", "until", "retries", "delay", "no_log",
    "ignore_errors", "ignore_unreachable", "environment", "module_defaults", "check_mode", "diff", "notify", "args",
    "throttle", "any_errors_fatal", "listen", "debugger", "collections", "connection", "timeout", "async", "poll",
    "local_action", "action", "with_items", "with_list", "with_dict", "with_fileglob", "with_subelements",
    "with_sequence", "with_nested", "with_together", "apply") + TASK_KEYS)
INCLUDES = frozenset(("include_tasks", "import_tasks"))
ROLE_INCLUDES = frozenset(("include_role", "import_role"))
SET_FACT = "set_fact"
PLAIN_WHEN = re.compile(r"^(not \(?)?[\w.\[\]'\"]+( \| bool)?\)?( is (not )?(none|defined|undefined|skipped|failed|succeeded|changed))?$")
ONE_COMPARISON = re.compile(r"^([\w.\[\]'\"]+) (==|!=) ('[^']*'|\"[^\"]*\"|\d+|true|false)$")
DECIDING = re.compile(r"(\bif\b|\bselect\b|\breject\b|selectattr|rejectattr|\bunique\b|\bdifference\b|\bunion\b|\bflatten\b|"
                      r"\|\s*sum\b|\bcombine\b|\bzip\b|[^~|\s]\s[-+*/]\s|==|!=|<=|>=|\s[<>]\s|\bin\b)")
EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)
RUN_RECORD = re.compile(r"\|\s*(?:nodeops\.rollout\.)?run_record\b")
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
# a name an expression reads: not an attribute (after a dot) nor a filter or test (after | or is)
ROOT_NAME = re.compile(r"(?<![\w.|])(?<!\|\s)(?<!\bis\s)([A-Za-z_]\w*)")

MAX_UNAVAILABLE = "max_unavailable"
CONVERTERS = re.compile(r"^(int|float)$|parse|percent|count|int_|at_least")
YAML_CONVERSION = re.compile(r"\|\s*(int|float)\b|==|!=|<=|>=|\s[<>]\s")
PLACES_OUTSIDE = ("drain",)  # module_utils packages whose max_unavailable is a workload's field, another meaning
GOAL = ("rollout/steps.py", "next_step")


def _short(module):
    """A module's name without its collection (``nodeops.rollout.node_drain`` -> ``node_drain``)."""
    return str(module).rsplit(".", 1)[-1]


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or []


def _yml_files(directory):
    if not os.path.isdir(directory):
        return []
    return sorted(name for name in os.listdir(directory) if name.endswith((".yml", ".yaml")))


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


def module_of(task):
    """``(short module name, its arguments)`` of a task, or ``(None, None)`` for a block."""
    for key, value in task.items():
        if key not in TASK_KEYWORDS:
            return _short(key), value
    return None, None


def names_read(text):
    """The root names the Jinja expressions of a string read (``a.b | f(c)`` reads ``a`` and ``c``)."""
    found = set()
    for expression in EXPRESSION.findall(text):
        found.update(ROOT_NAME.findall(QUOTED.sub("''", expression)))
    return found


def deciding_whens(task, registered=frozenset()):
    conditions = task.get("when")
    if conditions is None:
        return 0
    conditions = conditions if isinstance(conditions, list) else [conditions]
    found = 0
    for condition in conditions:
        text = str(condition).strip()
        if PLAIN_WHEN.match(text):
            continue
        comparison = ONE_COMPARISON.match(text)
        if comparison and "." in comparison.group(1) and re.split(r"[.\[]", comparison.group(1))[0] in registered:
            continue
        found += 1
    return found


def deciding_in(value):
    return sum(1 for text in strings_of(value) for expression in EXPRESSION.findall(text) if DECIDING.search(expression))


def deciding_values(task):
    return sum(deciding_in(value) for key, value in task.items() if key not in ("when", "name") + TASK_KEYS)


def run_record_calls(value):
    return sum(len(RUN_RECORD.findall(expression)) for text in strings_of(value) for expression in EXPRESSION.findall(text))


def role_files(root, role):
    """``({task file: its tasks}, {vars file: its mapping})`` of a role."""
    base = os.path.join(root, "roles", role)
    tasks = {name: list(tasks_of(_load(os.path.join(base, "tasks", name)))) for name in _yml_files(os.path.join(base, "tasks"))}
    variables = {name: _load(os.path.join(base, "vars", name)) or {} for name in _yml_files(os.path.join(base, "vars"))}
    return tasks, variables


def role_figures(root=ROOT, role=ROLE):
    base = os.path.join(root, "roles", role)
    tasks, variables = role_files(root, role)
    registered = {task["register"] for items in tasks.values() for task in items if isinstance(task.get("register"), str)}
    facts = set()
    for directory in ("tasks", "vars"):
        for name in _yml_files(os.path.join(base, directory)):
            with open(os.path.join(base, directory, name), encoding="utf-8") as handle:
                facts.update(re.findall(r"\b%s__\w+" % re.escape(role), handle.read()))
    whens = sum(deciding_whens(task, registered) for items in tasks.values() for task in items)
    values = sum(deciding_values(task) for items in tasks.values() for task in items)
    in_vars = sum(deciding_in(mapping) for mapping in variables.values())
    records = (sum(run_record_calls({k: v for k, v in task.items() if k not in TASK_KEYS}) for items in tasks.values() for task in items)
               + sum(run_record_calls(mapping) for mapping in variables.values()))
    cycles_found, unresolved = include_cycles(root, role)
    return {"task_files": len(tasks), "tasks": sum(len(items) for items in tasks.values()), "%s__names" % role: len(facts),
            "jinja_deciding_when": whens, "jinja_deciding_values": values, "jinja_deciding_vars": in_vars,
            "jinja_deciding": whens + values + in_vars, "run_record_calls": records,
            "include_cycles": cycles_found, "include_unresolved": unresolved}


# --- include cycles ------------------------------------------------------------------------------------------------


def literal_values(root, role):
    """``{name: {literal values}}`` the role gives each variable: vars/, defaults/, a task's ``vars:`` and ``set_fact``."""
    values = collections.defaultdict(set)

    def note(mapping):
        for key, value in (mapping or {}).items() if isinstance(mapping, dict) else ():
            if isinstance(value, (str, int, float)) and not isinstance(value, bool) and "{{" not in str(value):
                values[str(key)].add(str(value))

    base = os.path.join(root, "roles", role)
    for directory in ("vars", "defaults"):
        for name in _yml_files(os.path.join(base, directory)):
            note(_load(os.path.join(base, directory, name)))
    for items in role_files(root, role)[0].values():
        for task in items:
            note(task.get("vars"))
            module, args = module_of(task)
            if module == SET_FACT:
                note(args)
    return values


def included_files(task, role, values):
    """``(files of the role this task includes, names it could not resolve)``."""
    module, args = module_of(task)
    if module in INCLUDES:
        name = str(args.get("file") if isinstance(args, dict) else args)
    elif module in ROLE_INCLUDES and isinstance(args, dict) and _short(args.get("name", "")) == role:
        name = str(args.get("tasks_from") or "main")
        name = name if name.endswith((".yml", ".yaml")) else name + ".yml"
    else:
        return [], []
    templated = EXPRESSION.findall(name)
    if not templated:
        return [name], []
    variable = templated[0].strip() if len(templated) == 1 else None
    if variable is None or not re.match(r"^\w+$", variable) or variable not in values:
        return [], [name]
    return [EXPRESSION.sub(value, name) for value in sorted(values[variable])], []


def include_graph(root=ROOT, role=ROLE):
    tasks = role_files(root, role)[0]
    values = literal_values(root, role)
    graph, unresolved = {}, set()
    for name, items in tasks.items():
        graph[name] = set()
        for task in items:
            files, unknown = included_files(task, role, values)
            graph[name].update(other for other in files if other in tasks)
            unresolved.update("%s: %s" % (name, other) for other in unknown)
    return graph, sorted(unresolved)


def include_cycles(root=ROOT, role=ROLE):
    graph, unresolved = include_graph(root, role)
    return cycles(graph, self_loops=True), unresolved


# --- module_utils --------------------------------------------------------------------------------------------------


def module_imports(root=ROOT):
    """``{module: {imported modules}}`` for the files of plugins/module_utils, named relative to it (``rollout.steps``)."""
    base = os.path.join(root, "plugins", "module_utils")
    graph = {}
    for directory, _dirs, names in os.walk(base):
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            module = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
            module = module[:-len(".__init__")] if module.endswith(".__init__") else module
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            found = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
                    found.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
                    base_name = node.module[len(PACKAGE) + 1:]
                    found.add(base_name)
                    # from ...module_utils.rollout import lease_lock imports the module rollout.lease_lock
                    found.update("%s.%s" % (base_name, alias.name) for alias in node.names)
                elif isinstance(node, ast.Import):
                    found.update(alias.name[len(PACKAGE) + 1:] for alias in node.names if alias.name.startswith(PACKAGE + "."))
            graph[module] = found
    return graph


def cycles(graph, self_loops=False):
    """The strongly connected components of more than one node (Tarjan), each sorted; with ``self_loops`` a node with
    an edge to itself is a component too."""
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
            if len(component) > 1 or (self_loops and node in graph.get(node, ())):
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


def module_utils_figures(root=ROOT):
    base = os.path.join(root, "plugins", "module_utils")
    sizes = {}
    for directory, _dirs, names in os.walk(base):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as handle:
                    sizes[os.path.relpath(path, root)] = sum(1 for _line in handle)
    largest = max(sizes, key=sizes.get)
    graph = module_imports(root)
    loose = sorted(name for name in os.listdir(base) if name.endswith(".py") and name != "__init__.py")
    return {"largest_module_utils_file": largest, "largest_module_utils_lines": sizes[largest],
            "import_cycles_modules": cycles(graph), "import_cycles_packages": cycles(package_graph(graph)),
            "module_utils_loose_files": len(loose)}


# --- max_unavailable: where it is parsed, how far it travels ---------------------------------------------------------


def _key_of(node):
    """The string key a subscript or ``.get()`` reads (``x["k"]``, ``x.get("k")``), else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def _reads(expression, names=(), key=None, key_names=()):
    """Whether an expression reads one of ``names`` (a name or attribute), the key ``key`` (subscript, ``.get()``,
    a call's argument ``f("key")``), or a subscript by a loop variable over keys naming it (``key_names``)."""
    for node in ast.walk(expression):
        if isinstance(node, ast.Name) and node.id in names:
            return True
        if isinstance(node, ast.Attribute) and node.attr in names and not isinstance(node.ctx, ast.Store):
            return True
        if key is not None:
            if _key_of(node) == key:
                return True
            if isinstance(node, ast.Call) and any(isinstance(arg, ast.Constant) and arg.value == key for arg in node.args):
                return True
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id in key_names:
                return True
    return False


def _call_name(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _functions(tree):
    """``[(qualified name, function node, class name or None)]`` of a module, methods included."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.name, node, None))
        elif isinstance(node, ast.ClassDef):
            found.extend(("%s.%s" % (node.name, item.name), item, node.name) for item in node.body
                         if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return found


def _key_loop_names(function, key):
    """The loop variables of ``for k ... in (("key", ...), ...)`` in a function: each stands for the key."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.For) and any(isinstance(item, ast.Constant) and item.value == key for item in ast.walk(node.iter)):
            targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
            if targets and isinstance(targets[0], ast.Name):
                names.add(targets[0].id)
    return names


def _parses(function, names, key):
    """Whether a function converts or checks a read of the value (see the module's docstring)."""
    key_names = _key_loop_names(function, key)
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and CONVERTERS.search(_call_name(node)):
            if any(_reads(arg, names, key, key_names) for arg in list(node.args) + [kw.value for kw in node.keywords]):
                return True
        elif isinstance(node, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                continue
            if any(_reads(operand, names, key, key_names) for operand in [node.left] + node.comparators):
                return True
    return False


def _python_files(root, directory):
    for folder, dirs, names in os.walk(os.path.join(root, directory)):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(folder, name), root)


def _parse(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as handle:
        return ast.parse(handle.read())


def python_places(root=ROOT, word=MAX_UNAVAILABLE):
    outside = tuple(os.path.join("plugins", "module_utils", package) + os.sep for package in PLACES_OUTSIDE)
    places = []
    for path in _python_files(root, "plugins"):
        if path.startswith(outside):
            continue
        for qualified, function, _cls in _functions(_parse(root, path)):
            if word in function.name or _parses(function, {word}, word):
                places.append("%s %s" % (path, qualified))
    return places


def yaml_places(root=ROOT, role=ROLE, word=MAX_UNAVAILABLE):
    places = []
    base = os.path.join(root, "roles", role)
    files = [os.path.join("roles", role, directory, name) for directory in ("tasks", "vars")
             for name in _yml_files(os.path.join(base, directory))]
    files += [os.path.join("playbooks", name) for name in _yml_files(os.path.join(root, "playbooks"))]
    for path in files:
        document = _load(os.path.join(root, path))
        for text in strings_of(document):
            for expression in EXPRESSION.findall(text):
                if word in expression and YAML_CONVERSION.search(QUOTED.sub("''", expression)):
                    places.append("%s {{ %s }}" % (path, " ".join(expression.split())))
        if path.startswith("playbooks"):
            for play in document if isinstance(document, list) else []:
                if isinstance(play, dict) and word in " ".join(strings_of(play.get("serial"))):
                    places.append("%s serial: of '%s'" % (path, play.get("name", "")))
    return places


VARNAMES = re.compile(r"""query\(\s*['"](?:ansible\.builtin\.)?varnames['"]\s*,\s*['"]([^'"]+)['"]""")


def role_variables(root=ROOT, role=ROLE):
    """The names of the role's variables (its defaults)."""
    return sorted(_load(os.path.join(root, "roles", role, "defaults", "main.yml")) or {})


def yaml_flow(root=ROOT, role=ROLE):
    """``{name: {(next name, file)}}``: where the role's YAML hands a value on under a new name. A task's argument
    is named ``<module>.<option>``. ``query('varnames', regex)`` reads each of the role's variables the regex
    matches (the role gathers its settings so, then reads their values by those names)."""
    edges = collections.defaultdict(set)
    variables_of_role = role_variables(root, role)

    def hand(value, to, where):
        if "{{" in str(to):
            return
        for text in strings_of(value):
            read = set(names_read(text))
            for pattern in VARNAMES.findall(text):
                read.update(name for name in variables_of_role if re.search(pattern, name))
            for name in read:
                if name != to:
                    edges[name].add((str(to), where))

    tasks, variables = role_files(root, role)
    for name, mapping in variables.items():
        for key, value in (mapping.items() if isinstance(mapping, dict) else ()):
            hand(value, key, os.path.join("roles", role, "vars", name))
    for name, items in tasks.items():
        where = os.path.join("roles", role, "tasks", name)
        for task in items:
            for key, value in (task.get("vars") or {}).items():
                hand(value, key, where)
            loop = task.get("loop", task.get("with_items"))
            if loop is not None:
                hand(loop, (task.get("loop_control") or {}).get("loop_var", "item"), where)
            module, args = module_of(task)
            if module is None or not isinstance(args, dict):
                continue
            for key, value in args.items():
                hand(value, key if module == SET_FACT else "%s.%s" % (module, key), where)
    return edges


def _shortest(edges, start, done):
    """The shortest path ``[(node, file)]`` from start to the first node ``done`` accepts, breadth first."""
    seen, queue = {start}, collections.deque([[(start, None)]])
    while queue:
        path = queue.popleft()
        node = path[-1][0]
        if done(node):
            return path
        for other, where in sorted(edges.get(node, ())):
            if other not in seen:
                seen.add(other)
                queue.append(path + [(other, where)])
    return None


def _imported(tree):
    """``{name: module_utils file}`` of a module's ``from <module_utils>.x import name``."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
            path = os.path.join("plugins", "module_utils", *node.module[len(PACKAGE) + 1:].split(".")) + ".py"
            found.update((alias.asname or alias.name, path) for alias in node.names)
    return found


class _Code:
    """The functions of plugins/, parsed once: their bodies, parameters and imports."""

    def __init__(self, root):
        self.root, self.trees, self.defs = root, {}, {}

    def tree(self, path):
        if path not in self.trees:
            self.trees[path] = _parse(self.root, path) if os.path.isfile(os.path.join(self.root, path)) else ast.Module(body=[], type_ignores=[])
            for qualified, function, cls in _functions(self.trees[path]):
                self.defs[(path, qualified)] = (function, cls)
        return self.trees[path]

    def functions(self, path):
        self.tree(path)
        return sorted(qualified for (where, qualified) in self.defs if where == path)

    def methods_elsewhere(self, path, call_name):
        """The methods named ``call_name`` of the classes in the files ``path`` imports from: what a call on an object
        the function was given (``self.goal.step(view)``) may reach, each of them."""
        found = []
        for source in sorted(set(_imported(self.tree(path)).values())):
            found += [(source, qualified) for qualified in self.functions(source) if qualified.endswith("." + call_name)]
        return found

    def resolve(self, path, call_name, method):
        """The ``(file, qualified name)`` a call in ``path`` reaches, or None."""
        tree = self.tree(path)
        if method:
            found = [q for q in self.functions(path) if q.endswith("." + call_name)]
            return (path, found[0]) if found else None
        if (path, call_name) in self.defs:
            return path, call_name
        source = _imported(tree).get(call_name)
        if source:
            self.tree(source)
        return (source, call_name) if source and (source, call_name) in self.defs else None

    def parameters(self, target):
        function, cls = self.defs[target]
        names = [arg.arg for arg in function.args.posonlyargs + function.args.args]
        return names[1:] if cls and names and names[0] in ("self", "cls") else names

    def passes(self, path, qualified, names, key, word=None):
        """``{(file, function, parameter)}`` the function hands the value on to: every call with an argument that
        reads it (or a local assigned from it)."""
        function, _cls = self.defs[(path, qualified)]
        tracked = set(names)
        changed = True
        while changed:
            changed = False
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and _reads(node.value, tracked, key):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id not in tracked:
                            tracked.add(target.id)
                            changed = True
        found = set()
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            func, args = node.func, list(node.args)
            if _call_name(node) == "partial" and args:
                func, args = args[0], args[1:]
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            method = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
            if name is None:
                continue
            if isinstance(func, ast.Attribute) and not method:
                # a method of an object the function holds (goal.step, self.goal.step): each imported method of that name
                targets = self.methods_elsewhere(path, name) if isinstance(func.value, (ast.Name, ast.Attribute)) else []
            else:
                targets = [self.resolve(path, name, method)]
            for target in targets:
                if target is None or target == (path, qualified):
                    continue
                parameters = self.parameters(target)
                for position, arg in enumerate(args):
                    if position < len(parameters) and _reads(arg, tracked, key) and _same_key(arg, word):
                        found.add(target + (parameters[position],))
                for keyword in node.keywords:
                    if keyword.arg in parameters and _reads(keyword.value, tracked, key) and _same_key(keyword.value, word):
                        found.add(target + (keyword.arg,))
        return found


def _same_key(expression, word):
    """False for a read of another key of a dict that carries the value (``view["now"]`` when following
    ``view["max_unavailable"]``), else True."""
    key = _key_of(expression)
    return word is None or key is None or key == word


def _runner_chain(code, module, word, goal_file, goal_name):
    """The shortest ``[(file, function, parameter)]`` from a function of the module's runner that reads the option's
    key to the goal function, or None."""
    module_file = os.path.join("plugins", "modules", module + ".py")
    if not os.path.isfile(os.path.join(code.root, module_file)):
        return None
    starts = []
    imported = sorted(set(_imported(code.tree(module_file)).values()))
    # the module's body is its runner (module_utils/runners/); what else it imports (its choices, say) reads no option
    runners = [path for path in imported if path.startswith(os.path.join("plugins", "module_utils", "runners") + os.sep)] or imported
    for runner in runners:
        for qualified in code.functions(runner):
            function, _cls = code.defs[(runner, qualified)]
            if any(_key_of(node) == word for node in ast.walk(function)):
                starts.append((runner, qualified, None))
    edges, queue, seen = collections.defaultdict(set), collections.deque(starts), set(starts)
    while queue:
        node = queue.popleft()
        names, key = ((), word) if node[2] is None else ((node[2],), None)
        for other in code.passes(node[0], node[1], names, key, word):
            edges[node].add((other, None))
            if other not in seen:
                seen.add(other)
                queue.append(other)
    best = None
    for first in starts:
        found = _shortest(edges, first, lambda item: item[0] == goal_file and item[1] == goal_name)
        if found and (best is None or len(found) < len(best)):
            best = found
    return [item[0] for item in best] if best else None


def max_unavailable_hops(root=ROOT, role=ROLE, word=MAX_UNAVAILABLE, goal=GOAL):
    """``(hops, [each name on the way])`` from the role variable to the goal function, or ``(None, [why])``: the
    shortest way through the role's YAML to a module's option of that name whose runner hands it on to the goal."""
    goal_file = os.path.join("plugins", "module_utils", *goal[0].split("/"))
    start = "%s_%s" % (role, word)
    flow = yaml_flow(root, role)
    options = sorted({other for targets in flow.values() for other, _where in targets if other.endswith("." + word)})
    code, best = _Code(root), None
    for option in options:
        in_yaml = _shortest(flow, start, lambda node, option=option: node == option)
        chain = _runner_chain(code, option.split(".")[0], word, goal_file, goal[1]) if in_yaml else None
        if chain and (best is None or len(in_yaml) + len(chain) < len(best[0]) + len(best[1])):
            best = in_yaml, chain
    if best is None:
        return None, ["no way from %s through a module's option %s to %s %s" % (start, word, goal[0], goal[1])]
    in_yaml, chain = best
    path = ["%s (the role's variable)" % start] + ["%s: %s" % (where, node) for node, where in in_yaml[1:]]
    path.append("%s %s (the runner reads the option)" % chain[0][:2])
    path += ["%s %s(%s)" % item for item in chain[1:]]
    return len(path) - 1, path


def max_unavailable_figures(root=ROOT, role=ROLE):
    places = python_places(root) + yaml_places(root, role)
    hops, path = max_unavailable_hops(root, role)
    return {"max_unavailable_places": len(places), "max_unavailable_place_list": places,
            "max_unavailable_hops": hops, "max_unavailable_path": path}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--root", default=ROOT, help="the tree to measure (default: this repository)")
    parser.add_argument("--role", default=ROLE, help="the role whose task and vars files are measured (default: %(default)s)")
    args = parser.parse_args(argv)
    figures = dict(role_figures(args.root, args.role), **module_utils_figures(args.root))
    figures.update(max_unavailable_figures(args.root, args.role))
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    for key, value in figures.items():
        if isinstance(value, list) and value and key.endswith(("_list", "_path")):
            print("%-28s %s" % (key, value[0]))
            for item in value[1:]:
                print("%-28s %s" % ("", item))
        else:
            print("%-28s %s" % (key, value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
