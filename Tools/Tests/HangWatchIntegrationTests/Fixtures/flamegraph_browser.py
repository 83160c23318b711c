"""Drives a flame graph SVG in headless Chromium (selenium) the way a person would, and prints
what it saw as JSON: the frames, a search, a zoom by click, and the reset.

usage: flamegraph_browser.py FILE.svg SEARCH_TERM FRAME_TO_CLICK HIDDEN_FRAME
"""
import json
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

path, term, target, other = sys.argv[1:5]
options = webdriver.ChromeOptions()
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,800"]:
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.get("file://" + path)

    def frame(name):
        return driver.find_element(By.CSS_SELECTOR, 'g.f[data-name="%s"]' % name)

    def width(name):
        return float(frame(name).find_element(By.TAG_NAME, "rect").get_attribute("width"))

    def shown(name):
        return driver.execute_script("return arguments[0].style.display !== 'none'", frame(name))

    seen = {"frames": len(driver.find_elements(By.CSS_SELECTOR, "g.f"))}
    usable = float(driver.execute_script("return document.documentElement.getAttribute('data-usable')"))
    seen["usable"] = usable
    seen["before"] = {"target": width(target), "other": width(other), "root": width("all")}

    # Search: the Search button asks for a term.
    driver.find_element(By.ID, "search").click()
    WebDriverWait(driver, 5).until(lambda d: d.switch_to.alert)
    alert = driver.switch_to.alert
    alert.send_keys(term)
    alert.accept()
    seen["matches"] = [g.get_attribute("data-name") for g in driver.find_elements(By.CSS_SELECTOR, "g.f.match")]
    seen["matched"] = driver.find_element(By.ID, "matched").text

    # Hover: the details line.
    driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('mouseover'))", frame(target))
    seen["details"] = driver.find_element(By.ID, "details").text

    # Zoom: click the frame.
    frame(target).find_element(By.TAG_NAME, "rect").click()
    seen["zoomed"] = {
        "target": width(target), "otherShown": shown(other), "root": width("all"),
        "rootIsAncestor": "ancestor" in frame("all").get_attribute("class"),
        "reset": driver.find_element(By.ID, "reset").get_attribute("visibility"),
    }
    driver.find_element(By.ID, "reset").click()
    seen["reset"] = {"target": width(target), "other": width(other), "otherShown": shown(other)}
    print(json.dumps(seen))
finally:
    driver.quit()
