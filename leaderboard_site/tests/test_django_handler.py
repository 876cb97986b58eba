"""Django's share of the traffic in one hop to a thread (leaderboard_site/django_handler.py): its
answers equal those of Django's own ASGI handler, byte for byte with every header and cookie, a
streaming response arrives whole, and a sign-in sets its session cookie."""

import re
from http.cookies import SimpleCookie

import pytest
from django.core.asgi import get_asgi_application
from django.http import HttpRequest, StreamingHttpResponse
from django.test import override_settings
from django.urls import path

from common.testing import asgi_request
from leaderboard_site.django_handler import OneHopHandler
from leaderboard_site.urls import urlpatterns as site_urls

pytestmark = pytest.mark.django_db


def _stream(request: HttpRequest) -> StreamingHttpResponse:
    return StreamingHttpResponse((f"line {i}\n" for i in range(1000)), content_type="text/plain")


urlpatterns = [path("test-stream", _stream), *site_urls]


_TOKENS = re.compile(r"(csrftoken=|csrfmiddlewaretoken\" value=\")[A-Za-z0-9]+")


_DATES = re.compile(r"\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT")


def _answer(app, path: str, **kwargs) -> tuple:
    """Status, headers and body, the CSRF token (new on every answer) and the dates (the two
    answers may fall in two seconds) blanked."""
    got = asgi_request(app, path, **kwargs)
    headers = [(name, _DATES.sub("-", _TOKENS.sub(r"\1-", value))) for name, value in got.raw_headers]
    return got.status_code, headers, _TOKENS.sub(r"\1-", got.content.decode())


def _same(path: str, **kwargs) -> None:
    assert _answer(OneHopHandler(), path, **kwargs) == _answer(get_asgi_application(), path, **kwargs), path


def _cookies(answer) -> SimpleCookie:
    jar: SimpleCookie = SimpleCookie()
    for name, value in answer.raw_headers:
        if name == "Set-Cookie":
            jar.load(value)
    return jar


def test_answers_equal_djangos_own_handler():
    _same("/health/live")
    _same("/admin/login/")  # a template, a CSRF cookie
    _same("/admin/")  # a redirect to the sign-in
    _same("/nowhere")  # Django's 404
    _same("/health/live", method="POST")  # 405


@override_settings(ROOT_URLCONF=__name__)
def test_a_streaming_response_arrives_whole():
    answer = asgi_request(OneHopHandler(), "/test-stream")
    assert answer.status_code == 200
    assert answer.content == "".join(f"line {i}\n" for i in range(1000)).encode()


def test_a_sign_in_sets_its_session_cookie(django_user_model):
    django_user_model.objects.create_superuser("mod", password="pw-123456")
    handler = OneHopHandler()
    form = asgi_request(handler, "/admin/login/")
    csrf = _cookies(form)["csrftoken"].value
    body = f"username=mod&password=pw-123456&csrfmiddlewaretoken={csrf}&next=/admin/".encode()
    answer = asgi_request(
        handler,
        "/admin/login/",
        method="POST",
        body=body,
        headers=[("Content-Type", "application/x-www-form-urlencoded"), ("Cookie", f"csrftoken={csrf}")],
    )
    assert answer.status_code == 302 and answer["Location"] == "/admin/"
    assert _cookies(answer)["sessionid"].value
