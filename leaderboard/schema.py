"""The OpenAPI schema tells the truth about the API's answers (issue 18, point 9; checked by
schemathesis in tests/leaderboard/test_api_schemathesis.py).

drf-spectacular documents what a view returns when all goes well. This schema class adds the
answers every view can give, with their bodies:

- 400 (field errors, `ValidationErrors`) on every operation that takes query parameters or a
  request body;
- 401 on every operation: a write without credentials, or any request with an unknown token;
- 403 on every write (not a researcher, not the owner, a session write without CSRF token);
- 404 on every operation with a path parameter (no such object, or one you may not see);
- a JSON body (`Error`, `{"detail": …}`) on every other 4xx/5xx a view declares (409, 429, 503).

Reads that anyone may make say so: `{}` (no credentials) among their security requirements.

Request and response bodies are separate components (COMPONENT_SPLIT_REQUEST): the patterns
a write must match (text fields, web addresses) bind what the API accepts, not what it stores
from elsewhere (the pages' forms, imports), so an answer's text fields are plain strings.
"""

import threading

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import permissions

from .serializers import (
    ErrorSerializer,
    FormatIssueSerializer,
    StrictCharField,
    ValidationErrorsSerializer,
    WebAddressField,
)

WRITES = ("POST", "PUT", "PATCH", "DELETE")

# drf-spectacular resolves its extensions' classes on first use, not thread-safely: two first
# schema requests at once in a threaded server (runserver, gunicorn --threads) answered 500.
# One schema generation at a time per process (/api/schema/ and the /api/docs/ page).
GENERATION_LOCK = threading.Lock()


class ContractSchema(AutoSchema):
    _direction = "response"

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        self._direction = direction
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "response" and isinstance(field, WebAddressField):
            schema.pop("format", None)  # stored addresses may be blank, or IRIs from the forms
        return schema

    def _insert_field_validators(self, field, schema):
        if self._direction == "response" and isinstance(field, StrictCharField | WebAddressField):
            return  # what the API accepts, not what it may have stored
        super()._insert_field_validators(field, schema)

    def get_auth(self):
        auths = super().get_auth()
        if self.method in permissions.SAFE_METHODS and {} not in auths and any(
                isinstance(p, permissions.IsAuthenticatedOrReadOnly)
                for p in self.view.get_permissions()):
            auths.append({})  # a public read: credentials are optional
        return auths

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code, (serializer, description) in self._error_answers().items():
            declared = responses.get(code)
            if declared is None or "content" not in declared:
                answer = self._get_response_for_code(serializer, code, direction=direction)
                answer["description"] = (declared or {}).get("description") or description
                responses[code] = answer
        for code, declared in responses.items():
            if code >= "400" and "content" not in declared:
                answer = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                answer["description"] = declared.get("description") or answer["description"]
                responses[code] = answer
        return dict(sorted(responses.items()))

    def _error_answers(self) -> dict:
        answers = {"401": (ErrorSerializer, "credentials needed (a write) or an unknown token")}
        if self.method in WRITES or self._takes_query_parameters():
            answers["400"] = (ValidationErrorsSerializer,
                              "invalid parameters or body: every problem, per field; nothing "
                              "was stored")
        if self.method in WRITES:
            answers["403"] = (ErrorSerializer,
                              "not allowed: not a researcher, not the owner, or a session "
                              "write without the CSRF token")
        if "{" in self.path:
            answers["404"] = (ErrorSerializer, "no such object, or one you may not see")
        return answers

    def _takes_query_parameters(self) -> bool:
        return bool(self._get_pagination_parameters()) or any(
            getattr(p, "location", "query") == "query" for p in self.get_override_parameters())


class ValidationErrorsExtension(OpenApiSerializerExtension):
    """A 400 maps each bad field (or `non_field_errors`) to its messages; an invalid
    submission file adds `detail` and `errors`, one per problem with its line number."""

    target_class = ValidationErrorsSerializer

    def map_serializer(self, auto_schema, direction):
        issue = auto_schema.resolve_serializer(FormatIssueSerializer, direction).ref
        return {
            "type": "object",
            "properties": {
                "detail": {"type": "string"},
                "errors": {"type": "array", "items": issue},
            },
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        }
