"""One pagination for every list: ``?page=N&page_size=M`` (M from 1 to 1000).

A ``page_size`` that is not such a number is a 400 naming it, as the schema declares:
DRF's own pagination fell back to 50 without a word, so a client asking for 5,000 rows
(or for "ten") read 50 and could not tell.
"""

import re

from rest_framework import pagination, serializers


class PageNumberPagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if not raw:  # absent or empty: the default
            return self.page_size
        if not re.fullmatch(r"[0-9]{1,7}", raw) or not 1 <= int(raw) <= self.max_page_size:
            raise serializers.ValidationError(
                {
                    self.page_size_query_param: (
                        f"{raw[:40]!r} is not a page size; give a whole number from 1 to "
                        f"{self.max_page_size}"
                    )
                }
            )
        return int(raw)

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                }
                parameter["description"] = (
                    f"Results per page, 1 to {self.max_page_size} (default {self.page_size}); "
                    "anything else is a 400."
                )
        return parameters
