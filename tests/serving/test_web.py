"""The core's web hook: sectorflow_register_web gets the app and a WebHost (keys, access record, [web.NAME]); an app
of web pages alone needs a plugin that adds one."""

from __future__ import annotations

import logging

import pytest

from sectorflow import ConfigError
from sectorflow.serving import WebHost, hash_key, load_config, web_app


def _config(**extra):
    return load_config(data={"keys": [{"id": "ana", "sha256": hash_key("s-ana"), "tenant": "bank-1",
                                       "scopes": ["role:analyst"]}], **extra}, environ={})


def test_web_app_without_pages_is_a_config_error():
    with pytest.raises(ConfigError, match="No installed plugin adds web pages"):
        web_app(_config())  # the aml plugin mounts its workbench only with [web.aml]


def test_the_host_authenticates_with_the_servers_keys_and_records_access(caplog):
    host = WebHost(_config(web={"demo": {"colour": "red"}}))
    user = host.authenticate("s-ana")
    assert (user.id, user.tenant, user.has("role:analyst"), user.has("role:approver")) == (
        "ana", "bank-1", True, False)
    assert host.authenticate("s-wrong") is None and host.authenticate(None) is None
    assert host.settings("demo") == {"colour": "red"} and host.settings("other") == {}
    assert host.state_store is None
    with caplog.at_level(logging.INFO, logger="sectorflow.serving.access"):
        host.record_access(actor=None, tenant=None, resource="demo", action="POST /demo/login", allowed=False,
                           reason="unknown API key", source="127.0.0.1", request_id="r1")
    assert "deny actor=None scope=demo source=127.0.0.1 request=r1 unknown API key" in caplog.text
