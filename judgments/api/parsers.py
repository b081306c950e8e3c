"""The JSON parser of every API endpoint (``DEFAULT_PARSER_CLASSES``).

A body goes through the rule a JSON Lines record goes through
(``verity_limits.parse_json_line``): nesting at most ``JSON_DEPTH_MAX`` levels, no lone
UTF-16 surrogates and no NUL in strings, no NaN, no duplicate keys. DRF's own parser
lets a body nested 100,000 levels deep reach ``RecursionError`` (a 500), and a lone
surrogate reach the serializer, whose error message then cannot be encoded (a 500 too).
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

from verity_limits import JsonLineError, parse_json_line


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = get_encoding(parser_context or {})
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            raise ParseError(f"The body is not valid {encoding}; send UTF-8 JSON.") from None
        try:
            return parse_json_line(text)
        except JsonLineError as exc:
            raise ParseError(f"JSON parse error: {exc}.") from None
