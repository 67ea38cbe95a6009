"""Driving the sandbox from outside, as a user does: start it (``handle.SandboxHandle``: ``python -m sandbox up``, the
collection's modules and playbooks run through real Ansible), stop a rollout on the way (``kill``, ``stop_then_end``,
``tags``) and say what it left behind (``convergence``). Shared by the end-to-end tests (``tests/integration``) and
the benchmarks (``bench/``)."""
