"""The AML workbench driven like a browser: headless Chromium (Debian's chromium and chromium-driver, installed by
.ci/run) through selenium, against `sectorflow workbench` on a real uvicorn server, on the AMLSim slice run with
`sectorflow run aml`. Skips when chromium or chromedriver is missing."""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sectorflow.serving import hash_key
from sectorflow_aml.cases import read_cases

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"
BIN = Path(sys.executable).parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs chromium and chromium-driver (apt-get)")
USERS = {"ana": ["role:analyst"], "appr": ["role:approver"], "aud": ["audit"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(path: Path, results: Path, state: Path) -> None:
    keys = "".join(f'[[keys]]\nid = "{u}"\nsha256 = "{hash_key("secret-" + u)}"\ntenant = "bank-1"\n'
                   f'scopes = {scopes!r}\n'.replace("'", '"') for u, scopes in USERS.items())
    path.write_text(f'[web.aml]\nstate_store = "{state}"\n[[web.aml.sources]]\ntenant = "bank-1"\n'
                    f'results = "{results}"\ntransactions = "{SAMPLE}"\nformat = "amlsim"\n\n{keys}', encoding="utf-8")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wb-e2e")
    env = {**os.environ, "SECTORFLOW_HOME": str(tmp / "home")}
    results, state, cfg = tmp / "results.jsonl", tmp / "state.sqlite", tmp / "serve.toml"
    subprocess.run([str(BIN / "sectorflow"), "run", "aml", str(SAMPLE), "--format", "amlsim", "--output",
                    str(results)], check=True, env=env, capture_output=True, timeout=300)
    write_config(cfg, results, state)
    port = free_port()
    proc = subprocess.Popen([str(BIN / "sectorflow"), "workbench", "--config", str(cfg), "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(proc.stdout.read().decode(errors="replace")) from None
            time.sleep(0.3)
    yield {"base": base, "results": results, "state": state, "env": env}
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


def sign_in(driver, base: str, user: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{base}/ui/login")
    driver.find_element("id", "key").send_keys(f"secret-{user}")
    submit(driver, "signin")
    assert user in driver.find_element("id", "who").text


def submit(driver, button_id: str) -> None:
    """Click a form's button and wait for the next page (a click returns before the POST's redirect lands)."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    WebDriverWait(driver, 15).until(lambda d: d.execute_script("return document.readyState") == "complete")
    for attempt in range(3):  # a node replaced while the page's script still runs: find it again
        try:
            page = driver.find_element("tag name", "html")
            driver.find_element("id", button_id).click()
            break
        except WebDriverException as exc:
            if attempt == 2 or not (isinstance(exc, StaleElementReferenceException)
                                    or "does not belong to the document" in str(exc)):
                raise
            time.sleep(0.5)
    WebDriverWait(driver, 15).until(expected_conditions.staleness_of(page))


def wait_for(condition, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_review_close_escalate_approve_audit_and_export(server, browser):
    from selenium.common.exceptions import NoAlertPresentException

    base = server["base"]
    cases = [c for c in read_cases(server["results"], everything=True) if c.period == "2017-02"]
    first, second = sorted(cases, key=lambda c: c.rank)[:2]

    sign_in(browser, base, "ana")
    browser.get(f"{base}/ui/?period=2017-02")
    rows = browser.find_elements("css selector", "#queue tbody tr")
    assert len(rows) == len(cases) and rows[0].get_attribute("data-case") == first.case_id
    rows[0].find_element("tag name", "a").click()
    assert browser.find_element("id", "case-id").text == first.case_id
    drawn = wait_for(lambda: browser.execute_script("return window.wbGraph && window.wbGraph.nodes().map(n => n.id())"))
    assert first.account in drawn and len(drawn) >= 2  # the case's account and its counterparties are drawn
    graph_accounts = browser.execute_script(
        "return JSON.parse(document.getElementById('graph-data').textContent).nodes.map(n => n.id)")
    assert sorted(drawn) == sorted(graph_accounts)
    assert browser.execute_script("return document.querySelector('#graph canvas') !== null")
    assert len(browser.find_elements("css selector", "#timeline line")) == len(first.transaction_ids[:400])
    other = next(a for a in drawn if a != first.account)  # expand a counterparty: its other transfers join the graph
    added = browser.execute_async_script(
        "const done = arguments[1]; fetch(document.getElementById('graph').dataset.expand + '?account=' + "
        "encodeURIComponent(arguments[0])).then(r => r.json()).then(p => done(p.edges.map(e => 't:' + e.id)));", other)
    browser.execute_script("window.wbGraph.getElementById(arguments[0]).emit('dbltap')", other)
    assert wait_for(lambda: set(added) <= set(browser.execute_script("return window.wbGraph.edges().map(e => e.id())")))

    browser.find_element("id", "reason").send_keys("<script>alert('x')</script> regular payroll")
    submit(browser, "do-fp")
    assert browser.find_element("id", "case-status").text == "closed false positive"
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # the reason's <script> did not run
    assert "<script>alert('x')</script> regular payroll" in browser.find_element("id", "history").text

    browser.get(f"{base}/ui/cases/{second.case_id}")
    browser.find_element("id", "reason").send_keys("funds in and out the same day")
    submit(browser, "do-escalate")
    assert browser.find_element("id", "case-status").text == "escalated"
    assert not browser.find_elements("id", "do-approve")  # the analyst holds no approver role

    sign_in(browser, base, "appr")
    browser.get(f"{base}/ui/cases/{second.case_id}")
    submit(browser, "do-approve")
    assert browser.find_element("id", "case-status").text == "str approved"
    browser.get(f"{base}/ui/reports")
    assert f"str-{second.case_id}" in browser.find_element("id", "str-drafts").text

    sign_in(browser, base, "aud")
    browser.get(f"{base}/ui/audit")
    assert browser.find_element("id", "verify").text.startswith("Verify: intact")
    records = browser.find_element("id", "records").text
    for case, actor, disposition in ((first, "ana", "closed_false_positive"), (second, "ana", "escalated"),
                                     (second, "appr", "reported")):
        assert any(case.case_id in line and actor in line and disposition in line for line in records.splitlines())
    assert f"GET /ui/cases/{first.case_id}" in records  # the view, by ana

    out = Path(server["state"]).with_name("labels.csv")
    subprocess.run([str(BIN / "sectorflow"), "aml", "dispositions", "export", "--out", str(out), "--tenant", "bank-1",
                    "--state", str(server["state"])], check=True, env=server["env"], capture_output=True, timeout=120)
    with out.open(newline="", encoding="utf-8") as handle:
        assert handle.readline().rstrip("\n") == "case_id,account_id,period,disposition,reason,decided_by,decided_at"
        handle.seek(0)
        got = {r["case_id"]: r for r in csv.DictReader(handle)}
    assert {k: (v["account_id"], v["disposition"], v["decided_by"]) for k, v in got.items()} == {
        first.case_id: (first.account, "false_positive", "ana"), second.case_id: (second.account, "str_approved", "appr")}
    assert got[first.case_id]["reason"] == "<script>alert('x')</script> regular payroll"
    from sectorflow_aml.labels import read_labels  # the file `sectorflow aml train --labels` takes

    assert read_labels(out).label == {first.account: 0, second.account: 1}
