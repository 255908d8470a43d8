"""minijit as a torch.compile backend: torch.compile(model, backend="minijit").

Importing this module registers the backend with Dynamo; an installed package
also publishes it under the entry-point group torch_dynamo_backends, so the name
works without the import. explain(model, *inputs) prints what minijit takes.
See docs/TORCH_BACKEND.md.
"""

from .compiler import backend
from .explain import explain
from .emitter import Unsupported
from .lowerings import LOWERINGS

__all__ = ["backend", "explain", "Unsupported", "LOWERINGS"]


def _register():
    """Registers the name "minijit" unless an installed entry point provides it:
    Dynamo's lookup_backend registers an entry point's function itself when it
    loads it, and refuses a name registered twice."""
    import importlib.metadata

    from torch._dynamo.backends import registry
    if "minijit" in registry._COMPILER_FNS:
        return
    try:
        points = importlib.metadata.entry_points(group="torch_dynamo_backends")
    except Exception:
        points = ()
    if any(p.name == "minijit" for p in points):
        return
    registry.register_backend(backend, name="minijit")


_register()
