"""How fast does the AML workbench answer? A queue of 10,000 cases and a case of 200 transactions.

Builds a synthetic tenant (``--cases`` cases in one month, one of them with ``--case-txns`` transactions; results
lines in the shape ``sectorflow run aml`` writes, and their input as CSV), starts ``sectorflow workbench`` on a real
uvicorn server, signs in and measures:

- the first page (the tenant's results and transactions read into memory, once per server process; ``preload =
  false``, so that it is timed here rather than in the background at start);
- ``GET /ui/?period=...`` with every case listed (server time to the last byte, ``--reps`` times: median, max);
- the same with a filter (one typology) and a sort (amount, low first);
- ``GET /ui/cases/ID`` of the large case (median, max);
- with ``--browser`` (Debian chromium and chromium-driver): headless Chromium's navigation timing of the queue
  (``loadEventEnd`` from ``navigationStart``) and of the case page until the fund-flow graph has drawn every account.

Targets (issue 25): 10,000 cases load in <= 1 s; a 200-transaction case renders in <= 1 s.

Usage::

    .venv/bin/python benchmarks/aml_workbench.py [--cases 10000] [--case-txns 200] [--reps 5] [--browser]

Prints the machine line (CPU, cores, load average) first.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from http.cookiejar import CookieJar
from pathlib import Path

from sectorflow.serving import hash_key
from sectorflow_aml.cases import case_id

BIN = Path(sys.executable).parent
TYPOLOGIES = ("fan_in", "fan_out", "cycle", "scatter_gather", "model_risk")


def machine() -> str:
    load = os.getloadavg()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"machine: {cpu}, {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"


def build(folder: Path, n_cases: int, big: int) -> tuple[Path, Path, str]:
    """Results and transactions of ``n_cases`` cases in 2024-03; case 0 has ``big`` transactions (a fan-in: ``big``
    senders to one account), the others two each. Returns (results, transactions, the big case's id)."""
    start = datetime(2024, 3, 1, tzinfo=timezone.utc)
    results, txns = folder / "results.jsonl.gz", folder / "transactions.csv.gz"
    with gzip.open(results, "wt", encoding="utf-8") as res, gzip.open(txns, "wt", encoding="utf-8") as tx:
        tx.write("transaction_id,timestamp,sender_account,receiver_account,amount,currency,channel\n")
        n = 0
        for i in range(n_cases):
            account = f"A{i:06d}"
            count = big if i == 0 else 2
            tids = []
            for j in range(count):
                n += 1
                tid = f"t{n}"
                when = start + timedelta(minutes=7 * n % (28 * 24 * 60))
                tx.write(f"{tid},{when.isoformat()},S{i:06d}-{j},{account},{1000 + (n * 37) % 9000}.00,CNY,transfer\n")
                tids.append(tid)
            score = round(1.0 - i / (n_cases + 1), 6)
            update = {"case_id": case_id(account, "2024-03"), "account": account, "period": "2024-03",
                      "score": score, "model_score": score, "evidence_score": 0.0,
                      "typologies": [TYPOLOGIES[i % len(TYPOLOGIES)]], "mandatory": False, "rank": i + 1,
                      "active_accounts": n_cases * 3, "budget": "share:0.01", "within_budget": i < n_cases * 3 // 100,
                      "transactions": count, "amount_in": 2000.0 * count, "amount_out": 0.0,
                      "transaction_ids": tids, "alert_ids": [], "counterparties": [f"S{i:06d}-0"],
                      "updated_at": start.isoformat()}
            res.write(json.dumps({"transaction_id": tids[-1], "risk_score": score, "alert": False,
                                  "cases": [update]}) + "\n")
    return results, txns, case_id("A000000", "2024-03")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(opener: urllib.request.OpenerDirector, url: str) -> tuple[float, bytes]:
    t = time.perf_counter()
    with opener.open(url, timeout=120) as r:
        body = r.read()
    return time.perf_counter() - t, body


def summary(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms (n={len(times)})"


def browser_times(base: str, case: str) -> tuple[float, float, int]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "chromium"
    d = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        d.get(f"{base}/ui/login")
        d.find_element("id", "key").send_keys("secret-bench")
        d.find_element("id", "signin").click()
        d.get(f"{base}/ui/?period=2024-03")
        queue = d.execute_script("const t = performance.timing; return t.loadEventEnd - t.navigationStart;") / 1000
        d.get(f"{base}/ui/cases/{case}")
        want = d.execute_script("return JSON.parse(document.getElementById('graph-data').textContent).nodes.length")
        while d.execute_script("return window.wbGraph ? window.wbGraph.nodes().length : 0") < want:
            time.sleep(0.01)
        graph = d.execute_script("return performance.now()") / 1000  # since this page's navigation started
        return queue, graph, want
    finally:
        d.quit()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--case-txns", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--browser", action="store_true")
    args = ap.parse_args()
    print(machine())
    tmp = Path(tempfile.mkdtemp(prefix="sf-wb-bench-"))
    env = {**os.environ, "SECTORFLOW_HOME": str(tmp / "home")}
    try:
        results, txns, big = build(tmp, args.cases, args.case_txns)
        cfg = tmp / "serve.toml"
        cfg.write_text(f'[web.aml]\nstate_store = "{tmp / "state.sqlite"}"\npreload = false\n'  # timed below
                       f'[[web.aml.sources]]\ntenant = "b"\n'
                       f'results = "{results}"\ntransactions = "{txns}"\nformat = "csv"\n\n[[keys]]\nid = "bench"\n'
                       f'sha256 = "{hash_key("secret-bench")}"\ntenant = "b"\nscopes = ["role:analyst"]\n',
                       encoding="utf-8")
        port = free_port()
        proc = subprocess.Popen([str(BIN / "sectorflow"), "workbench", "--config", str(cfg), "--port", str(port)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(f"{base}/healthz", timeout=2)
                    break
                except OSError:
                    time.sleep(0.1)
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
            form = opener.open(f"{base}/ui/login").read()  # its CSRF token (and cookie)
            token = re.search(rb'name="csrf" value="([^"]+)"', form).group(1).decode()
            t = time.perf_counter()  # sign-in, then its redirect to the queue: the tenant's data is read
            opener.open(f"{base}/ui/login", data=urllib.parse.urlencode({"key": "secret-bench", "csrf": token}
                                                                        ).encode()).read()
            first = time.perf_counter() - t
            print(f"sign-in and first queue (reads {args.cases:,} cases and their transactions into memory): "
                  f"{first:.2f} s")
            queue = [timed(opener, f"{base}/ui/?period=2024-03") for _ in range(args.reps)]
            total = re.search(rb'id="count">([0-9]+) cases', queue[0][1]).group(1).decode()
            rows = len(re.findall(rb'data-case="', queue[0][1]))
            print(f"queue of {int(total):,} cases, ranked, first page of {rows} ({len(queue[0][1]) / 1e3:.0f} kB): "
                  f"{summary([t for t, _ in queue])}")
            last = [timed(opener, f"{base}/ui/?period=2024-03&sort=score&order=asc&per_page=1000")
                    for _ in range(args.reps)]
            print(f"queue of {int(total):,} cases, lowest score first, 1,000 rows a page: "
                  f"{summary([t for t, _ in last])}")
            filtered = [timed(opener, f"{base}/ui/?period=2024-03&typology=cycle&sort=amount&order=asc")
                        for _ in range(args.reps)]
            rows_f = len(re.findall(rb'data-case="', filtered[0][1]))
            print(f"queue, typology cycle sorted by amount ({rows_f:,} cases): {summary([t for t, _ in filtered])}")
            case = [timed(opener, f"{base}/ui/cases/{big}") for _ in range(args.reps)]
            n_tx = case[0][1].count(b"<tr><td>2024")
            print(f"case page, {n_tx} transactions: {summary([t for t, _ in case])}")
            if args.browser:
                q, g, nodes = browser_times(base, big)
                print(f"browser (headless Chromium): queue loaded {q:.2f} s; case page until the graph drew its "
                      f"{nodes} accounts {g:.2f} s")
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
