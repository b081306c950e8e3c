from django.urls import path

from jobs.lazy_views import views_of

views = views_of("judgments.views")  # imported on first use (jobs/lazy_views.py)

app_name = "judgments"

urlpatterns = [
    path("", views.home, name="home"),
    path("c/new/", views.new_collection, name="new-collection"),  # before c/<slug>/
    path("c/<slug:slug>/", views.collection_detail, name="collection"),
    path("c/<slug:slug>/settings/", views.collection_settings, name="settings"),
    path("c/<slug:slug>/members/", views.collection_members, name="members"),
    path("c/<slug:slug>/review/", views.review, name="review"),
    path("c/<slug:slug>/review/claim/", views.review_claim, name="review-claim"),
    path("c/<slug:slug>/review/judge/", views.review_judge, name="review-judge"),
    path("c/<slug:slug>/review/skip/", views.review_skip, name="review-skip"),
    path("c/<slug:slug>/review/undo/", views.review_undo, name="review-undo"),
    path("c/<slug:slug>/review/status/", views.review_settle, name="review-settle"),
    path("c/<slug:slug>/adjudicate/", views.adjudication_queue, name="adjudicate"),
    path("c/<slug:slug>/adjudicate/decide/", views.adjudication_decide, name="adjudicate-decide"),
    path("c/<slug:slug>/agreement/", views.agreement_page, name="agreement"),
    path("c/<slug:slug>/reviewers/", views.reviewer_stats_page, name="reviewers"),
    path("c/<slug:slug>/audit/", views.collection_audit_log, name="audit"),
    path("audit/", views.audit_log, name="audit-all"),
    path("c/<slug:slug>/status/", views.bulk_status, name="bulk-status"),
    path("c/<slug:slug>/bundle/", views.collection_bundle, name="collection-bundle"),
    path("c/<slug:slug>/snapshots/", views.snapshot_list, name="snapshots"),
    path(
        "c/<slug:slug>/snapshots/<int:number>/download/",
        views.snapshot_download,
        name="snapshot-download",
    ),
    path("c/<slug:slug>/snapshots/freeze/", views.snapshot_freeze, name="snapshot-freeze"),
    path("c/<slug:slug>/snapshots/diff/", views.snapshot_diff_pick, name="snapshot-diff-pick"),
    path(
        "c/<slug:slug>/snapshots/<int:a>/diff/<int:b>/",
        views.snapshot_diff,
        name="snapshot-diff",
    ),
    # Query ids are opaque and may hold "/": the path converter takes them whole.
    path("c/<slug:slug>/q/<external_id:external_id>/", views.query_detail, name="query"),
]
