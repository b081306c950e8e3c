"""Single sign-on with OpenID Connect: the provider's configuration (``config``), the
authentication backends (``backend``) and the one refusal (``errors``). The pages are
``judgments/views/sso.py``; the account and role changes ``judgments/services/sso.py``."""
