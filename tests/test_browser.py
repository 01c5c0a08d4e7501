"""The built book in a real browser: Debian's headless Chromium driven by Selenium, with no network.

Every HTML page of the book is opened from a local HTTP server; the test
checks that the page loads no script or stylesheet from the network, that
formulas are typeset by the MathJax the site itself serves (MathJax output
elements present, no raw ``\\(`` left), that every image has been decoded
(naturalWidth > 0), that every chapter with figures shows them, that no page
is taller than 15,000 px at 1280 px wide and no element is wider than the text
column (nothing cut, nothing scrolled sideways), and that every internal link
(and its #anchor) resolves. External links are counted, not fetched.
Screenshots are saved under ``_build/screenshots``.
"""

import functools
import http.server
import re
import threading
import urllib.parse
from pathlib import Path

import pytest
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
#: chapters whose text has formulas: each must show typeset math
MATH_PAGES = ("intro", "stability", "ctmc", "bounds", "spark", "partial", "phases")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1600"]


#: the tallest page a reader should scroll through at 1280 px wide (px)
MAX_PAGE_PX = 15_000
#: every element of the text column that is wider than it: its right edge beyond the column's (the outermost
#: such element only), or a box that must scroll sideways to show its content (a code line, a wide table);
#: MathJax's own boxes and folded (invisible) content left out
WIDER_THAN_COLUMN = """
const art = document.querySelector('article'); if (!art) return [];
const right = art.getBoundingClientRect().right + 1;
const out = [];
for (const e of art.querySelectorAll('*')) {
  const r = e.getBoundingClientRect();
  if (r.width === 0 || r.height === 0 || (e.closest('mjx-container') && !e.matches('mjx-container'))) continue;
  const scrolls = e.scrollWidth > e.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const beyond = r.right > right && e.parentElement.getBoundingClientRect().right <= right;
  if (scrolls || beyond) out.push(e.tagName + ' ' + (e.textContent || '').trim().slice(0, 40));
}
return out;
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(built_book):
    result, html = built_book
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield html, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), (
        "Debian's chromium and chromium-driver must be installed (make test installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_no_page_loads_a_script_or_stylesheet_from_the_network(built_book):
    """A reproducible artifact must read the same in ten years with no network: every asset is in the site."""
    result, html = built_book
    assert result.returncode == 0
    remote = []
    for page in html.rglob("*.html"):
        text = page.read_text(errors="replace")
        for tag, attr in (("script", "src"), ("link", "href"), ("img", "src")):
            for m in re.finditer(rf"<{tag}\b[^>]*\b{attr}=[\"']((?:https?:)?//[^\"']+)", text):
                if tag == "link" and not re.search(r'rel=["\'](stylesheet|preload|icon)', m.group(0)):
                    continue
                remote.append(f"{page.relative_to(html)}: {m.group(1)}")
    assert not remote, "remote assets:\n" + "\n".join(sorted(set(remote))[:20])
    assert list(html.rglob("tex-chtml*.js")) or list(html.rglob("tex-mml-chtml*.js")), "MathJax is not in the site"


def _pages(html: Path) -> list[str]:
    skip = ("_static", "_sources", "_images", "_sphinx_design_static")
    return sorted(str(p.relative_to(html)) for p in html.rglob("*.html") if p.relative_to(html).parts[0] not in skip)


@pytest.mark.slow
def test_every_page_loads_with_its_figures_and_links(site, browser):
    html, base = site
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    pages = _pages(html)
    assert "book/intro.html" in pages and "book/reference/api.html" in pages
    broken, external, checked, math_pages, too_long, too_wide = [], set(), 0, 0, [], []
    for page in pages:
        browser.get(base + page)
        # index.html redirects to the first chapter: wait until whatever page it lands on has loaded
        WebDriverWait(browser, 30).until(lambda b: b.execute_script("return document.readyState") == "complete")
        assert "404" not in browser.title
        bad = browser.execute_script(
            "return Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
        assert not bad, f"{page}: images that did not load: {bad}"
        images = browser.execute_script("return document.querySelectorAll('main img, article img').length")
        if page.startswith("book/") and page[5:-5] in ("intro", "stability", "ctmc", "bounds", "spark", "partial",
                                                       "sampling", "phases"):
            assert images > 0, f"{page} shows no figure"
        raw = browser.execute_script(
            "return Array.from(document.querySelectorAll('article p')).filter("
            "p => p.textContent.trim().startsWith('| ')).length")
        assert raw == 0, f"{page}: {raw} Markdown tables left unrendered"
        if browser.execute_script("return typeof MathJax !== 'undefined' && !!MathJax.startup"):
            browser.execute_async_script("const done = arguments[arguments.length - 1]; "
                                         "MathJax.startup.promise.then(() => done(true), () => done(false));")
        typeset = browser.execute_script("return document.querySelectorAll('mjx-container').length")
        text = browser.execute_script("return document.querySelector('article') ? "
                                      "document.querySelector('article').innerText : ''")
        if page.startswith("book/") and page[5:-5] in MATH_PAGES:
            assert typeset > 0, f"{page}: no formula typeset (MathJax did not run)"
            math_pages += 1
        assert "\\(" not in text and "\\)" not in text, f"{page}: raw TeX delimiters left untypeset"
        height = browser.execute_script("return document.documentElement.scrollHeight")
        if height > MAX_PAGE_PX:
            too_long.append(f"{page}: {height:,} px")
        wide = browser.execute_script(WIDER_THAN_COLUMN)
        if wide:
            too_wide.append(f"{page}: {len(wide)} element(s), first {wide[:3]}")
        browser.save_screenshot(str(shots / (page.replace("/", "_")[:-5] + ".png")))
        for href in browser.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"):
            url = urllib.parse.urlsplit(href)
            if url.scheme in ("mailto", "javascript"):
                continue
            if not href.startswith(base):
                external.add(href)
                continue
            target = html / urllib.parse.unquote(url.path[1:])
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if not target.exists():
                broken.append(f"{page} -> {href}")
            elif url.fragment and target.suffix == ".html":
                text = target.read_text(errors="replace")
                if not re.search(rf'id="{re.escape(urllib.parse.unquote(url.fragment))}"', text):
                    broken.append(f"{page} -> {href} (no such anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken[:30])
    assert not too_long, f"pages over {MAX_PAGE_PX:,} px at 1280 px wide:\n" + "\n".join(too_long)
    assert not too_wide, "elements wider than the text column (cut, or scrolled sideways):\n" + "\n".join(too_wide)
    assert checked > 50 and math_pages == len(MATH_PAGES)
    print(f"{len(pages)} pages, {checked} internal links checked, {len(external)} external links not fetched")


@pytest.mark.slow
def test_the_claims_page_is_short_and_its_filter_works(site, browser):
    """The claims page scans at 1280 px: under 15,000 px tall, one line per claim; choosing a verdict shows only
    the claims with it."""
    from selenium.webdriver.support.ui import Select

    html, base = site
    browser.get(base + "book/claims.html")
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return document.readyState") == "complete")
    assert browser.execute_script("return document.documentElement.scrollHeight") < 15_000
    total = browser.execute_script("return document.querySelectorAll('li[data-verdict]').length")
    assert total > 40
    Select(browser.find_element("id", "claims-verdict")).select_by_value("agrees")
    shown = browser.execute_script("return Array.from(document.querySelectorAll('li[data-verdict]'))"
                                   ".filter(li => li.style.display !== 'none').map(li => li.dataset.verdict)")
    assert shown and set(shown) == {"agrees"} and len(shown) < total
