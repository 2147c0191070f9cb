"""Loading source specs (OpenAPI 3.0/3.1, Swagger 2.0; JSON or YAML; one file or many).

Public entry point: :func:`anvil.load.spec.load_spec` returning a :class:`LoadResult`; internal
references in its document are followed with :class:`anvil.load.refs.Resolver`.
"""

from anvil.load.refs import Resolver
from anvil.load.result import LoadResult
from anvil.load.spec import load_spec

__all__ = ["LoadResult", "Resolver", "load_spec"]
