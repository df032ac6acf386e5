#!/usr/bin/env bash
# Smoke-test the server image built by deploy/build-images.sh: run it as it runs on Kubernetes (read-only root, /tmp
# a tmpfs, keys from SECTORFLOW_SERVE_KEYS, the image's own user), wait for /v2/health/ready, then call it with
# tritonclient over REST and gRPC and with the native route, and check the user and the read-only root.
#
#   PODMAN="podman --runtime runc" RUN_FLAGS="--ulimit nofile=20000:20000 --ulimit nproc=4096:4096" \
#     bash deploy/smoke-test.sh          # needs .venv with the test extra (tritonclient, httpx)
set -euo pipefail
cd "$(dirname "$0")/.."
PODMAN="${PODMAN:-podman}"
RUN_FLAGS="${RUN_FLAGS:-}"
IMAGE="${IMAGE:-localhost/sectorflow-serve:0.1.0}"
HTTP_PORT="${HTTP_PORT:-18866}"
GRPC_PORT="${GRPC_PORT:-18081}"
SECRET="sf_smoke_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
DIGEST="$(printf '%s' "$SECRET" | sha256sum | cut -d' ' -f1)"
work="$(mktemp -d)"
name="sectorflow-smoke-$$"
trap '$PODMAN rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cat > "$work/serve.toml" <<TOML
serve = ["aml", "customer_service"]
[server]
grpc_listen = "127.0.0.1:$GRPC_PORT"
TOML
chmod 0644 "$work/serve.toml"
# shellcheck disable=SC2086 # RUN_FLAGS holds several flags
$PODMAN run -d --name "$name" $RUN_FLAGS --read-only --tmpfs /tmp --network host \
  -v "$work/serve.toml:/etc/sectorflow/serve.toml:ro" \
  -e SECTORFLOW_SERVE_KEYS="[{\"id\": \"smoke\", \"tenant\": \"bank-1\", \"scopes\": [\"task:*\"], \"sha256\": \"$DIGEST\"}]" \
  "$IMAGE" --port "$HTTP_PORT" >/dev/null
for _ in $(seq 1 180); do
  if .venv/bin/python -c "import httpx, sys; sys.exit(httpx.get('http://127.0.0.1:$HTTP_PORT/v2/health/ready').status_code != 200)" 2>/dev/null; then
    break
  fi
  sleep 1
done
echo "user in the container: $($PODMAN exec "$name" id -u)"
if $PODMAN exec "$name" touch /opt/sectorflow/x 2>/dev/null; then echo "root file system is writable" >&2; exit 1; fi
echo "root file system: read-only"
SECRET="$SECRET" HTTP_PORT="$HTTP_PORT" GRPC_PORT="$GRPC_PORT" .venv/bin/python - <<'PY'
import json, os, httpx, numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

secret, http_port, grpc_port = os.environ["SECRET"], os.environ["HTTP_PORT"], os.environ["GRPC_PORT"]
auth = {"Authorization": f"Bearer {secret}"}
ready = httpx.get(f"http://127.0.0.1:{http_port}/readyz").json()
print("readyz:", ready["tasks"])
rest = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}")
text = httpclient.InferInput("text", [1], "BYTES")
text.set_data_from_numpy(np.array(["I am still waiting on my card?".encode()], dtype=object))
out = [json.loads(e) for e in rest.infer("customer_service", [text], headers=dict(auth)).as_numpy("results")]
print("REST v2 customer_service:", {k: out[0][k] for k in ("language", "intent", "intent_probability")})
item = {"transaction_id": "s1", "timestamp": "2024-03-01T09:15:00+08:00", "sender_account": "C001",
        "receiver_account": "A100", "amount": "49900.00", "currency": "CNY", "channel": "cash_deposit"}
native = httpx.post(f"http://127.0.0.1:{http_port}/v1/tasks/aml", headers=auth, json={"inputs": [item]}, timeout=60)
first = native.json()["outputs"][0]
print("native aml:", native.status_code, {k: first[k] for k in ("transaction_id", "alert", "typologies")})
grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
items = grpcclient.InferInput("items", [1], "BYTES")
items.set_data_from_numpy(np.array([json.dumps({**item, "transaction_id": "s2"}).encode()], dtype=object))
got = [json.loads(e) for e in grpc.infer("aml", [items], headers={"authorization": f"Bearer {secret}"}).as_numpy("results")]
print("gRPC v2 aml (same tenant, after the native call):",
      {k: got[0][k] for k in ("transaction_id", "alert", "typologies")}, "reports:", [r["kind"] for r in got[0]["reports"]])
assert got[0]["typologies"] == ["structuring"]  # the tenant's state spans both protocols: s1 (REST) + s2 (gRPC)
PY
echo "smoke test passed"
