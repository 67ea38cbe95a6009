"""The AWS side of the sandbox: moto over HTTP, patched for fidelity, with fault injection and events."""

from .faults import Faults
from .sandbox import AwsSandbox

__all__ = ["AwsSandbox", "Faults"]
