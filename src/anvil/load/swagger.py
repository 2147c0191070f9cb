"""Converting a (merged) Swagger 2.0 document into the OpenAPI 3.0 shape the compiler reads.

What moves where: ``host``/``basePath``/``schemes`` become one server URL (https when offered);
``definitions``, ``parameters``, ``responses`` and ``securityDefinitions`` become ``components``
sections; ``body`` parameters become a ``requestBody`` per ``consumes``; ``formData`` parameters become
one object schema under ``application/x-www-form-urlencoded`` (``multipart/form-data`` when a file is
uploaded); a response ``schema`` becomes ``content`` per ``produces``; the type keywords of other
parameters and of headers move into ``schema``; ``collectionFormat`` becomes ``style``/``explode``.
Vendor extensions are kept. Input shapes that are wrong are carried over as they are, never raised on.
"""

from __future__ import annotations

from typing import Final

from anvil._types import JSONObject, JSONValue
from anvil.load.merge import METHODS
from anvil.load.refs import MISSING, follow, split_fragment

__all__ = ["OPENAPI_VERSION", "SHARED_BODY", "convert_swagger"]

#: The ``openapi`` version written into converted documents.
OPENAPI_VERSION: Final = "3.0.3"
#: Marks a ``requestBody`` made from a ``body`` parameter its path item declares for every method. The
#: operation takes that body; the original's converter leaves it out (its disclosure figures count none).
SHARED_BODY: Final = "x-anvil-shared-body"

_JSON: Final = "application/json"
_FORM: Final = "application/x-www-form-urlencoded"
_MULTIPART: Final = "multipart/form-data"
_PREFIXES: Final = (
    ("#/definitions/", "#/components/schemas/"),
    ("#/parameters/", "#/components/parameters/"),
    ("#/responses/", "#/components/responses/"),
    ("#/securityDefinitions/", "#/components/securitySchemes/"),
)
_SCHEMA_FIELDS: Final = (
    "type",
    "format",
    "items",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
)
_PARAM_FIELDS: Final = ("name", "in", "description", "required", "deprecated", "allowEmptyValue")
_OAUTH_FLOWS: Final = {
    "implicit": ("implicit", True, False),
    "password": ("password", False, True),
    "application": ("clientCredentials", False, True),
    "accessCode": ("authorizationCode", True, True),
}
_SUBSCHEMA_ONE: Final = ("additionalProperties", "not", "items")
_SUBSCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf")


def _rewrite(ref: str) -> str:
    for old, new in _PREFIXES:
        if ref.startswith(old):
            return new + ref[len(old) :]
    if ref == "#/definitions":
        return "#/components/schemas"
    return ref


def _identity(param: JSONObject) -> tuple[str, str]:
    """A parameter's (name, in), the pair an operation-level parameter overrides a path-level one by."""
    name, where = param.get("name"), param.get("in")
    return (name if isinstance(name, str) else "", where if isinstance(where, str) else "")


def _media_types(value: JSONValue, fallback: list[str]) -> list[str]:
    if isinstance(value, list):
        found = [item for item in value if isinstance(item, str)]
        return found or [_JSON]
    return fallback


class _Converter:
    """One conversion (see the module docstring)."""

    def __init__(self, doc: JSONObject) -> None:
        self.doc = doc
        self.consumes = _media_types(doc.get("consumes"), [_JSON])
        self.produces = _media_types(doc.get("produces"), [_JSON])
        self.seen: set[int] = set()

    # --- schemas --------------------------------------------------------------------------------

    def schema(self, node: JSONValue) -> JSONValue:
        """Convert a schema in place (references, ``type: file``, ``x-nullable``, string discriminators)."""
        if not isinstance(node, dict) or id(node) in self.seen:
            return node
        self.seen.add(id(node))
        ref = node.get("$ref")
        if isinstance(ref, str):
            node["$ref"] = _rewrite(ref)
        if node.get("type") == "file":
            node["type"] = "string"
            node["format"] = "binary"
        if "x-nullable" in node:
            node["nullable"] = node.pop("x-nullable") is True
        if isinstance(node.get("discriminator"), str):
            node["discriminator"] = {"propertyName": node["discriminator"]}
        for name in ("properties", "patternProperties", "definitions"):
            children = node.get(name)
            if isinstance(children, dict):
                for child in children.values():
                    self.schema(child)
        for name in _SUBSCHEMA_ONE:
            child = node.get(name)
            if isinstance(child, list):
                for item in child:
                    self.schema(item)
            else:
                self.schema(child)
        for name in _SUBSCHEMA_LISTS:
            children = node.get(name)
            if isinstance(children, list):
                for child in children:
                    self.schema(child)
        return node

    def _typed_schema(self, node: JSONObject) -> JSONObject:
        """The schema made of a parameter's, header's or items object's type keywords."""
        if node.get("type") == "file":
            return {"type": "string", "format": "binary"}
        schema: JSONObject = {}
        for name in _SCHEMA_FIELDS:
            if name in node:
                value = node[name]
                schema[name] = self._typed_schema(value) if name == "items" and isinstance(value, dict) else value
        if "x-nullable" in node:
            schema["nullable"] = node["x-nullable"] is True
        return schema

    # --- parameters -----------------------------------------------------------------------------

    def resolve_parameter(self, node: JSONValue) -> JSONValue:
        """The parameter a ``#/parameters/X`` reference names (other nodes as they are)."""
        seen: set[str] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref: str = node["$ref"]
            tokens = split_fragment(ref[1:]) if ref.startswith("#") else None
            if ref in seen or tokens is None:
                return node
            seen.add(ref)
            target = follow(self.doc, tokens)
            if target is MISSING:
                return node
            node = target
        return node

    def parameter(self, node: JSONValue) -> JSONValue:
        """Convert a non-body parameter (a reference stays a reference, rewritten)."""
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("$ref"), str):
            return {**node, "$ref": _rewrite(node["$ref"])}
        out: JSONObject = {name: node[name] for name in _PARAM_FIELDS if name in node}
        where = node.get("in")
        if where == "path":
            out["required"] = True
        if node.get("type") == "array":
            style = self._style(node.get("collectionFormat", "csv"), where)
            if style is not None:
                out["style"], out["explode"] = style
        if "schema" in node:
            out["schema"] = self.schema(node["schema"])
        else:
            out["schema"] = self._typed_schema(node)
        for name, value in node.items():
            if name not in out and name not in _SCHEMA_FIELDS and name not in ("collectionFormat", "schema"):
                out[name] = value
        return out

    @staticmethod
    def _style(collection: JSONValue, where: JSONValue) -> tuple[str, bool] | None:
        if where not in ("query", "cookie"):
            return None
        return {
            "csv": ("form", False),
            "multi": ("form", True),
            "ssv": ("spaceDelimited", False),
            "pipes": ("pipeDelimited", False),
        }.get(collection if isinstance(collection, str) else "")

    def header(self, node: JSONValue) -> JSONValue:
        if not isinstance(node, dict):
            return node
        out: JSONObject = {}
        if "description" in node:
            out["description"] = node["description"]
        out["schema"] = self._typed_schema(node)
        for name, value in node.items():
            if name.startswith("x-"):
                out[name] = value
        return out

    def body(self, node: JSONObject, consumes: list[str]) -> JSONObject:
        schema = self.schema(node.get("schema", {}))
        out: JSONObject = {}
        if "description" in node:
            out["description"] = node["description"]
        out["content"] = {media: {"schema": schema} for media in consumes}
        if node.get("required") is True:
            out["required"] = True
        for name, value in node.items():
            if name.startswith("x-"):
                out[name] = value
        return out

    def form(self, params: list[JSONObject], consumes: list[str]) -> JSONObject:
        properties: JSONObject = {}
        required: list[str] = []
        upload = False
        for param in params:
            name = param.get("name")
            if not isinstance(name, str):
                continue
            upload = upload or param.get("type") == "file"
            schema = self._typed_schema(param)
            if "description" in param:
                schema["description"] = param["description"]
            properties[name] = schema
            if param.get("required") is True:
                required.append(name)
        multipart = upload or (_MULTIPART in consumes and _FORM not in consumes)
        schema_out: JSONObject = {"type": "object", "properties": properties}
        if required:
            schema_out["required"] = required
        out: JSONObject = {"content": {_MULTIPART if multipart else _FORM: {"schema": schema_out}}}
        if required:
            out["required"] = True
        return out

    # --- paths ----------------------------------------------------------------------------------

    def _split(self, params: JSONValue) -> tuple[list[JSONValue], JSONObject | None, list[JSONObject]]:
        """(other parameters converted, the body parameter, the formData parameters)."""
        others: list[JSONValue] = []
        body: JSONObject | None = None
        form: list[JSONObject] = []
        for param in params if isinstance(params, list) else []:
            resolved = self.resolve_parameter(param)
            where = resolved.get("in") if isinstance(resolved, dict) else None
            if where == "body" and isinstance(resolved, dict):
                body = resolved
            elif where == "formData" and isinstance(resolved, dict):
                form.append(resolved)
            else:
                others.append(self.parameter(param))
        return others, body, form

    def path_item(self, node: JSONValue) -> JSONValue:
        if not isinstance(node, dict) or isinstance(node.get("$ref"), str):
            return node
        shared, shared_body, shared_form = self._split(node.get("parameters"))
        out: JSONObject = {}
        for name, value in node.items():
            if name in METHODS:
                out[name] = self.operation(value, shared_body, shared_form)
            elif name == "parameters":
                if shared:
                    out[name] = shared
            else:
                out[name] = value
        return out

    def operation(self, node: JSONValue, shared_body: JSONObject | None, shared_form: list[JSONObject]) -> JSONValue:
        if not isinstance(node, dict):
            return node
        consumes = _media_types(node.get("consumes"), self.consumes)
        produces = _media_types(node.get("produces"), self.produces)
        params, body, form = self._split(node.get("parameters"))
        names = {_identity(param) for param in form}
        form = form + [param for param in shared_form if _identity(param) not in names]
        request: JSONObject | None = None
        if body is not None:
            request = self.body(body, consumes)
        elif shared_body is not None:
            request = {**self.body(shared_body, consumes), SHARED_BODY: True}
        elif form:
            request = self.form(form, consumes)
        out: JSONObject = {}
        for name, value in node.items():
            if name in ("consumes", "produces", "schemes"):
                continue
            if name == "parameters":
                if params:
                    out[name] = params
                if request is not None:
                    out["requestBody"] = request
            elif name == "responses":
                if request is not None and "requestBody" not in out:
                    out["requestBody"] = request
                out[name] = self.responses(value, produces)
            else:
                out[name] = value
        if request is not None and "requestBody" not in out:
            out["requestBody"] = request
        return out

    def responses(self, node: JSONValue, produces: list[str]) -> JSONValue:
        if not isinstance(node, dict):
            return node
        return {str(code): self.response(value, produces) for code, value in node.items()}

    def response(self, node: JSONValue, produces: list[str]) -> JSONValue:
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("$ref"), str):
            return {**node, "$ref": _rewrite(node["$ref"])}
        out: JSONObject = {"description": node.get("description", "")}
        headers = node.get("headers")
        if isinstance(headers, dict):
            out["headers"] = {name: self.header(value) for name, value in headers.items()}
        examples = node.get("examples")
        if not isinstance(examples, dict):
            examples = {}
        if "schema" in node:
            schema = self.schema(node["schema"])
            content: JSONObject = {media: {"schema": schema} for media in produces}
            for media, example in examples.items():
                content.setdefault(media, {"schema": schema})["example"] = example
            out["content"] = content
        for name, value in node.items():
            if name not in ("description", "headers", "schema", "examples"):
                out[name] = value
        return out

    # --- the document ---------------------------------------------------------------------------

    def servers(self) -> list[JSONObject]:
        host = self.doc.get("host")
        base = self.doc.get("basePath")
        base = base if isinstance(base, str) and base != "/" else ""
        if base and not base.startswith("/"):
            base = "/" + base
        offered = self.doc.get("schemes")
        schemes = [item for item in offered if isinstance(item, str)] if isinstance(offered, list) else []
        if isinstance(host, str) and host:
            scheme = "https" if "https" in schemes or not schemes else schemes[0]
            return [{"url": f"{scheme}://{host}{base}"}]
        return [{"url": base}] if base else []

    def security_scheme(self, node: JSONValue) -> JSONValue:
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        out: JSONObject
        if kind == "basic":
            out = {"type": "http", "scheme": "basic"}
        elif kind == "apiKey":
            out = {"type": "apiKey", **{name: node[name] for name in ("name", "in") if name in node}}
        elif kind == "oauth2":
            out = {"type": "oauth2", "flows": self._flows(node)}
        else:
            return node
        for name, value in node.items():
            if name == "description" or name.startswith("x-"):
                out[name] = value
        return out

    @staticmethod
    def _flows(node: JSONObject) -> JSONObject:
        flow_name = node.get("flow")
        known = _OAUTH_FLOWS.get(flow_name) if isinstance(flow_name, str) else None
        if known is None:
            return {}
        name, authorize, token = known
        flow: JSONObject = {}
        if authorize and "authorizationUrl" in node:
            flow["authorizationUrl"] = node["authorizationUrl"]
        if token and "tokenUrl" in node:
            flow["tokenUrl"] = node["tokenUrl"]
        scopes = node.get("scopes")
        flow["scopes"] = scopes if isinstance(scopes, dict) else {}
        return {name: flow}

    def components(self) -> JSONObject:
        out: JSONObject = {}
        definitions = self.doc.get("definitions")
        if isinstance(definitions, dict):
            out["schemas"] = {name: self.schema(value) for name, value in definitions.items()}
        parameters = self.doc.get("parameters")
        if isinstance(parameters, dict):
            kept = {
                name: self.parameter(value)
                for name, value in parameters.items()
                if not (isinstance(value, dict) and value.get("in") in ("body", "formData"))
            }
            if kept:
                out["parameters"] = kept
        responses = self.doc.get("responses")
        if isinstance(responses, dict):
            out["responses"] = {name: self.response(value, self.produces) for name, value in responses.items()}
        schemes = self.doc.get("securityDefinitions")
        if isinstance(schemes, dict):
            out["securitySchemes"] = {name: self.security_scheme(value) for name, value in schemes.items()}
        return out

    def convert(self) -> JSONObject:
        out: JSONObject = {"openapi": OPENAPI_VERSION}
        if "info" in self.doc:
            out["info"] = self.doc["info"]
        servers = self.servers()
        if servers:
            out["servers"] = servers
        skip = {"swagger", "info", "host", "basePath", "schemes", "consumes", "produces"}
        skip |= {"definitions", "parameters", "responses", "securityDefinitions"}
        for name, value in self.doc.items():
            if name in skip:
                continue
            if name == "paths" and isinstance(value, dict):
                out[name] = {path: self.path_item(item) for path, item in value.items()}
            else:
                out[name] = value
        components = self.components()
        if components:
            out["components"] = components
        return out


def convert_swagger(document: JSONObject) -> JSONObject:
    """Convert a merged Swagger 2.0 document (all references internal) into OpenAPI 3.0 shape.

    The result shares sub-objects with ``document`` (schemas are converted in place).

    Args:
        document: A Swagger 2.0 document whose references are all internal (``#/...``).

    Returns:
        The OpenAPI 3.0.3 document.
    """
    return _Converter(document).convert()
