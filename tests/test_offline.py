"""Offline: with sockets blocked, every registered task (every installed plugin, plus the echo test plugin) loads
and runs on its own examples.

Connections to this machine itself (loopback addresses, Unix sockets) stay allowed: a user may point the audit log
at a local PostgreSQL, and that is not the network. Everything else, name lookups included, raises.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest

from core_support import echo_plugin
from sectorflow import Taskflow, plugins


class NetworkBlocked(OSError):
    pass


def _local(address) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture
def no_network(monkeypatch):
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo, real_create_connection = socket.getaddrinfo, socket.create_connection

    def guard(address):
        if not _local(address):
            raise NetworkBlocked(f"test blocked a network connection to {address!r}")

    def connect(self, address):
        guard(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        guard(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        guard((host.decode() if isinstance(host, bytes) else host, 0))
        return real_getaddrinfo(host, *args, **kwargs)

    def create_connection(address, *args, **kwargs):
        guard(address)
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)


def test_the_block_is_in_force(no_network):
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("192.0.2.1", 443), timeout=1)
    with pytest.raises(NetworkBlocked):
        socket.getaddrinfo("pypi.org", 443)
    with socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect(("2001:db8::1", 80))


def test_every_registered_task_runs_its_examples_offline(no_network, registry):
    registry({"echo": echo_plugin()}, installed=True)
    names = [row["task"] for row in Taskflow.tasks()]
    assert {"echo", "echo_counter"} <= set(names)
    for name in names:
        spec = plugins.get_task(name)
        assert spec.examples, f"task {name!r} (plugin {spec.plugin!r}) has no examples in its TaskSpec"
        results = Taskflow(name)(list(spec.examples))
        assert len(results) == len(spec.examples), name
        for result in results:
            assert isinstance(result, spec.output_model), name
            assert result.meta.task == name and result.meta.plugin == spec.plugin
            result.model_dump_json()
