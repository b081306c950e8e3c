"""What a judge may send where (issue 22 item 1): key variables only from the operator's
set, hosts only from VERITY_JUDGE_HOSTS (private addresses only when listed, checked on
the address connected to), URLs normalised, no redirects, and raw answers shown only to
evaluators and admins. Every check holds when a judge is saved and again when it runs."""

from __future__ import annotations

import socket

import pytest
from django.test import Client

from judges.models import JudgeConfig, Proposal
from judges.providers.outbound import AllowList, OutboundRefused, normalise
from judges.services import JudgeError, propose_labels
from judgments.models import ReviewTask
from judgments.services import set_membership
from tests.factories import make_item, make_query, make_user


@pytest.fixture
def pool(collection_graded):
    q = make_query(collection_graded, external_id="q-a", text="query a")
    i = make_item(collection_graded, external_id="doc-a", text="text about a")
    ReviewTask.objects.create(collection=collection_graded, query=q, item=i, source="run x")
    return [(q, i)]


@pytest.fixture
def judge(collection_graded, chat_server):
    return JudgeConfig.objects.create(
        collection=collection_graded,
        name="tiny-llm",
        base_url=chat_server.base_url,
        model="tiny-7b",
        timeout=2,
        retries=0,
        concurrency=1,
        backoff=0,
    )


def _form(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": "vllm-judge",
        "base_url": "http://models.example.org/v1",
        "model": "qwen",
        "api_key_env": "",
        "timeout": 30,
        "retries": 1,
        "concurrency": 2,
        "request_budget": 100,
        "backoff": 0.5,
        "temperature": 0,
        "max_tokens": 256,
        "prompt_version": "umbrela-v1",
    }
    return {**data, **changes}


@pytest.fixture
def admin_client(collection_graded, settings):
    settings.VERITY_JUDGE_HOSTS = ["models.example.org", "gpu.internal:8000", "10.1.2.3"]
    admin = make_user("adm")
    set_membership(collection=collection_graded, user=admin, role="admin")
    client = Client()
    client.force_login(admin)
    return client


def test_a_judge_saved_with_the_servers_secret_as_key_sends_nothing(
    collection_graded, pool, judge, chat_server, settings
):
    """A judge saved before the rules, naming SECRET_KEY: the run refuses before any
    request (main sent "Authorization: Bearer <SECRET_KEY>")."""
    for name in ("SECRET_KEY", "DATABASE_URL"):
        JudgeConfig.objects.filter(pk=judge.pk).update(api_key_env=name)
        judge.refresh_from_db()
        with pytest.raises(JudgeError, match=f"'{name}' is not a judge key variable"):
            propose_labels(collection=collection_graded, judge=judge)
    assert chat_server.requests == [] and not Proposal.objects.exists()


def test_key_variables_come_only_from_the_operators_set(
    collection_graded, pool, judge, chat_server, settings, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-listed")
    JudgeConfig.objects.filter(pk=judge.pk).update(api_key_env="OPENAI_API_KEY")
    judge.refresh_from_db()
    with pytest.raises(JudgeError, match="VERITY_JUDGE_KEY_ENVS"):
        propose_labels(collection=collection_graded, judge=judge)
    settings.VERITY_JUDGE_KEY_ENVS = ["OPENAI_API_KEY"]  # the operator lists it
    propose_labels(collection=collection_graded, judge=judge)
    assert chat_server.requests[0]["headers"]["Authorization"] == "Bearer sk-listed"


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"api_key_env": "SECRET_KEY"}, "api_key_env", "is not a judge key variable"),
        ({"api_key_env": "DATABASE_URL"}, "api_key_env", "is not a judge key variable"),
        ({"base_url": "http://169.254.169.254/latest"}, "base_url", "not in the server's allow"),
        ({"base_url": "http://elsewhere.example.com/v1"}, "base_url", "not in the server's allow"),
        ({"base_url": "http://gpu.internal:9000/v1"}, "base_url", "not in the server's allow"),
        ({"base_url": "http://models.example.org/v1#"}, "base_url", "fragment"),
        ({"base_url": "http://u:p@models.example.org/v1"}, "base_url", "user name or password"),
        ({"base_url": "http://models.example.org/v1?x=1"}, "base_url", "query"),
        ({"base_url": "ftp://models.example.org/v1"}, "base_url", "http:// or https://"),
        ({"concurrency": 0}, "concurrency", "greater than or equal to 1"),
        ({"concurrency": 33}, "concurrency", "less than or equal to 32"),
        ({"backoff": -1}, "backoff", "greater than or equal to 0"),
        ({"timeout": 0}, "timeout", "greater than or equal to 0.1"),
        ({"retries": 11}, "retries", "less than or equal to 10"),
        ({"temperature": 5}, "temperature", "less than or equal to 2"),
        ({"max_tokens": 0}, "max_tokens", "greater than or equal to 1"),
        ({"prompt_version": "nope-v9"}, "prompt_version", "no prompt template 'nope-v9'"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_the_judge_form_refuses_with_a_form_error_and_saves_nothing(
    collection_graded, admin_client, changes, field, message
):
    response = admin_client.post(f"/c/{collection_graded.slug}/judges/new/", _form(**changes))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert not JudgeConfig.objects.exists()


def test_the_judge_form_saves_allowed_values_normalised(collection_graded, admin_client):
    url = f"/c/{collection_graded.slug}/judges/new/"
    response = admin_client.post(
        url,
        _form(
            base_url="HTTP://Models.Example.org:80/v1/chat/completions/",
            api_key_env="VERITY_JUDGE_KEY_VLLM",
        ),
    )
    assert response.status_code == 302
    saved = JudgeConfig.objects.get()
    assert saved.base_url == "http://models.example.org/v1"
    assert saved.api_key_env == "VERITY_JUDGE_KEY_VLLM"
    # a private address is fine when the operator listed it
    ok = admin_client.post(url, _form(name="inside", base_url="http://10.1.2.3:8080/v1"))
    assert ok.status_code == 302


def test_the_django_admin_refuses_a_secret_key_variable(collection_graded, settings):
    settings.VERITY_JUDGE_HOSTS = ["models.example.org"]
    root = make_user("root", is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(root)
    data = {**_form(api_key_env="SECRET_KEY"), "collection": collection_graded.pk}
    data["provider"] = "openai-compatible"
    response = client.post("/admin/judges/judgeconfig/add/", data)
    assert response.status_code == 200
    assert "is not a judge key variable" in response.content.decode()
    assert not JudgeConfig.objects.exists()


def test_a_host_removed_from_the_allow_list_is_not_called(
    collection_graded, pool, judge, chat_server, settings
):
    settings.VERITY_JUDGE_HOSTS = ["models.example.org"]
    with pytest.raises(JudgeError, match=r"host 127\.0\.0\.1:\d+ is not in the server's allow"):
        propose_labels(collection=collection_graded, judge=judge)
    assert chat_server.requests == []


def test_a_fragment_saved_before_the_fix_cannot_reach_another_path(
    collection_graded, pool, judge, chat_server
):
    JudgeConfig.objects.filter(pk=judge.pk).update(base_url=chat_server.base_url + "/admin#")
    judge.refresh_from_db()
    with pytest.raises(JudgeError, match="must not have a fragment"):
        propose_labels(collection=collection_graded, judge=judge)
    assert chat_server.requests == []


def test_a_listed_name_that_resolves_to_loopback_is_refused_on_connect(
    collection_graded, pool, judge, chat_server, settings, monkeypatch
):
    """DNS rebinding: the name is listed, and resolves to the loopback address only when
    the request is made; the address connected to is checked, so nothing is sent."""
    port = chat_server.httpd.server_address[1]
    settings.VERITY_JUDGE_HOSTS = [f"models.example.org:{port}"]
    JudgeConfig.objects.filter(pk=judge.pk).update(base_url=f"http://models.example.org:{port}/v1")
    judge.refresh_from_db()
    real = socket.getaddrinfo
    calls = []

    def rebound(host, *args, **kwargs):
        if host == "models.example.org":
            calls.append(host)
            # public when the run checks the judge, loopback when it connects
            return real("93.184.216.34" if len(calls) == 1 else "127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebound)
    propose_labels(collection=collection_graded, judge=judge)
    proposal = Proposal.objects.get()
    assert proposal.state == "failed"
    assert "resolves to 127.0.0.1, a private, loopback" in proposal.failure_reason
    assert chat_server.requests == [] and len(calls) == 2


def test_redirects_are_not_followed(collection_graded, pool, judge, chat_server):
    chat_server.default = ("redirect", "/internal/secret")
    propose_labels(collection=collection_graded, judge=judge)
    assert [r["path"] for r in chat_server.requests] == ["/v1/chat/completions"]
    assert "HTTP 307" in Proposal.objects.get().failure_reason


def test_raw_answers_are_shown_to_evaluators_and_admins_only(
    collection_graded, pool, judge, chat_server
):
    chat_server.default = ("ok", "internal-page-marker: no grade here")
    propose_labels(collection=collection_graded, judge=judge)
    assert "internal-page-marker" in Proposal.objects.get().raw_answer
    slug = collection_graded.slug
    for role, sees in (("reviewer", False), ("evaluator", True), ("admin", True)):
        user = make_user(f"user-{role}")
        set_membership(collection=collection_graded, user=user, role=role)
        client = Client()
        client.force_login(user)
        page = client.get(f"/c/{slug}/judges/tiny-llm/proposals/")
        assert page.status_code == 200
        assert ("internal-page-marker" in page.content.decode()) is sees, role
        api = client.get(f"/api/collections/{slug}/judges/tiny-llm/proposals/").json()
        row = api["results"][0] if "results" in api else api[0]
        assert ("raw_answer" in row) is sees, role
        if sees:
            assert "internal-page-marker" in row["raw_answer"]


@pytest.mark.parametrize(
    ("entries", "url", "allowed"),
    [
        (["127.0.0.1:8080"], "http://127.0.0.1:8080/v1", True),
        (["127.0.0.1:8080"], "http://127.0.0.1:8081/v1", False),
        (["api.example.com"], "https://api.example.com/v1", True),
        (["[::1]:8080"], "http://[::1]:8080/v1", True),
        ([], "http://127.0.0.1/v1", False),
    ],
)
def test_allow_list_entries(entries, url, allowed):
    allow = AllowList.parse(entries)
    target = normalise(url)
    assert allow.allows_host(target.host, target.port) is allowed


def test_private_addresses_need_listing():
    import ipaddress

    allow = AllowList.parse(["api.example.com", "10.0.0.0/8"])
    for address, ok in [
        ("127.0.0.1", False),
        ("169.254.169.254", False),
        ("192.168.1.1", False),
        ("::ffff:127.0.0.1", False),
        ("10.2.3.4", True),
        ("8.8.8.8", True),
    ]:
        assert allow.allows_address(ipaddress.ip_address(address)) is ok, address
    with pytest.raises(ValueError, match="not a host name"):
        AllowList.parse(["bad host!"])
    with pytest.raises(OutboundRefused):
        normalise("http://a.example/v1 x")


def test_a_bad_allow_list_entry_refuses_with_its_reason(collection_graded, admin_client, settings):
    settings.VERITY_JUDGE_HOSTS = ["models.example.org:http"]
    response = admin_client.post(f"/c/{collection_graded.slug}/judges/new/", _form())
    assert response.status_code == 200
    assert "'models.example.org:http' has no valid port" in " ".join(
        response.context["form"].errors["base_url"]
    )
