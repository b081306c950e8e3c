"""URL patterns whose views are imported on first use, not when the URLs load.

Every management command runs Django's system checks, and the URL checks load the whole
URL configuration; if that imported every view, each command, worker and web process
would import the views, their serializers, services and selectors, and (through
``extend_schema``) drf-spectacular's schema machinery and Django's test client with it
(~45 modules more than now, ~5 % of ``check``'s CPU time; bench/README.md). So a URL
module names its views
through :func:`views_of`::

    views = views_of("judgments.api.views")
    path("collections/", views.CollectionListView.as_view(), name="collections")
    path("c/<slug:slug>/judges/", views.judge_list, name="judges")

which reads as ``from . import views`` did. Each pattern's callback is a
:class:`LazyView`: a callable that imports its view when first called (a request), and
hands any other attribute to the real view, importing it then (the middleware's
``csrf_exempt``, DRF's ``cls`` and ``initkwargs`` for drf-spectacular's schema,
``view_class`` for ``resolve()`` and ``reverse()``). Django's URL checks ask only
whether the callback is a class; it is not. (This module lives in the lowest app
that has URLs, so that every app's URL modules may use it.)
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.utils.module_loading import import_string

_OWN = frozenset({"_target", "_as_view", "view"})


class LazyView:
    """A view named by its dotted path; ``as_view(...)`` as on the view class."""

    def __init__(self, target: str, as_view: tuple[tuple[Any, ...], dict[str, Any]] | None = None):
        self._target = target
        self._as_view = as_view
        module, _, name = target.rpartition(".")
        # What Django reads of a view function without calling it (ResolverMatch's
        # view name for unnamed patterns, lookup_str), known without importing it.
        self.__module__ = module
        self.__name__ = self.__qualname__ = name

    def as_view(self, *args: Any, **initkwargs: Any) -> LazyView:
        return LazyView(self._target, (args, initkwargs))

    @cached_property
    def view(self) -> Any:
        target = import_string(self._target)
        if self._as_view is None:
            return target
        args, initkwargs = self._as_view
        return target.as_view(*args, **initkwargs)

    def __call__(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return self.view(request, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # only what the instance does not have
        if name in _OWN:
            raise AttributeError(name)
        return getattr(self.view, name)

    def __repr__(self) -> str:
        return f"<LazyView {self._target}{'.as_view(...)' if self._as_view else ''}>"


class views_of:
    """``views_of("app.views").X`` is a :class:`LazyView` of ``app.views.X``."""

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> LazyView:
        if name.startswith("__"):
            raise AttributeError(name)
        return LazyView(f"{self._module}.{name}")
