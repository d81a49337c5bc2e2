"""The API docs page's content: drf-spectacular's OpenAPI schema flattened for a template.

A self-hosted Swagger UI would need its JavaScript bundle; a server-rendered list of endpoints
says the same for people and needs nothing in the browser. The machine-readable schema is
served at /api/schema/ (YAML; `?format=json` for JSON).
"""

from functools import lru_cache

METHOD_ORDER = ("get", "post", "put", "patch", "delete")


def _schema_name(schema: dict | None) -> str:
    if not schema:
        return ""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return f"list of {_schema_name(schema.get('items'))}"
    return schema.get("type", "object")


def _type(prop: dict) -> str:
    if "oneOf" in prop or "anyOf" in prop:
        prop = (prop.get("oneOf") or prop.get("anyOf"))[0]
    if "allOf" in prop:
        prop = prop["allOf"][0]
    return prop.get("format") or _schema_name(prop) or ""


def _fields(schema: dict, components: dict) -> list[dict]:
    if "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
    required = set(schema.get("required", []))
    return [{"name": name, "type": _type(prop),
             "required": name in required, "read_only": prop.get("readOnly", False),
             "description": prop.get("description", "")}
            for name, prop in schema.get("properties", {}).items()]


@lru_cache(maxsize=1)
def api_endpoints() -> list[dict]:
    """Every operation of the schema: path, method, summary, parameters, body, responses."""
    from drf_spectacular.generators import SchemaGenerator

    from .schema import GENERATION_LOCK

    with GENERATION_LOCK:
        schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    endpoints = []
    for path, operations in schema.get("paths", {}).items():
        for method in METHOD_ORDER:
            operation = operations.get(method)
            if operation is None:
                continue
            body = operation.get("requestBody", {}).get("content", {})
            content_type = next(iter(body), "")
            endpoints.append({
                "path": path, "method": method.upper(),
                "anchor": f"{method}-{path.strip('/').replace('/', '-').replace('{', '')}"
                          .replace("}", ""),
                "description": operation.get("description", "").strip(),
                "parameters": [{"name": p["name"], "in": p["in"],
                                "required": p.get("required", False),
                                "description": p.get("description", "")}
                               for p in operation.get("parameters", [])],
                "body_type": content_type,
                "body": _fields(body[content_type].get("schema", {}), components)
                if content_type else [],
                "responses": [{"code": code, "description": r.get("description", ""),
                               "schema": _schema_name(next(iter(r.get("content", {}).values()),
                                                           {}).get("schema"))}
                              for code, r in operation.get("responses", {}).items()],
                "auth": [next(iter(s), "") for s in operation.get("security", [])],
            })
    return endpoints
