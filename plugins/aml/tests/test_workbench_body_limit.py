"""The workbench served alone (``web_app``) keeps the server's body limit: an oversized sign-in is a 413 naming
``max_body_bytes``, a small one reaches the page. Here, not in tests/serving: that folder's package fixture limits
the loaded plugins to its test tasks, and this needs the aml plugin's web hook."""

from __future__ import annotations

from sectorflow.serving import hash_key, load_config, web_app


def _config(**extra):
    return load_config(data={"keys": [{"id": "ana", "sha256": hash_key("s-ana"), "tenant": "bank-1",
                                       "scopes": ["role:analyst"]}], **extra}, environ={})


def test_the_pages_alone_refuse_an_oversized_body(tmp_path):
    from fastapi.testclient import TestClient

    results = tmp_path / "r.jsonl"
    results.write_text("", encoding="utf-8")
    txns = tmp_path / "t.csv"
    txns.write_text("transaction_id,timestamp,sender_account,receiver_account,amount\n", encoding="utf-8")
    cfg = _config(server={"max_body_bytes": 2048}, web={"aml": {"state_store": str(tmp_path / "s.sqlite"), "sources": [
        {"tenant": "bank-1", "results": str(results), "transactions": str(txns), "format": "csv"}]}})
    client = TestClient(web_app(cfg))
    big = client.post("/ui/login", data={"key": "x" * 4096})
    assert big.status_code == 413 and "max_body_bytes" in big.json()["message"]
    assert client.post("/ui/login", data={"key": "x"}).status_code == 403  # small: reaches the page (no CSRF token)
