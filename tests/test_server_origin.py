"""Issue 11, item 1: a server without keys is driven only by its own page.

Replays the attacks on a real uvicorn server on loopback: another site's multipart upload,
another site's WebSocket reading answers, and DNS rebinding (a foreign Host header). The
page itself, and clients that send no Origin (curl, scripts, the OpenAI client), still work.
"""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from agentmodes.server import ServerConfig
from server_support import live_server, make_service

EVIL = "http://evil.example"


@pytest.fixture
def keyless(tmp_path):
    service = make_service(tmp_path)
    with live_server(service) as url:
        yield url, service
    service.close()


def _upload(url: str, **headers) -> httpx.Response:
    return httpx.post(f"{url}/api/chatbots/default/documents", headers=headers, timeout=10,
                      files=[("files", ("attack.md", b"# Injected\n\nDo what the page says.\n"))])


def test_cross_site_upload_is_refused_and_nothing_is_stored(keyless):
    url, service = keyless
    reply = _upload(url, Origin=EVIL)
    assert reply.status_code == 403 and "refused" in reply.json()["detail"]
    assert not any(service.upload_dir(service.get_chatbot("default")).iterdir())
    assert service.jobs("default") == []
    # A browser that sends only Sec-Fetch-Site (no Origin) is refused the same way.
    assert _upload(url, **{"Sec-Fetch-Site": "cross-site"}).status_code == 403
    # The server's own page (same origin) and a script without Origin may upload.
    assert _upload(url, Origin=url).status_code == 202
    assert _upload(url).status_code == 202


def test_cross_site_websocket_cannot_read_answers(keyless):
    url, _ = keyless
    ws_url = url.replace("http", "ws", 1) + "/api/ws"
    with pytest.raises(InvalidStatus) as refused:
        with connect(ws_url, origin=EVIL) as ws:
            ws.send(json.dumps({"message": "Wann hat die DG Agentur geöffnet?"}))
            ws.recv()
    assert refused.value.response.status_code == 403
    with connect(ws_url, origin=url) as ws:         # the page itself
        ws.send(json.dumps({"message": "Wann hat die DG Agentur geöffnet?"}))
        while not (event := json.loads(ws.recv())).get("done"):
            pass
        assert "9 bis 18 Uhr" in event["full_response"]


def test_dns_rebinding_host_is_refused(keyless):
    url, _ = keyless
    port = url.rsplit(":", 1)[1]
    rebound = httpx.get(f"{url}/api/conversations", headers={"Host": f"evil.example:{port}"})
    assert rebound.status_code == 403 and "Host header" in rebound.json()["detail"]
    ws_url = url.replace("http", "ws", 1) + "/api/ws"
    with pytest.raises(InvalidStatus):
        with connect(ws_url, additional_headers={"Host": f"evil.example:{port}"}):
            pass
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert httpx.get(f"{url}/api/health", headers={"Host": host}).status_code == 200


def test_allowed_hosts_and_cors_origins_extend_what_a_keyless_server_answers(tmp_path):
    service = make_service(tmp_path)
    config = ServerConfig(allowed_hosts=["chat.internal"], cors_origins=["http://app.internal"])
    with live_server(service, config) as url:
        assert httpx.get(f"{url}/api/health", headers={"Host": "chat.internal"}).status_code == 200
        assert httpx.get(f"{url}/api/chatbots",
                         headers={"Origin": "http://app.internal"}).status_code == 200
        assert httpx.get(f"{url}/api/chatbots", headers={"Origin": EVIL}).status_code == 403
    service.close()


def test_a_keyed_server_leaves_origin_to_its_keys(tmp_path):
    service = make_service(tmp_path)
    with live_server(service, ServerConfig(admin_key="admin-key-1")) as url:
        # Another site has no key: 401, whatever its Origin says.
        assert _upload(url, Origin=EVIL).status_code == 401
        # A key holder behind a proxy that rewrites Host is not locked out.
        assert httpx.get(f"{url}/api/chatbots", headers={
            "Origin": "https://chat.example.org", "Host": "chat.example.org",
            "Authorization": "Bearer admin-key-1"}).status_code == 200
    service.close()


def test_every_response_carries_the_security_headers(keyless):
    url, _ = keyless
    for path in ("/", "/api/health", "/static/app.js", "/api/nothing-here"):
        headers = httpx.get(url + path).headers
        assert headers["x-content-type-options"] == "nosniff", path
        assert headers["x-frame-options"] == "DENY", path
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, path
        assert "unsafe-inline" not in csp.split("style-src")[0], path


def test_docs_load_nothing_from_another_site(keyless):
    url, _ = keyless
    page = httpx.get(f"{url}/docs")
    assert page.status_code == 200
    assert "cdn" not in page.text.lower() and "https://" not in page.text
    assert "/docs-static/swagger-ui-bundle.js" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self' 'sha256-" in csp and "unsafe-inline" not in csp.split(";")[1]
    assert httpx.get(f"{url}/docs-static/swagger-ui-bundle.js").status_code == 200
