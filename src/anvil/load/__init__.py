"""Loading source specs (OpenAPI 3.0/3.1, Swagger 2.0; JSON or YAML; one file or many).

Public entry point: :func:`anvil.load.spec.load_spec` returning a :class:`LoadResult`.
"""

from anvil.load.result import LoadResult

__all__ = ["LoadResult"]
