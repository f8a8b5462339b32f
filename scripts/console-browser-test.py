#!/usr/bin/python3
"""The support console in a real browser: Debian's chromium, driven by Selenium through
chromium-driver, headless. Run by Tests/LivelineCLITests/ConsoleBrowserTests.swift against a
`liveline serve` it seeded; exits non-zero, naming the step, when a check fails.

  console-browser-test.py URL ADMIN_KEY APP_KEY APP ACTIVITY REASON OTHER_APP OTHER_ACTIVITY

A person signs in with an app's key, searches for the activity, opens its timeline and reads the
APNs reason of its failed push; content is masked, markup in values shows as text; the app's key
cannot open another app's activity; signing out ends the session. Then the admin reveals the
content: the `<script>` it holds shows as text and never runs. No page logs an error to the
browser's console (the expected 404 of another app's activity aside).
"""
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

base, admin_key, app_key, app, activity, reason, other_app, other_activity = sys.argv[1:9]


def check(condition, step):
    if not condition:
        print(f"FAILED: {step}\n--- page {driver.current_url} ---\n{driver.page_source[:4000]}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {step}")


def check_console(allowed=()):
    errors = [entry["message"] for entry in driver.get_log("browser")
              if entry["level"] == "SEVERE" and not any(text in entry["message"] for text in allowed)]
    check(errors == [], f"no error in the browser's console{' (but the expected 404)' if allowed else ''}: {errors}")


def arrived(path, step):
    """Waits (up to 10 s) until a click's navigation has reached `path` and its page has loaded."""
    try:
        WebDriverWait(driver, 10).until(
            lambda d: d.current_url.split("?")[0].endswith(path)
            and d.execute_script("return document.readyState") == "complete")
    except TimeoutException:
        pass
    check(driver.current_url.split("?")[0].endswith(path), step)


def page_text():
    """The page's text, folded details included, as the browser reads it (entities decoded)."""
    return driver.execute_script("return document.body.textContent")


def sign_in(key):
    driver.get(f"{base}/console")
    check(driver.current_url.endswith("/console/sign-in"), "a page without a session leads to sign-in")
    driver.find_element(By.ID, "key").send_keys(key)
    driver.find_element(By.ID, "sign-in").click()
    arrived("/console" if key == admin_key else f"/console/apps/{app}", "the key opens the console")


def sign_out():
    driver.find_element(By.ID, "sign-out").click()
    arrived("/console/sign-in", "signing out leads back to sign-in")
    driver.get(f"{base}/console/apps/{app}")
    check(driver.current_url.endswith("/console/sign-in"), "after signing out, the pages need a session again")


options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]:
    options.add_argument(argument)
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    sign_in(app_key)
    check(driver.find_element(By.ID, "viewer").text == f"app {app}", "signed in with the app's key")
    search = driver.find_element(By.ID, "search")
    search.send_keys(activity)
    search.submit()
    arrived("/console/search", "the search answers")
    links = driver.find_elements(By.CSS_SELECTOR, "a.activity-link")
    check([link.text for link in links] == [activity], "the search finds the activity")
    links[0].click()
    arrived(f"/console/apps/{app}/activities/{activity}", "the result's link opens")
    check(driver.find_element(By.TAG_NAME, "h1").text == f"Activity {activity}", "its timeline opens")
    reasons = [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "tr.push td.reason")]
    check(reason in reasons, f"a push's APNs reason reads {reason}")
    body = page_text()
    check("<b>" in body, "markup in a value shows as text")
    check("pwned" not in body, "content is masked for an app's key")
    check(not driver.find_elements(By.ID, "reveal"), "an app's key is not offered the reveal")
    check_console()

    driver.get(f"{base}/console/apps/{other_app}/activities/{other_activity}")
    check("Nothing here" in driver.find_element(By.ID, "message").text, "another app's activity is not found")
    check_console(allowed=["404"])
    sign_out()

    sign_in(admin_key)
    check(driver.find_element(By.ID, "viewer").text == "admin", "signed in with the admin key")
    driver.get(f"{base}/console/apps/{app}/activities/{activity}")
    driver.find_element(By.ID, "reveal").click()
    arrived(f"/console/apps/{app}/activities/{activity}/reveal", "the reveal answers")
    check(driver.find_elements(By.ID, "revealed"), "the admin revealed the content")
    body = page_text()
    check("<script>window.pwned=1</script>" in body, "the content's <script> shows as text")
    check('\\"quoted\\"' in body and "'single'" in body, "quotes show as text")
    check(driver.execute_script("return window.pwned === undefined"), "the content's script never ran")
    check_console()
    sign_out()
finally:
    driver.quit()
print("the console passed in chromium")
