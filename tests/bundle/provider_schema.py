"""The google provider's resource schema, read from its prebuilt CDK bindings, and a checker for HCL bodies.

The provider binary cannot be downloaded here, but its schema ships on PyPI inside the CDK Terrain
bindings (``cdktn-provider-google``, generated from the provider's own ``terraform providers schema``):
one Python module per resource, whose config classes list every argument and nested block keyword-only
(no default: required), each documented with its Terraform name (``...#location_id``) and, for a nested
block, ``<name> block.``; the resource class's properties are its attributes, computed ones included.
The wheel is read as an archive (never installed or imported: importing starts the JSII runtime), only
the modules a test asks for.
"""

from __future__ import annotations

import ast
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BlockSchema", "ProviderSchema", "check_body"]

#: Terraform meta-arguments of every resource, and the arguments ``lifecycle`` accepts.
META_ARGUMENTS = frozenset({"count", "for_each", "depends_on", "provider", "lifecycle"})
LIFECYCLE = frozenset(
    {"create_before_destroy", "prevent_destroy", "ignore_changes", "replace_triggered_by"}
    | {"precondition", "postcondition"}
)
_CONDITION = frozenset({"condition", "error_message"})
_ANCHOR = re.compile(r"#([a-z0-9_]+) [A-Za-z0-9]+#[a-z0-9_]+\}")


@dataclass
class BlockSchema:
    """One block type: ``attributes`` and ``blocks`` by Terraform name -> required; ``computed`` readable names."""

    attributes: dict[str, bool] = field(default_factory=dict)
    blocks: dict[str, tuple[BlockSchema, bool]] = field(default_factory=dict)
    computed: set[str] = field(default_factory=set)


class ProviderSchema:
    """Resource (and provider) schemas from a ``cdktn-provider-google`` wheel."""

    def __init__(self, wheel: Path) -> None:
        self._archive = zipfile.ZipFile(wheel)
        self._package = next(name.split("/", 1)[0] for name in self._archive.namelist() if name.endswith("/py.typed"))
        self._cache: dict[str, BlockSchema | None] = {}

    @property
    def provider_version(self) -> str:
        """The hashicorp/google version the bindings were generated from."""
        metadata = next(n for n in self._archive.namelist() if n.endswith(".dist-info/METADATA"))
        found = re.search(r"hashicorp/google provider version ([0-9.]+)", self._archive.read(metadata).decode())
        assert found is not None
        return found.group(1)

    def resource(self, resource_type: str) -> BlockSchema | None:
        """The schema of ``google_<name>`` (or ``provider`` for the provider block); None when it does not exist."""
        if resource_type not in self._cache:
            self._cache[resource_type] = self._load(resource_type)
        return self._cache[resource_type]

    def _load(self, resource_type: str) -> BlockSchema | None:
        module = "provider" if resource_type == "provider" else resource_type.removeprefix("google_")
        try:
            source = self._archive.read(f"{self._package}/{module}/__init__.py").decode("utf-8")
        except KeyError:
            return None
        classes = {node.name: node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}
        main = next(node for name, node in classes.items() if not name.startswith("_"))
        docstring = ast.get_docstring(main) or ""
        if resource_type != "provider" and f"resources/{module} {resource_type}}}" not in docstring:
            return None  # a data source or another resource with this module name
        schema = _struct(classes, classes[f"{main.name}Config"])
        schema.computed = {
            item.name
            for item in main.body
            if isinstance(item, ast.FunctionDef)
            and not item.name.startswith("_")
            and any(isinstance(d, ast.Attribute) and d.attr == "property" for d in item.decorator_list)
        }
        return schema


def _struct(classes: dict[str, ast.ClassDef], node: ast.ClassDef) -> BlockSchema:
    init = next(item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__")
    docs = dict(re.findall(r":param (\w+):(.*)", ast.get_docstring(init) or ""))
    schema = BlockSchema()
    for arg, default in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True):
        text = docs.get(arg.arg, "").strip()
        anchor = _ANCHOR.search(text)
        if anchor is None:
            continue  # a CDK meta-argument (count, lifecycle, provisioners...), not part of the schema
        name, required = anchor.group(1), default is None
        if text.startswith(f"{name} block."):
            nested = next(
                value
                for value in _strings(arg.annotation)
                if value in classes and value != node.name and not value.endswith("IResolvable")
            )
            schema.blocks[name] = (_struct(classes, classes[nested]), required)
        else:
            schema.attributes[name] = required
    return schema


def _strings(annotation: ast.expr | None) -> list[str]:
    return (
        [n.value for n in ast.walk(annotation) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if (annotation is not None)
        else []
    )


def _is_block(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) and v.get("__is_block__") for v in value)


def _check_conditions(items: Any, where: str, problems: list[str]) -> None:
    for item in items:
        extra = set(item) - _CONDITION - {"__is_block__"}
        if extra or not _CONDITION <= set(item):
            problems.append(f"{where}: a condition block needs exactly condition and error_message, has {sorted(item)}")


def check_body(body: dict[str, Any], schema: BlockSchema, where: str, problems: list[str], *, meta: bool) -> None:
    """Append to ``problems`` every argument or block ``body`` writes that ``schema`` lacks, and every required
    argument or block it leaves out. ``meta``: ``body`` is a resource, so Terraform's meta-arguments are allowed.
    """
    present: set[str] = set()
    for key, value in body.items():
        if key == "__is_block__":
            continue
        if meta and key in META_ARGUMENTS:
            if key == "lifecycle":
                for block in value:
                    unknown = set(block) - LIFECYCLE - {"__is_block__"}
                    if unknown:
                        problems.append(f"{where}.lifecycle: unknown {sorted(unknown)}")
                    for kind in ("precondition", "postcondition"):
                        _check_conditions(block.get(kind, []), f"{where}.lifecycle.{kind}", problems)
            continue
        if key == "dynamic":
            for dynamic in value:
                for name, spec in dynamic.items():
                    if name == "__is_block__":
                        continue
                    if name not in schema.blocks:
                        problems.append(f"{where}: dynamic {name!r} is not a block of this type")
                        continue
                    for content in spec["content"]:
                        check_body(content, schema.blocks[name][0], f"{where}.{name}", problems, meta=False)
                    present.add(name)
            continue
        if _is_block(value):
            if key not in schema.blocks:
                kind = "an argument, not a block" if key in schema.attributes else "not a block of this type"
                problems.append(f"{where}: {key!r} is {kind}")
                continue
            for block in value:
                check_body(block, schema.blocks[key][0], f"{where}.{key}", problems, meta=False)
        elif key not in schema.attributes:
            kind = "a block, not an argument" if key in schema.blocks else "not an argument of this type"
            problems.append(f"{where}: {key!r} is {kind}")
            continue
        present.add(key)
    for name, required in schema.attributes.items():
        if required and name not in present:
            problems.append(f"{where}: required argument {name!r} is not set")
    for name, (_nested, required) in schema.blocks.items():
        if required and name not in present:
            problems.append(f"{where}: required block {name!r} is missing")
