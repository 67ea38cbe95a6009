# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The connection options that ``module_defaults`` sets on amazon.aws's and kubernetes.core's action groups, for the
modules of this collection.

ansible-core resolves ``group/amazon.aws.aws`` from amazon.aws's own meta/runtime.yml only: a group of another
collection can include those modules (``metadata: extend_group``, as this collection's ``aws`` and ``k8s`` groups do),
but no collection can add itself to them. The short names ``group/aws`` and ``group/k8s`` are ansible-core's own groups
(``ansible.builtin.aws`` and ``ansible.builtin.k8s``, which extend amazon.aws's, community.aws's, kubernetes.core's
and a few more), and no collection can join those either. A play that already sets its AWS or Kubernetes connection
once on one of these groups would run this collection's modules without it (no region, the default kubeconfig). So
each module's action plugin reads those entries of the task's ``module_defaults`` itself and takes from them the
connection options the module has (names and aliases, as amazon.aws and kubernetes.core name them), as ansible-core
gives them to amazon.aws's modules - the entries merged in order, a later one replacing an earlier one of the same
group, then each group's values applied in the order the groups were first named - and below everything else: the
task's own arguments and ``module_defaults`` of this collection's groups and modules (already in the task's
arguments) win, whichever name they use.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC

# the groups of the other collections and of ansible-core (module_defaults keys, as ansible-core writes them once it
# resolved them, and as written when it did not), and the options of ours each may set
FOREIGN_GROUPS = (
    ("group/amazon.aws.aws", AWS_ARGUMENT_SPEC),
    ("group/ansible.builtin.aws", AWS_ARGUMENT_SPEC),
    ("group/aws", AWS_ARGUMENT_SPEC),
    ("group/kubernetes.core.k8s", K8S_ARGUMENT_SPEC),
    ("group/ansible.builtin.k8s", K8S_ARGUMENT_SPEC),
    ("group/k8s", K8S_ARGUMENT_SPEC),
)


def option_names(spec):
    """``{name or alias: option name}`` of an argument spec."""
    names = {}
    for name, definition in spec.items():
        names[name] = name
        for alias in definition.get("aliases") or ():
            names[alias] = name
    return names


def group_entries(module_defaults):
    """``[(group, values)]``: the values a task's ``module_defaults`` (a dict or a list of dicts) sets on each group of
    FOREIGN_GROUPS, merged as ansible-core merges them: a later dict's entry replaces an earlier one of the same group,
    and the groups keep the order in which they were first named."""
    if isinstance(module_defaults, dict):
        module_defaults = [module_defaults]
    merged = {}
    for entry in module_defaults or ():
        if isinstance(entry, dict):
            merged.update(entry)
    groups = dict(FOREIGN_GROUPS)
    return [(group, values) for group, values in merged.items() if group in groups and isinstance(values, dict)]


def foreign_connection_defaults(entries, args):
    """The arguments to add to a task's ``args``: from ``entries`` (:func:`group_entries`, in order, a later group's
    value of an option winning), the connection options of each group's kind that no name of the same option sets in
    ``args`` already. Other keys (amazon.aws's ``aws_config``, kubernetes.core's ``username``, ...) are left out: this
    collection's modules do not take them. An option set on an AWS and a Kubernetes group (``validate_certs``) is
    taken from the Kubernetes one, under the name it was given there."""
    every = {}
    for _group, spec in FOREIGN_GROUPS:
        every.update(option_names(spec))
    given = set(every[key] for key in args if key in every)
    specs = dict(FOREIGN_GROUPS)
    chosen = {}
    # the AWS groups first: an option of both kinds is the Kubernetes group's
    for kind in (AWS_ARGUMENT_SPEC, K8S_ARGUMENT_SPEC):
        names = option_names(kind)
        for group, values in entries:
            if specs[group] is not kind:
                continue
            for key, value in values.items():
                if key in names and names[key] not in given:
                    chosen[names[key]] = (key, value)
    return dict(chosen.values())
