"""The group mapping: VERITY_OIDC_GROUP_ROLES read, and applied to memberships."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from audit.models import AuditEvent
from judgments.models import Membership, Role
from judgments.services.sso import apply_group_roles
from judgments.sso.config import GroupRole, group_roles
from tests.factories import make_collection, make_user


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("", [], id="empty"),
        pytest.param(
            "search-team=web-search:evaluator, ops = web-search:reviewer",
            [
                GroupRole("search-team", "web-search", "evaluator"),
                GroupRole("ops", "web-search", "reviewer"),
            ],
            id="commas",
        ),
        pytest.param(
            "cn=admins,ou=groups,dc=example=web-search:admin;cn=x,dc=example=news:reviewer",
            [
                GroupRole("cn=admins,ou=groups,dc=example", "web-search", "admin"),
                GroupRole("cn=x,dc=example", "news", "reviewer"),
            ],
            id="ldap-dns-with-semicolons",
        ),
        pytest.param(
            "/verity/admins=web-search:admin\n/verity/all=news:reviewer\n",
            [
                GroupRole("/verity/admins", "web-search", "admin"),
                GroupRole("/verity/all", "news", "reviewer"),
            ],
            id="new-lines",
        ),
    ],
)
def test_the_mapping_is_read(value, expected):
    assert group_roles(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("search-team:web-search:admin", "is not 'idp-group=collection-slug:role'"),
        ("search-team=web-search", "is not 'idp-group=collection-slug:role'"),
        ("=web-search:admin", "is not 'idp-group=collection-slug:role'"),
        ("search-team=web search:admin", "is not 'idp-group=collection-slug:role'"),
        ("search-team=web-search:owner", "use one of reviewer, evaluator, admin"),
    ],
)
def test_a_wrong_mapping_says_how_to_write_it(value, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        group_roles(value)


MAPPING = [
    GroupRole("search-team", "web-search", "evaluator"),
    GroupRole("search-leads", "web-search", "admin"),
    GroupRole("everyone", "news", "reviewer"),
    GroupRole("everyone", "gone", "reviewer"),  # no such collection: nothing to grant
]


@pytest.fixture
def web(db):
    return make_collection(slug="web-search")


@pytest.fixture
def news(db):
    return make_collection(slug="news")


def roles_of(user) -> dict[str, tuple[str, str]]:
    return {
        m.collection.slug: (m.role, m.granted_by_group)
        for m in Membership.objects.filter(user=user).select_related("collection")
    }


def test_the_highest_mapped_role_is_granted_and_marked(web, news):
    ana = make_user("ana")

    changes = apply_group_roles(
        user=ana, groups=["search-team", "search-leads", "everyone"], mapping=MAPPING
    )

    assert roles_of(ana) == {
        "web-search": ("admin", "search-leads"),
        "news": ("reviewer", "everyone"),
    }
    assert sorted(changes) == [
        ("news", "member.add", "reviewer"),
        ("web-search", "member.add", "admin"),
    ]
    assert AuditEvent.objects.filter(action="member.add").count() == 2


def test_a_mapped_role_follows_the_groups_and_goes_with_them(web, news):
    ana = make_user("ana")
    apply_group_roles(user=ana, groups=["search-leads", "everyone"], mapping=MAPPING)

    changes = apply_group_roles(user=ana, groups=["search-team"], mapping=MAPPING)

    assert roles_of(ana) == {"web-search": ("evaluator", "search-team")}
    assert sorted(changes) == [
        ("news", "member.remove", None),
        ("web-search", "member.role", "evaluator"),
    ]
    change = AuditEvent.objects.get(action="member.role")
    assert (change.before, change.after, change.actor_id) == (
        {"role": "admin"},
        {"role": "evaluator"},
        None,
    )


def test_a_membership_an_admin_made_is_never_touched(web, news):
    ana = make_user("ana")
    Membership.objects.create(user=ana, collection=web, role=Role.REVIEWER)
    Membership.objects.create(user=ana, collection=news, role=Role.ADMIN)

    assert apply_group_roles(user=ana, groups=["search-leads"], mapping=MAPPING) == []
    assert apply_group_roles(user=ana, groups=[], mapping=MAPPING) == []

    assert roles_of(ana) == {"web-search": ("reviewer", ""), "news": ("admin", "")}
    # (the fixtures made the collections: collection.create rows; no member change)
    assert not AuditEvent.objects.filter(action__startswith="member.").exists()


def test_a_mapped_membership_goes_when_its_mapping_is_removed(web):
    ana = make_user("ana")
    apply_group_roles(user=ana, groups=["search-team"], mapping=MAPPING)

    apply_group_roles(user=ana, groups=["search-team"], mapping=[])

    assert roles_of(ana) == {}


def test_nothing_changes_when_nothing_changed(web, news):
    ana = make_user("ana")
    apply_group_roles(user=ana, groups=["search-team", "everyone"], mapping=MAPPING)

    assert apply_group_roles(user=ana, groups=["everyone", "search-team"], mapping=MAPPING) == []
    # Two member.add rows (the fixtures' collection.create rows aside).
    assert AuditEvent.objects.exclude(action="collection.create").count() == 2


def test_the_members_api_says_which_memberships_the_mapping_made(web, client):
    ana, lead = make_user("ana"), make_user("lead")
    Membership.objects.create(user=lead, collection=web, role=Role.ADMIN)
    apply_group_roles(user=ana, groups=["search-team"], mapping=MAPPING)
    client.force_login(lead)

    rows = client.get("/api/collections/web-search/members/").json()["results"]

    assert {r["username"]: r["granted_by_group"] for r in rows} == {
        "ana": "search-team",
        "lead": "",
    }
