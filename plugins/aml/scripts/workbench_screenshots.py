"""Screenshots of every workbench page for docs/workbench.md (docs/images/workbench-*.png).

Runs the committed AMLSim slice (``samples/aml``) through ``sectorflow run aml``, starts ``sectorflow workbench`` on a
free port with three users (analyst ``ana``, approver ``appr``, audit admin ``aud`` of tenant ``bank-1``), and drives
headless Chromium (Debian ``chromium`` and ``chromium-driver``; selenium from the test extra): sign-in, the queue of
2017-02, the top case (after an analyst escalated it), the approver's view of it, the report drafts and the audit
page (the analyst closed the third case as a false positive and took the second). Everything runs in a temporary folder (its own ``SECTORFLOW_HOME``); only the PNG files are written to
``--out``.

Usage::

    .venv/bin/python plugins/aml/scripts/workbench_screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from sectorflow.serving import hash_key
from sectorflow_aml.cases import read_cases

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"
BIN = Path(sys.executable).parent
USERS = {"ana": '["role:analyst"]', "appr": '["role:approver"]', "aud": '["audit"]'}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    args = ap.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    tmp = Path(tempfile.mkdtemp(prefix="sf-wb-shots-"))
    env = {**os.environ, "SECTORFLOW_HOME": str(tmp / "home")}
    proc = None
    driver = None
    try:
        results = tmp / "results.jsonl"
        subprocess.run([str(BIN / "sectorflow"), "run", "aml", str(SAMPLE), "--format", "amlsim", "--output",
                        str(results)], check=True, env=env, capture_output=True)
        keys = "".join(f'[[keys]]\nid = "{u}"\nsha256 = "{hash_key("secret-" + u)}"\ntenant = "bank-1"\n'
                       f"scopes = {s}\n" for u, s in USERS.items())
        cfg = tmp / "serve.toml"
        cfg.write_text(f'[web.aml]\nstate_store = "{tmp / "state.sqlite"}"\n[[web.aml.sources]]\ntenant = "bank-1"\n'
                       f'results = "{results}"\ntransactions = "{SAMPLE}"\nformat = "amlsim"\n\n{keys}',
                       encoding="utf-8")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen([str(BIN / "sectorflow"), "workbench", "--config", str(cfg), "--port", str(port)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        options = webdriver.ChromeOptions()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1400,1100", "--hide-scrollbars"):
            options.add_argument(arg)
        options.binary_location = shutil.which("chromium") or "chromium"
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        driver.implicitly_wait(5)
        args.out.mkdir(parents=True, exist_ok=True)

        def shot(name: str) -> None:
            path = args.out / f"workbench-{name}.png"
            driver.save_screenshot(str(path))
            print(path)

        def sign_in(user: str, picture: str | None = None) -> None:
            driver.delete_all_cookies()
            driver.get(f"{base}/ui/login")
            driver.find_element("id", "key").send_keys(f"secret-{user}")
            if picture:
                shot(picture)
            submit("signin")

        def submit(button_id: str) -> None:  # click, then wait for the POST's redirect to land
            from selenium.webdriver.support import expected_conditions
            from selenium.webdriver.support.ui import WebDriverWait

            page = driver.find_element("tag name", "html")
            driver.find_element("id", button_id).click()
            WebDriverWait(driver, 15).until(expected_conditions.staleness_of(page))

        def graph_drawn() -> None:
            for _ in range(100):
                if driver.execute_script("return window.wbGraph ? window.wbGraph.nodes().length : 0"):
                    break
                time.sleep(0.1)
            time.sleep(0.3)

        ranked = sorted((c for c in read_cases(results, everything=True) if c.period == "2017-02"),
                        key=lambda c: c.rank)
        top = ranked[0]
        sign_in("ana", "login")
        driver.get(f"{base}/ui/cases/{ranked[2].case_id}")
        driver.find_element("id", "reason").send_keys("Payments to a known supplier, invoices on file")
        submit("do-fp")
        driver.get(f"{base}/ui/cases/{ranked[1].case_id}")
        submit("do-assign")
        driver.get(f"{base}/ui/cases/{top.case_id}")
        graph_drawn()
        driver.find_element("id", "reason").send_keys("Equal transfers in and out of the account within days; model score 0.99")
        submit("do-escalate")
        graph_drawn()
        shot("case")
        driver.get(f"{base}/ui/?period=2017-02")
        shot("queue")
        sign_in("appr")
        driver.get(f"{base}/ui/cases/{top.case_id}")
        graph_drawn()
        shot("case-approver")
        submit("do-approve")
        driver.get(f"{base}/ui/reports")
        shot("reports")
        sign_in("aud")
        driver.get(f"{base}/ui/audit?case={top.case_id}")
        shot("audit")
    finally:
        if driver is not None:
            driver.quit()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
