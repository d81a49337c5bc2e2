"""The API's pagination: `limit` at most 100 (docs/api.md), and a bad `limit` or `offset`
answered with 400, never ignored and never passed to the database (2^63 overflowed it: 500)."""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 10**9


class StrictLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = 100

    def get_limit(self, request):
        return self._number(request, self.limit_query_param, 1, self.max_limit,
                            self.default_limit)

    def get_schema_operation_parameters(self, view):
        bounds = {self.limit_query_param: (1, self.max_limit),
                  self.offset_query_param: (0, MAX_OFFSET)}
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            low, high = bounds[parameter["name"]]
            parameter["schema"].update(minimum=low, maximum=high)
        return parameters

    def get_offset(self, request):
        return self._number(request, self.offset_query_param, 0, MAX_OFFSET, 0)

    @staticmethod
    def _number(request, name: str, low: int, high: int, default: int) -> int:
        raw = request.query_params.get(name)
        if raw is None:
            return default
        if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
            raise ValidationError({name: [f"expected a whole number from {low} to {high}, "
                                          f"got {raw[:40]!r}"]})
        return int(raw)
