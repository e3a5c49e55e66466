"""A settings form saved back as it was shown must not overwrite the stored secrets.

The API shows an MCP server's headers and env (and the Tavily key) as "***". Before, a
client that PATCHed those settings back (the web page's settings form does) replaced the
real token with the literal "***", and the MCP server then refused every call.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from agentmodes.server import ServerConfig, create_app

from server_support import make_service

ADMIN = "admin-key-Mk4"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
CRM = {"name": "crm", "url": "https://crm.example/mcp",
       "headers": {"Authorization": "Bearer s3cret-token"}, "env": {}}


@pytest.fixture
def client_and_service(tmp_path):
    service = make_service(tmp_path, settings={"mcp_servers": [CRM],
                                               "tavily_api_key": "tvly-real"})
    with TestClient(create_app(service, ServerConfig(admin_key=ADMIN))) as client:
        yield client, service
    service.close()


def _shown(client) -> dict:
    reply = client.get("/api/chatbots/default", headers=AUTH)
    assert reply.status_code == 200, reply.text
    return reply.json()["settings"]


def test_saving_back_the_masked_settings_keeps_the_real_secrets(client_and_service):
    client, service = client_and_service
    shown = _shown(client)
    assert shown["mcp_servers"][0]["headers"] == {"Authorization": "***"}
    assert "s3cret-token" not in str(shown) and "tvly-real" not in str(shown)

    shown["agent_max_iterations"] = 7                      # the one field the user changed
    shown["mcp_servers"][0]["headers"]["X-Tenant"] = "nord"  # and a header they added
    reply = client.patch("/api/chatbots/default", json={"settings": shown}, headers=AUTH)
    assert reply.status_code == 200, reply.text

    stored = service.get_chatbot("default").settings
    assert stored["agent_max_iterations"] == 7
    assert stored["tavily_api_key"] == "tvly-real"
    assert stored["mcp_servers"][0]["headers"] == {"Authorization": "Bearer s3cret-token",
                                                   "X-Tenant": "nord"}


def test_a_new_value_replaces_the_secret_and_a_removed_header_goes(client_and_service):
    client, service = client_and_service
    shown = _shown(client)
    shown["mcp_servers"][0]["headers"] = {"Authorization": "Bearer rotated"}
    assert client.patch("/api/chatbots/default", json={"settings": shown},
                        headers=AUTH).status_code == 200
    assert service.get_chatbot("default").settings["mcp_servers"][0]["headers"] == \
        {"Authorization": "Bearer rotated"}
    shown["mcp_servers"][0]["headers"] = {}
    assert client.patch("/api/chatbots/default", json={"settings": shown},
                        headers=AUTH).status_code == 200
    assert service.get_chatbot("default").settings["mcp_servers"][0]["headers"] == {}


def test_a_masked_token_is_not_sent_to_a_changed_url(client_and_service):
    client, service = client_and_service
    shown = _shown(client)
    shown["mcp_servers"][0]["url"] = "https://attacker.example/mcp"
    reply = client.patch("/api/chatbots/default", json={"settings": shown}, headers=AUTH)
    assert reply.status_code == 422
    assert "crm.headers.Authorization is masked" in reply.text and "url" in reply.text
    assert "s3cret-token" not in reply.text
    server = service.get_chatbot("default").settings["mcp_servers"][0]
    assert server["url"] == CRM["url"] and server["headers"] == CRM["headers"]
