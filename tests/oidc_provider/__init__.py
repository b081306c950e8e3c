"""A real OpenID provider for the single sign-on tests, run in a process of its own.

A tiny Django project (django-oauth-toolkit with OpenID Connect on, PKCE required, RS256
ID tokens signed with a key the tests generate) that ``harness.start_provider`` starts
with ``runserver`` once per test session. Verity talks to it over HTTP exactly as to a
production identity provider: discovery, authorization, token, JWKS and userinfo.

A control endpoint (``POST /control/``, tests only) adds users and groups, registers
redirect URIs and makes the provider misbehave: ID tokens already expired, for another
audience or from another issuer.
"""
