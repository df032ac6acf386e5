"""Server configuration: file formats, keys from the environment, refusals that say what to fix."""

from __future__ import annotations

import json

import pytest
from sectorflow import ConfigError, UnknownTaskError
from sectorflow.serving import create_app, generate_key, hash_key, load_config


def _key(key_id: str, secret: str = "s", **extra) -> dict:
    return {"id": key_id, "sha256": hash_key(secret), **extra}


def test_toml_file_and_environment_keys(tmp_path):
    path = tmp_path / "serve.toml"
    path.write_text('[defaults]\nmax_batch_size = 8\n\n[tasks.echo]\nmax_queue_delay_ms = 0\n'
                    'interactive = { max_queue_items = 3 }\n\n'
                    f'[[keys]]\nid = "file-key"\nsha256 = "{hash_key("a")}"\nscopes = ["task:*"]\n', encoding="utf-8")
    env = {"SECTORFLOW_SERVE_KEYS": json.dumps([_key("env-key", "b", rate_limit="10 per minute", lane="batch")])}
    config = load_config(path, environ=env)
    assert [k.id for k in config.keys] == ["file-key", "env-key"]
    assert config.keys[1].lane == "batch" and config.keys[1].rate_limit == "10 per minute"
    echo = config.task("echo")
    assert (echo.max_batch_size, echo.max_queue_delay_ms, echo.interactive.max_queue_items) == (8, 0, 3)
    assert config.task("other").max_queue_delay_ms == 5.0  # defaults apply to tasks without a section


def test_json_file(tmp_path):
    path = tmp_path / "serve.json"
    path.write_text(json.dumps({"server": {"threads": 3}, "keys": [_key("k")]}), encoding="utf-8")
    assert load_config(path, environ={}).server.threads == 3


@pytest.mark.parametrize("data, words", [
    ({"keys": [_key("a", "x"), _key("a", "y")]}, "same id"),
    ({"keys": [_key("a", "x"), _key("b", "x")]}, "same sha256"),
    ({"keys": [{"id": "a", "sha256": "plain-secret"}]}, "keys.0.sha256"),
    ({"keys": [_key("a", rate_limit="lots")]}, "keys.0.rate_limit"),
    ({"keys": [_key("a", lane="vip")]}, "keys.0.lane"),
    ({"server": {"max_body_bytes": 10}}, "server.max_body_bytes"),
    ({"serverr": {}}, "serverr"),
    ({"tasks": {"echo": {"max_batch_size": 0}}}, "[tasks.echo]"),
    ({"tasks": {"echo": {"colour": "red"}}}, "colour"),
    ({"keys": [_key("a", scopes=["task:echo", "superuser"])]}, "unknown scope(s) ['superuser']: a scope is task:NAME"),
    ({"keys": [_key("a", scopes=["task:"])]}, "unknown scope(s) ['task:']"),
    ({"keys": [_key("a", scopes=["role:", "role:Analyst", "role:a b"])]},
     "unknown scope(s) ['role:', 'role:Analyst', 'role:a b']"),
    ({"web": {"aml": "on"}}, "web.aml"),
])
def test_bad_configuration_is_refused_with_the_field(data, words):
    with pytest.raises(ConfigError) as info:
        load_config(data=data, environ={})
    assert words in str(info.value)


def test_environment_keys_must_be_a_json_list():
    with pytest.raises(ConfigError, match="SECTORFLOW_SERVE_KEYS"):
        load_config(environ={"SECTORFLOW_SERVE_KEYS": "{not json"})
    with pytest.raises(ConfigError, match="JSON list"):
        load_config(environ={"SECTORFLOW_SERVE_KEYS": "{}"})


def test_app_refuses_unknown_tasks(tasks):
    with pytest.raises(UnknownTaskError, match="Known tasks: echo, ledger, score"):
        create_app(load_config(data={"serve": ["nope"]}, environ={}))
    with pytest.raises(ConfigError, match="not served"):
        create_app(load_config(data={"serve": ["echo"], "tasks": {"score": {}}}, environ={}))


def test_generated_keys_are_random_and_hash_to_hex():
    a, b = generate_key(), generate_key()
    assert a != b and a.startswith("sf_") and len(a) == 46
    assert len(hash_key(a)) == 64 and int(hash_key(a), 16) >= 0


def test_key_store_remembers_matched_secrets_only_and_a_bounded_number(monkeypatch):
    """A matched secret skips the SHA-256 next time; an unknown one is hashed every time and never remembered;
    at most ``cache_size`` secrets are remembered, the oldest forgotten first."""
    from sectorflow.serving import auth

    config = load_config(data={"keys": [_key("a", "sa", scopes=["task:*"]), _key("b", "sb"), _key("c", "sc")]},
                         environ={})
    store = auth.KeyStore(config.keys, cache_size=2)
    hashed: list[str] = []
    real_hash = auth.hash_key
    monkeypatch.setattr(auth, "hash_key", lambda secret: hashed.append(secret) or real_hash(secret))
    first = store.authenticate("sa")
    assert first is not None and first.id == "a" and first.allows("task:echo")
    assert store.authenticate("sa") is first and hashed == ["sa"]
    assert store.authenticate("wrong") is None and store.authenticate("wrong") is None
    assert hashed == ["sa", "wrong", "wrong"]
    assert [store.authenticate(s).id for s in ("sb", "sc")] == ["b", "c"]  # "sa", the oldest, is forgotten
    hashed.clear()
    assert [store.authenticate(s).id for s in ("sc", "sb", "sa")] == ["c", "b", "a"]
    assert hashed == ["sa"]
    assert store.authenticate("") is None and store.authenticate(None) is None


def test_a_task_scope_must_name_a_registered_task(tasks):
    """Fresh-user finding: a key with scope 'task:amll' (a typo) was accepted, and refused 403 on every call."""
    with pytest.raises(ConfigError, match="API key 'a' has scope 'task:ech', but no task is called 'ech'. Did you "
                                          "mean 'task:echo'\\? Tasks: echo, ledger, score."):
        create_app(load_config(data={"keys": [_key("a", scopes=["task:ech"])]}, environ={}))
    # a task this server does not serve, an alias and task:* are fine (one key file may serve several servers)
    create_app(load_config(data={"serve": ["echo"], "keys": [_key("a", scopes=["task:score", "task:shout",
                                                                                "task:*", "admin"])]}, environ={}))


def test_web_roles_and_sections_are_accepted():
    """A web page's roles are key scopes role:NAME; its settings live in [web.NAME] (sectorflow_register_web)."""
    config = load_config(data={"keys": [_key("a", scopes=["role:analyst", "role:approver", "audit"])],
                               "web": {"aml": {"sources": []}}}, environ={})
    assert config.keys[0].scopes == ["role:analyst", "role:approver", "audit"]
    assert config.web == {"aml": {"sources": []}}
