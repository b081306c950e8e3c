"""API views of collections (list, detail, settings) and their members."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics, mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.api import JOB_ACCEPTED, job_accepted
from judgments.models import Collection, Membership, Role
from judgments.selectors import collections_for, collections_with_progress
from judgments.services import set_member_access, set_member_role, update_collection_settings
from judgments.tasks import start_collection_import

from .. import serializers as s
from ..auth import token_collection_id
from ..errors import ApiError
from ..permissions import CollectionScoped
from ..uploads import StreamedUploads
from .common import NamedLookup, error


def with_my_role(queryset: QuerySet[Collection], user: Any) -> QuerySet[Collection]:
    return queryset.annotate(
        my_role=Subquery(
            Membership.objects.filter(collection=OuterRef("pk"), user_id=user.pk).values("role")[:1]
        )
    )


@extend_schema(tags=["collections"])
class CollectionListView(generics.ListAPIView):
    """The collections you are a member of (every one, for a superuser), with your role
    and their queries counted by review status."""

    serializer_class = s.CollectionSerializer
    token_collection_aware = True  # a token limited to one collection lists that one

    def get_queryset(self) -> QuerySet[Collection]:
        user = self.request.user
        visible = collections_for(user).values("pk")
        limited_to = token_collection_id(self.request)
        if limited_to is not None:
            visible = visible.filter(pk=limited_to)
        return with_my_role(collections_with_progress().filter(pk__in=visible), user).order_by(
            "slug"
        )


@extend_schema(tags=["collections"])
class CollectionDetailView(CollectionScoped, generics.GenericAPIView):
    serializer_class = s.CollectionSerializer
    required_roles = {"PATCH": Role.ADMIN}

    def get_object(self) -> Collection:
        return with_my_role(
            collections_with_progress().filter(pk=self.collection.pk), self.request.user
        ).get()

    def get(self, request: Request, slug: str) -> Response:
        """The collection: its scale, unit, settings, your role, and its progress."""
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(
        request=s.CollectionSettingsInput,
        responses={
            200: s.CollectionSerializer,
            409: error("The stored data refuses the change (the message says what to change)."),
        },
    )
    def patch(self, request: Request, slug: str) -> Response:
        """Change the collection's settings (admin): name, description, guidelines, pool
        depth, holds whole corpus, assessors per item, resolution policy, adjudicate
        distance, model labels; each change is recorded in the audit log. The scale,
        relevant grade and unit are fixed at creation."""
        data = s.CollectionSettingsInput(data=request.data)
        data.is_valid(raise_exception=True)
        update_collection_settings(
            collection=self.collection,
            actor=request.user,
            request=request,
            **data.validated_data,
        )
        return Response(self.get_serializer(self.get_object()).data)


MEMBER_CONFLICT = error(
    "The change would leave the collection without an admin, or the "
    "user is a member already (the message says which)."
)


@extend_schema_view(
    list=extend_schema(summary="List the members and their roles (admin)."),
    retrieve=extend_schema(summary="One member's role (admin)."),
    create=extend_schema(
        summary="Add a member with a role (admin).",
        request=s.MemberCreateInput,
        responses={201: s.MemberSerializer, 409: MEMBER_CONFLICT},
    ),
    partial_update=extend_schema(
        summary="Change a member's role or adjudicator capability (admin).",
        request=s.MemberRoleInput,
        responses={200: s.MemberSerializer, 409: MEMBER_CONFLICT},
    ),
    destroy=extend_schema(
        summary="Remove a member (admin).",
        responses={204: None, 409: MEMBER_CONFLICT},
    ),
)
@extend_schema(tags=["members"])
class MemberViewSet(
    CollectionScoped,
    NamedLookup,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = s.MemberSerializer
    required_roles = {m: Role.ADMIN for m in ("GET", "POST", "PATCH", "DELETE")}
    lookup_field = "user__username"
    lookup_url_kwarg = "username"
    lookup_what = "member"

    def get_queryset(self) -> QuerySet[Membership]:
        if self.schema_only():
            return Membership.objects.none()
        return (
            Membership.objects.filter(collection=self.collection)
            .select_related("user")
            .order_by("user__username")
        )

    def create(self, request: Request, slug: str) -> Response:
        data = s.MemberCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        user = data.validated_data["username"]
        held = self.get_queryset().filter(user=user).first()
        if held is not None:
            raise ApiError(
                409,
                f"{user.get_username()} is a member already, as {held.role}; change the role "
                f"with PATCH /api/collections/{slug}/members/{user.get_username()}/",
            )
        membership = set_member_access(
            collection=self.collection,
            user=user,
            role=data.validated_data["role"],
            can_adjudicate=data.validated_data.get("can_adjudicate"),
            actor=request.user,
            request=request,
        )
        return Response(self.get_serializer(membership).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, slug: str, username: str) -> Response:
        membership = self.get_object()
        data = s.MemberRoleInput(data=request.data)
        data.is_valid(raise_exception=True)
        membership = set_member_access(
            collection=self.collection,
            user=membership.user,
            role=data.validated_data.get("role", membership.role),
            can_adjudicate=data.validated_data.get("can_adjudicate"),
            actor=request.user,
            request=request,
        )
        return Response(self.get_serializer(membership).data)

    def destroy(self, request: Request, slug: str, username: str) -> Response:
        membership = self.get_object()
        set_member_role(
            collection=self.collection,
            user=membership.user,
            role=None,
            actor=request.user,
            request=request,
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class CollectionImportInput(serializers.Serializer):
    bundle = serializers.FileField(
        help_text="A JSONL bundle (its collection line, if any, must match this collection): "
        "items, queries, judgments, statuses, unjudged pairs."
    )
    create_missing_items = serializers.BooleanField(default=False)
    set_status = serializers.BooleanField(default=False)


@extend_schema(tags=["collections"])
class CollectionImportJobView(CollectionScoped, StreamedUploads, APIView):
    required_roles = {"POST": Role.ADMIN}

    @extend_schema(
        summary="Import a JSONL bundle into the collection, as a background job (admin).",
        description="All or nothing, as `manage.py import_collection`: 202 with `Location: "
        "/api/jobs/<id>/`; a refused bundle fails the job, whose `errors` list each problem "
        "with its line, and nothing is imported.",
        request={"multipart/form-data": CollectionImportInput},
        responses={202: JOB_ACCEPTED},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = CollectionImportInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        job = start_collection_import(
            collection=self.collection,
            upload=v["bundle"],
            filename=v["bundle"].name or "bundle.jsonl",
            create_missing_items=v["create_missing_items"],
            set_status=v["set_status"],
            by=request.user,
        )
        return job_accepted(job)
