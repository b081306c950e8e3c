"""``/api/collections/…``: collections, members, queries, items, judgments, tasks, snapshots.

Written out path by path rather than by a router, so that each URL reads as it is served.
Query and item ids are opaque and may hold "/": the path converter takes them whole.
"""

from django.urls import path

from jobs.lazy_views import views_of

views = views_of("judgments.api.views")  # imported on first use (jobs/lazy_views.py)

app_name = "judgments-api"

LIST = {"get": "list"}
DETAIL = {"get": "retrieve"}

urlpatterns = [
    path("collections/", views.CollectionListView.as_view(), name="collections"),
    path("collections/<slug:slug>/", views.CollectionDetailView.as_view(), name="collection"),
    path(
        "collections/<slug:slug>/members/",
        views.MemberViewSet.as_view({"get": "list", "post": "create"}),
        name="members",
    ),
    path(
        "collections/<slug:slug>/members/<str:username>/",
        views.MemberViewSet.as_view(
            {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
        ),
        name="member",
    ),
    path("collections/<slug:slug>/queries/", views.QueryViewSet.as_view(LIST), name="queries"),
    path(
        "collections/<slug:slug>/queries/<external_id:qid>/",
        views.QueryViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="query",
    ),
    path("collections/<slug:slug>/items/", views.ItemViewSet.as_view(LIST), name="items"),
    path(
        "collections/<slug:slug>/items/<external_id:item_id>/",
        views.ItemViewSet.as_view(DETAIL),
        name="item",
    ),
    path(
        "collections/<slug:slug>/judgments/",
        views.JudgmentViewSet.as_view({"get": "list", "post": "create"}),
        name="judgments",
    ),
    path(
        "collections/<slug:slug>/judgments/<int:pk>/",
        views.JudgmentViewSet.as_view(
            {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
        ),
        name="judgment",
    ),
    path("collections/<slug:slug>/tasks/", views.TaskViewSet.as_view(LIST), name="tasks"),
    path(
        "collections/<slug:slug>/tasks/claim/",
        views.TaskViewSet.as_view({"post": "claim"}),
        name="task-claim",
    ),
    path(
        "collections/<slug:slug>/tasks/<int:pk>/",
        views.TaskViewSet.as_view(DETAIL),
        name="task",
    ),
    path(
        "collections/<slug:slug>/tasks/<int:pk>/skip/",
        views.TaskViewSet.as_view({"post": "skip"}),
        name="task-skip",
    ),
    path(
        "collections/<slug:slug>/tasks/<int:pk>/judge/",
        views.TaskViewSet.as_view({"post": "judge"}),
        name="task-judge",
    ),
    path(
        "collections/<slug:slug>/snapshots/",
        views.SnapshotViewSet.as_view({"get": "list", "post": "create"}),
        name="snapshots",
    ),
    path(
        "collections/<slug:slug>/snapshots/<int:number>/",
        views.SnapshotViewSet.as_view(DETAIL),
        name="snapshot",
    ),
    path(
        "collections/<slug:slug>/snapshots/<int:number>/diff/<int:other>/",
        views.SnapshotViewSet.as_view({"get": "diff"}),
        name="snapshot-diff",
    ),
    path(
        "collections/<slug:slug>/snapshots/<int:number>/exports/",
        views.QrelsExportJobView.as_view(),
        name="snapshot-exports",
    ),
    path(
        "collections/<slug:slug>/imports/",
        views.CollectionImportJobView.as_view(),
        name="collection-imports",
    ),
    path(
        "collections/<slug:slug>/agreement/",
        views.AgreementView.as_view(),
        name="agreement",
    ),
    # No trailing slash: it is a file.
    path(
        "collections/<slug:slug>/snapshots/<int:number>/qrels",
        views.QrelsView.as_view(),
        name="snapshot-qrels",
    ),
]
