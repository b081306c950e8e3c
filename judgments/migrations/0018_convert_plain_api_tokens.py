"""Turn DRF's plain tokens (``authtoken_token``, the key stored in clear) into hashed
``ApiToken`` rows, then drop that table.

Each key keeps working, unchanged, as an ``admin``-scope token (what it was: everything
its user's roles allow) named "token made before scopes", expiring
``VERITY_TOKEN_DAYS`` (90 by default) after this migration; only its SHA-256 and its first
6 characters are kept. ``rest_framework.authtoken`` is no longer installed, so nothing
could read or write the old table again: it is dropped, and its migration records
removed so that re-adding the app one day would create it afresh. Not reversible: the
keys are not stored anywhere any more (migrating back leaves no tokens; make new ones).
"""

import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone

LEGACY_TABLE = "authtoken_token"


def convert_plain_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("judgments", "ApiToken")
    now = timezone.now()
    expires = now + timedelta(days=settings.VERITY_TOKEN_DAYS)
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')}, user_id FROM {quote(LEGACY_TABLE)}")
        rows = cursor.fetchall()
    ApiToken.objects.bulk_create(
        ApiToken(
            user_id=user_id,
            name="token made before scopes",
            prefix=key[:6],
            key_hash=hashlib.sha256(key.encode("utf-8")).hexdigest(),
            scope="admin",
            created_at=now,
            expires_at=expires,
        )
        for key, user_id in rows
    )
    schema_editor.execute(f"DROP TABLE {quote(LEGACY_TABLE)}")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = %s", ["authtoken"])


class Migration(migrations.Migration):
    dependencies = [("judgments", "0017_apitoken")]

    operations = [
        migrations.RunPython(convert_plain_tokens, migrations.RunPython.noop, elidable=True),
    ]
