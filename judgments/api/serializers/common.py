"""What the other shapes share: the scale, usernames, the client key, strict inputs, grades."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from judgments.models import Collection

CLIENT_KEY_HELP = (
    "A key you choose (e.g. a UUID) that makes a retried create return the judgment it "
    "made instead of an error or a duplicate. Same as the Idempotency-Key header."
)


class ScaleEntrySerializer(serializers.Serializer):
    grade = serializers.IntegerField()
    name = serializers.CharField()


def username_of(user: Any) -> str | None:
    return user.get_username() if user is not None else None


class KnownFieldsOnly(serializers.Serializer):
    """An input that refuses fields it does not know (400 naming each one and the fields it
    takes), instead of ignoring them: a client that sends ``"can_adjudicate"`` or a typo
    must not believe it changed something."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.initial_data if isinstance(self.initial_data, dict) else {}
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {
                    name: f"unknown field; this request takes {', '.join(self.fields)}"
                    for name in unknown
                }
            )
        return super().validate(attrs)


class GradeField(serializers.IntegerField):
    """A grade on the collection's scale (from the serializer's context)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or (isinstance(data, float) and not data.is_integer()):
            self.fail("invalid")
        value = super().to_internal_value(data)
        collection: Collection = self.context["collection"]
        if value not in collection.grades:
            names = ", ".join(f"{g['grade']} {g['name']}" for g in collection.scale)
            raise serializers.ValidationError(
                f"{value} is not on the scale of collection '{collection.slug}' ({names})"
            )
        return value
