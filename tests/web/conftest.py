"""Headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven by selenium.

``make test`` installs both (``make browser``). Without them the browser tests skip, except
under CI (``CI=true``), where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import missing

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture
def browser(tmp_path):
    absent = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if absent:
        missing(f"no {' or '.join(absent)}: `make browser` installs chromium")
    os.environ["SE_OFFLINE"] = "true"  # selenium never downloads a driver or a browser
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1200,1000",
    ):
        options.add_argument(flag)
    service = Service(executable_path=CHROMEDRIVER, log_output=str(tmp_path / "driver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
