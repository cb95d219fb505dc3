#!/usr/bin/python3
"""Tests of the interactive viewer (`ringsim-plot html`) in a real browser:
Debian's chromium, driven headless through chromium-driver and
python3-selenium (scripts/deps.sh's RINGSIM_TEST_PACKAGES). Without them
every case fails and says what is missing.

    test_viewer.py RINGSIM EXAMPLES_DIR TOOLS_DIR [Viewer.test_name ...]

The traces are made by the built ringsim; what the page shows is read from
its DOM and compared with SQL over the trace's transfer table.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import helpers

RINGSIM = EXAMPLES = TOOLS = TOOL = None
# How soon a 100,000-transfer run opens (docs/tools.md: a few seconds) is
# a benchmark, bench/viewer_open.py, not a test: a shared machine can
# stall the browser for seconds.


def browser_parts():
    """(selenium module, chromium, chromedriver), or an error naming what
    is missing and how to install it."""
    missing = []
    try:
        import selenium.webdriver  # noqa: F401
    except ImportError:
        missing.append("python3-selenium")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        missing.append("chromium")
    driver = shutil.which("chromedriver") or (
        "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    if not driver:
        missing.append("chromium-driver")
    if missing:
        raise RuntimeError(f"the viewer tests need a real browser: {', '.join(missing)} not "
                           f"installed (apt-get install -y {' '.join(missing)}; scripts/test "
                           f"does, through scripts/deps.sh)")
    import selenium
    return selenium, chromium, driver


def parse_held(label, W):
    """A cell's label as a set: 'all', '{}', '{3}', '{0-2}', '{14-1}',
    '{1,3}' (--explain's notation: braces, or all)."""
    if label == "all":
        return set(range(W))
    assert label.startswith("{") and label.endswith("}"), label
    held = set()
    for part in filter(None, label[1:-1].split(",")):
        a, _, b = part.partition("-")
        a = int(a)
        n = (int(b) - a) % W + 1 if b else 1
        held |= {(a + k) % W for k in range(n)}
    return held


def contributors(first, count, W):
    return {(first + k) % W for k in range(count)}


def explain_tables(text, W):
    """The contribution tables `ringsim --explain` prints after each step,
    each as rows[worker][column] of its labels."""
    tables, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("           ") and i + 1 < len(lines) and \
                lines[i + 1].startswith("  worker 0  "):
            tables.append([lines[i + 1 + w].split()[2:] for w in range(W)])
    return tables


def assert_not_blank(test, path, min_w=800, min_h=500):
    """The screenshot is a real picture: big enough, many colours, and not
    one colour over nearly all of it."""
    from PIL import Image
    with Image.open(path) as im:
        w, h = im.size
        test.assertGreaterEqual(w, min_w, path)
        test.assertGreaterEqual(h, min_h, path)
        small = im.convert("RGB").resize((200, 150))
        colours = small.getcolors(200 * 150)
    test.assertGreater(len(colours), 30, f"{path}: {len(colours)} colours, a blank page")
    test.assertLess(max(n for n, _ in colours), 0.9 * 200 * 150, f"{path}: one colour all over")


# One browser for every case the process runs (CTest runs one a process),
# with its profile in a directory of its own. It starts, and opens a first
# page (the renderer's start), in a thread while the class makes its traces;
# not at all when the cases asked for (SELECTED, the command line's; none:
# all) open no page (NO_PAGE). tearDownModule quits it.
BROWSER = {"driver": None, "profile": None, "thread": None, "error": None}
SELECTED = []


def tearDownModule():
    if BROWSER["thread"] is not None:
        BROWSER["thread"].join()
    if BROWSER["driver"] is not None:
        BROWSER["driver"].quit()
    if BROWSER["profile"] is not None:
        BROWSER["profile"].cleanup()


class BrowserCase(unittest.TestCase):
    """The browser (BROWSER) and the helpers that read the page; each class
    makes its traces once (make_traces)."""
    WINDOW = (1400, 1000)
    NO_PAGE = ()  # the cases that open no page

    @classmethod
    def setUpClass(cls):
        cls.parts = None
        cls.driver = BROWSER["driver"]
        try:
            cls.parts = browser_parts()
        except RuntimeError as e:
            cls.missing = str(e)
            return
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.con = None
        asked = [n.split(".")[-1] for n in SELECTED if n.split(".")[0] == cls.__name__]
        if BROWSER["driver"] is None and BROWSER["thread"] is None and \
                (not SELECTED or set(asked) - set(cls.NO_PAGE)):
            BROWSER["thread"] = threading.Thread(target=cls.start_browser_early)
            BROWSER["thread"].start()
        cls.make_traces()

    @classmethod
    def start_browser_early(cls):
        try:
            driver = cls.start_browser()
            blank = os.path.join(BROWSER["profile"].name, "blank.html")
            with open(blank, "w") as f:
                f.write("<!DOCTYPE html><title>blank</title>")
            driver.get("file://" + blank)
            BROWSER["driver"] = driver
        except Exception as e:  # raised again by the first case that opens a page
            BROWSER["error"] = e

    @classmethod
    def make_traces(cls):
        pass

    @classmethod
    def start_browser(cls):
        selenium, chromium, driver = cls.parts
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium
        BROWSER["profile"] = tempfile.TemporaryDirectory()
        cls.profile = BROWSER["profile"].name
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=%d,%d" % cls.WINDOW, "--user-data-dir=" + cls.profile,
                  "--no-first-run", "--disable-extensions", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-default-apps",
                  "--no-default-browser-check", "--mute-audio",
                  "--disable-features=Translate,OptimizationHints,MediaRouter"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        return webdriver.Chrome(service=Service(driver), options=opts)

    @classmethod
    def tearDownClass(cls):
        if cls.parts is None:
            return
        if cls.con is not None:
            cls.con.close()
        cls.tmp.cleanup()

    def setUp(self):
        if self.parts is None:
            self.fail(self.missing)
        self.logs = []

    # ---- helpers ------------------------------------------------------------

    def browser(self):
        if BROWSER["thread"] is not None:
            BROWSER["thread"].join()
            BROWSER["thread"] = None
        if BROWSER["error"] is not None:
            raise BROWSER["error"]
        if BROWSER["driver"] is None:
            BROWSER["driver"] = self.start_browser()
        type(self).driver = BROWSER["driver"]
        return self.driver

    def open(self, page):
        d = self.browser()
        d.get("file://" + page)
        # wait for the state the page reports; the deadline only bounds a
        # page that never gets there
        deadline = time.monotonic() + 120
        while True:
            ready = d.execute_script("return document.body.dataset.ready")
            if ready == "1" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(ready, "1", f"{page}: the page's script did not finish")

    def console_errors(self):
        """The browser's log since the last call: errors and warnings."""
        entries = self.driver.get_log("browser")
        return [e for e in entries if e["level"] in ("SEVERE", "WARNING")]

    def assert_no_console_errors(self):
        self.assertEqual(self.console_errors(), [])

    def pane(self, i=0):
        return self.driver.find_element("css selector", f"#panes > .pane:nth-child({i + 1})")

    def find(self, css, pane=0):
        """An element in pane i: one round trip to the browser."""
        return self.driver.find_element("css selector",
                                        f"#panes > .pane:nth-child({pane + 1}) {css}")

    def select_run(self, rid, pane=0):
        """Pick run rid in the pane's run selector as Selenium's Select does
        (a click on its option, unless selected already), its option found
        by one script, not a round trip per option."""
        index = self.driver.execute_script(
            "return [...document.querySelectorAll('.pane')[arguments[0]].querySelectorAll("
            "'select.run option')].flatMap((o, i) => o.textContent.startsWith(arguments[1]) "
            "? [[i, o.selected]] : [])", pane, f"run {rid}:")
        self.assertEqual(len(index), 1, f"run {rid} once in the run selector")
        if not index[0][1]:
            self.find(f"select.run option:nth-child({index[0][0] + 1})", pane).click()
        self.assertEqual(self.pane(pane).get_attribute("data-run"), str(rid))


def run_ringsim(*args):
    return subprocess.run([RINGSIM, *map(str, args)], capture_output=True, text=True)


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *map(str, args)], capture_output=True,
                          text=True)


class Viewer(BrowserCase):
    @classmethod
    def make_traces(cls):
        cls.shots = os.environ.get("RINGSIM_VIEWER_SHOTS", cls.dir)
        cls.db = os.path.join(cls.dir, "t.db")
        small = os.path.join(cls.dir, "small.json")
        with open(small, "w") as f:
            json.dump({"name": "small", "params": [{"name": "g", "shape": [1001]}]}, f)
        three = os.path.join(cls.dir, "three.json")  # 3 buckets of 1 MiB
        with open(three, "w") as f:
            json.dump({"name": "three", "params": [{"name": n, "shape": [262144]}
                                                   for n in "abc"]}, f)
        cls.runs = {}
        for name, args in (
                ("W2", ["-p", small, "-w", 2]),
                ("W3", ["-p", small, "-w", 3]),
                ("W4", ["-p", small, "-w", 4, "--segment-bytes", 100]),
                ("W8", ["-p", small, "-w", 8]),
                ("buckets", ["-p", three, "-w", 4, "--bucket-mb", 1, "--segment-bytes", 65536]),
                ("rd", ["-p", small, "-w", 8, "--algo", "rd"]),
                ("net", ["-p", small, "-w", 3, "--net", "latency=5us,bandwidth=10GB/s"]),
                # W=16 side by side: a simulated 54 ms (60 ticks a ms apart before
                # the axis chose its step by its labels' width), and recursive doubling
                ("W16sim", ["-p", small, "-w", 16, "--net", "latency=1800us,bandwidth=10GB/s"]),
                ("W16rd", ["-p", small, "-w", 16, "--algo", "rd"]),
                # 2 nodes of 2 GPUs sharing 1 NIC each: the topology view
                ("topo", ["-p", small, "--algo", "rhd", "--topo",
                          "nodes=2,gpus=2,nics=1,intra=1us/100GB/s,nic=5us/25GB/s"])):
            p = subprocess.run([RINGSIM, "--trace", cls.db, *map(str, args)],
                               capture_output=True, text=True)
            assert p.returncode == 0, p.stderr
            cls.runs[name] = len(cls.runs) + 1
        # a failed run: worker 2 crashes at the first all-gather step
        p = subprocess.run([RINGSIM, "-w", "4", "-p", os.path.join(EXAMPLES, "model.json"),
                            "--inject", "crash:worker=2,step=3", "--timeout", "0.3",
                            "--trace", cls.db], capture_output=True, text=True)
        assert p.returncode == 3, p.stderr
        cls.runs["failed"] = len(cls.runs) + 1
        cls.page = os.path.join(cls.dir, "run.html")
        p = subprocess.run([sys.executable, TOOL, "html", cls.db, "-o", cls.page],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        cls.con = sqlite3.connect(cls.db)

    def shot(self, name):
        path = os.path.join(self.shots, f"viewer_{name}.png")
        self.driver.save_screenshot(path)
        assert_not_blank(self, path)

    def select_bucket(self, i, pane=0):
        from selenium.webdriver.support.ui import Select
        Select(self.pane(pane).find_element("css selector", "select.bucket")).select_by_index(i)

    READ = ("const p = document.querySelectorAll('.pane')[arguments[0]]; "
            "const l = p.querySelector('.steplabel'); "
            "return [[+l.dataset.stage, l.dataset.phase || null, "
            "l.dataset.step === '' ? null : +l.dataset.step, l.textContent], "
            "[...p.querySelectorAll('svg .cell')].map("
            "c => [+c.dataset.w, +c.dataset.k, c.dataset.held])]")

    def read(self, pane=0):
        """What the chunk view shows, in one call: (stage number, phase,
        step, label) and {(worker, row): contributors} of its cells."""
        stage, rows = self.driver.execute_script(self.READ, pane)
        return stage, {(w, k): held for w, k, held in rows}

    def cells(self, pane=0):
        return self.read(pane)[1]

    def stage(self, pane=0):
        return self.read(pane)[0]

    def press(self, key):
        from selenium.webdriver.common.action_chains import ActionChains
        ActionChains(self.driver).send_keys(key).perform()

    def click(self, css, pane=0):
        self.find(css, pane).click()

    # ---- what the trace says ------------------------------------------------

    def ring_expected(self, rid, bucket, W, phase, step):
        """Each (worker, chunk)'s contributors after (phase, step), from the
        transfer table: the last payload the worker received for the chunk
        up to that step, plus itself in reduce-scatter (it adds its own);
        its own alone before any."""
        order = {"reduce_scatter": 0, "all_gather": 1}
        upto = (order[phase], step) if phase else (-1, 0)
        held = {(w, c): {w} for w in range(W) for c in range(W)}
        for ph, st, dst, chunk, first, count in self.con.execute(
                "SELECT phase, step, dst, chunk, contrib_first, contrib_count FROM transfer "
                "WHERE run_id = ? AND bucket = ? AND iter = 0 AND segment = 0 "
                "AND recv_end_ns IS NOT NULL ORDER BY phase = 'all_gather', step", (rid, bucket)):
            if (order[ph], st) > upto:
                continue
            payload = contributors(first, count, W)
            held[(dst, chunk)] = payload | {dst} if ph == "reduce_scatter" else payload
        return held

    def step_through_ring(self, rid, bucket=0, bucket_index=None, keys=False):
        """Step the chunk view from the start to the end (buttons, or the
        keyboard), checking every cell at every step against the trace."""
        W = self.con.execute("SELECT workers FROM run WHERE run_id = ?", (rid,)).fetchone()[0]
        self.select_run(rid)
        if bucket_index is not None:
            self.select_bucket(bucket_index)
        if keys:  # the keys go to the page, not the selector
            self.click(".steplabel")
        from selenium.webdriver.common.keys import Keys
        seen = []
        for i in range(2 * (W - 1) + 1):
            if i:
                if keys:
                    self.press(Keys.ARROW_RIGHT)
                else:
                    self.click(".next")
            (n, phase, step, label), cells = self.read()
            self.assertEqual(n, i, label)
            seen.append((phase, step))
            got = {k: parse_held(v, W) for k, v in cells.items()}
            self.assertEqual(len(got), W * W)
            want = self.ring_expected(rid, bucket, W, phase, step)
            for cell in sorted(want):
                self.assertEqual(got[cell], want[cell],
                                 f"run {rid} bucket {bucket} stage {i} ({label}): worker "
                                 f"{cell[0]} chunk {cell[1]}")
        self.assertEqual(seen, [(None, None)] + [("reduce_scatter", s) for s in range(W - 1)]
                         + [("all_gather", s) for s in range(W - 1)])
        # one more step stays at the end
        self.click(".next")
        self.assertEqual(self.stage()[0], 2 * (W - 1))

    # ---- the cases ----------------------------------------------------------

    # viewer-1: every cell's contributors at every step equal the trace's:
    # rings of 2, 3, 4 (3 segments per chunk) and 8 workers, stepped with the
    # button (W=3) and the keyboard; each bucket of a run of three, chosen
    # with the bucket selector; and recursive doubling (W=8).
    def test_contributors_every_step(self):
        self.open(self.page)
        for name in ("W2", "W3", "W4", "W8"):
            with self.subTest(run=name):
                self.step_through_ring(self.runs[name], keys=name != "W3")
        self.shot("ring")
        rid = self.runs["buckets"]
        buckets = [r[0] for r in self.con.execute(
            "SELECT DISTINCT bucket FROM transfer WHERE run_id = ? ORDER BY bucket", (rid,))]
        self.assertEqual(len(buckets), 3)
        for i, b in enumerate(buckets):
            with self.subTest(bucket=b):
                self.step_through_ring(rid, b, i, keys=True)
                self.assertIn(f"bucket {b},", self.stage()[3])
        self.shot("buckets")
        self.check_rd()
        self.shot("rd")
        self.assert_no_console_errors()

    def check_rd(self):
        """Recursive doubling (W=8): one region, the whole buffer; after
        exchange step s a worker holds itself and every payload it received
        up to s (SQL over the transfer table); the End key reaches the last
        step."""
        rid = self.runs["rd"]
        W = 8
        self.select_run(rid)
        from selenium.webdriver.common.keys import Keys
        for i in range(4):
            if i:
                self.click(".next")
            (n, phase, step, label), got = self.read()
            self.assertEqual((n, phase, step), (i, "exchange" if i else None, i - 1 if i else None))
            want = {w: {w} for w in range(W)}
            for dst, first, count in self.con.execute(
                    "SELECT dst, contrib_first, contrib_count FROM transfer WHERE run_id = ? "
                    "AND phase = 'exchange' AND step < ? AND recv_end_ns IS NOT NULL", (rid, i)):
                want[dst] |= contributors(first, count, W)
            self.assertEqual(sorted(got), [(w, 0) for w in range(W)])
            for w in range(W):
                self.assertEqual(parse_held(got[(w, 0)], W), want[w], f"stage {i} worker {w}")
        self.assertEqual({parse_held(v, W) == set(range(W)) for v in self.cells().values()}, {True})
        self.press(Keys.HOME)
        self.assertEqual(self.stage()[0], 0)
        self.press(Keys.END)
        self.assertEqual(self.stage()[0], 3)

    # viewer-hier: hier on 2 nodes of 4 GPUs and hier:rhd on 3 nodes of 2
    # (rhd folding across them), stepped from start to end: every cell at
    # every step holds what --explain's tables say, which a within-node
    # message's contributors wrapping round W instead of the node would
    # break; each step is named within or across the nodes; an arrow of
    # the node's reduce-scatter step s from local rank l carries l-s .. l.
    def test_hier_every_step(self):
        model = os.path.join(self.dir, "eight.json")
        with open(model, "w") as f:
            json.dump({"name": "eight", "params": [{"name": "g", "shape": [8]}]}, f)
        db, page = os.path.join(self.dir, "hier.db"), os.path.join(self.dir, "hier.html")
        runs = []
        for algo, N, G in (("hier", 2, 4), ("hier:rhd", 3, 2)):
            p = run_ringsim("-p", model, "--algo", algo, "--topo",
                            f"nodes={N},gpus={G},intra=1us/100GB/s,nic=5us/25GB/s",
                            "--explain", "--trace", db)
            self.assertEqual(p.returncode, 0, p.stderr)
            runs.append((len(runs) + 1, N * G, G, explain_tables(
                p.stdout[:p.stdout.index("\nringsim ")], N * G)))
        p = run_tool("html", db, "-o", page)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.open(page)
        for rid, W, G, want in runs:
            self.select_run(rid)
            labels = []
            for i, table in enumerate(want):
                if i:
                    self.click(".next")
                (n, phase, step, label), cells = self.read()
                self.assertEqual(n, i, label)
                labels.append(label)
                # the page's labels are --explain's, character for character
                self.assertEqual(cells, {(w, k): held for w, row in enumerate(table)
                                         for k, held in enumerate(row)}, f"run {rid}: {label}")
                if phase == "reduce_scatter" and step < G - 1:
                    arrows = self.driver.execute_script(
                        "return [...arguments[0].querySelectorAll('svg .arrow title')]"
                        ".map(t => t.textContent)", self.pane())
                    self.assertTrue(arrows)
                    for text in arrows:
                        src = int(text.split()[1])
                        self.assertEqual(parse_held(text.split("contributors ")[1], W),
                                         {src // G * G + (src - k) % G for k in range(step + 1)},
                                         text)
            self.click(".next")  # one more stays at the end
            self.assertEqual(self.stage()[0], len(want) - 1)
            self.assertIn("within nodes, reduce-scatter step 0", labels[1])
            self.assertTrue(any("across nodes, " in label for label in labels), labels)
            self.assertIn("within nodes, all-gather", labels[-1])
        self.shot("hier")
        self.assert_no_console_errors()

    # viewer-channels: on NCCL's channels (--channels 2 on two nodes of
    # two GPUs: rings 0 1 3 2 and 1 0 2 3) the bucket selector lists each
    # channel with its part and ring; channel 1's view puts its columns in
    # its ring's order, and every cell at every step holds what that
    # channel's transfers say, their contributors counted round its ring
    # (trace-schema.md); every arrow but the wrap goes one column right.
    def test_channels_every_step(self):
        model = os.path.join(self.dir, "ch.json")
        with open(model, "w") as f:
            json.dump({"name": "ch", "params": [{"name": "g", "shape": [20000]}]}, f)
        db, page = os.path.join(self.dir, "channels.db"), os.path.join(self.dir, "channels.html")
        p = run_ringsim("-p", model, "--topo", "dgx-h100,nodes=2,gpus=2,nics=2", "--channels", 2,
                        "--trace", db)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run_tool("html", db, "-o", page)
        self.assertEqual(p.returncode, 0, p.stderr)
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        W, ch = 4, 1
        senders = dict(con.execute("SELECT chunk, src FROM transfer WHERE channel = ? AND "
                                   "phase = 'reduce_scatter' AND step = 0 AND segment = 0", (ch,)))
        order = [senders[k] for k in range(W)]
        self.assertNotEqual(order, sorted(order))
        part = con.execute("SELECT min(elem_offset), max(elem_offset + elems) FROM transfer "
                           "WHERE channel = ?", (ch,)).fetchone()
        self.open(page)
        options = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('select.bucket option')]"
            ".map(o => o.textContent)", self.pane())
        label = f"channel {ch}: elements [{part[0]}, {part[1]}), ring {' '.join(map(str, order))}"
        self.assertEqual(len(options), 2, options)
        self.assertTrue(options[1].endswith(label), options)
        self.select_bucket(1)
        heads = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('svg text.head')]"
            ".map(t => [+t.dataset.col, t.textContent])", self.pane())
        self.assertEqual([name for _, name in sorted(heads)], [f"w{w}" for w in order])
        rank = {w: i for i, w in enumerate(order)}
        held = {(w, c): {w} for w in range(W) for c in range(W)}
        rows = con.execute(
            "SELECT phase, step, dst, chunk, contrib_first, contrib_count FROM transfer "
            "WHERE channel = ? AND segment = 0 ORDER BY phase = 'all_gather', step",
            (ch,)).fetchall()
        stages = [("reduce_scatter", s) for s in range(W - 1)] + \
            [("all_gather", s) for s in range(W - 1)]
        for i in range(len(stages) + 1):
            if i:
                self.click(".next")
                for ph, st, dst, chunk, first, count in rows:
                    if (ph, st) == stages[i - 1]:
                        payload = {order[(rank[first] + k) % W] for k in range(count)}
                        held[(dst, chunk)] = payload | {dst} if ph == "reduce_scatter" else payload
            (n, phase, step, text), cells = self.read()
            self.assertEqual(n, i, text)
            self.assertIn(f"bucket 0, {label}; step {i} ", text)
            got = {k: parse_held(v, W) for k, v in cells.items()}
            self.assertEqual(got, held, f"channel {ch}, stage {i}: {text}")
            if i == 1:  # the ring's neighbours are neighbouring columns
                paths = self.driver.execute_script(
                    "return [...arguments[0].querySelectorAll('svg .arrow')]"
                    ".map(a => a.getAttribute('d'))", self.pane())
                self.assertEqual(len(paths), W)
                self.assertEqual(sum(" M" in d for d in paths), 1, paths)  # one wrap
        self.assert_no_console_errors()

    # viewer-2: a cell's history lists the transfers into it (SQL's, with
    # their bytes); clicking one shows its trace row; an arrow does too.
    def test_cell_history_and_trace_row(self):
        self.open(self.page)
        rid = self.runs["W4"]
        self.select_run(rid)
        w, c = 2, 0
        self.driver.execute_script(
            "arguments[0].querySelector(`svg .cell[data-w='${arguments[1]}'][data-k='${arguments[2]}']`)"
            ".dispatchEvent(new MouseEvent('click', {bubbles: true}))", self.pane(), w, c)
        rows = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('.history tr.clickable')].map("
            "r => [...r.cells].map(td => td.textContent))", self.pane())
        want = self.con.execute(
            "SELECT phase, step, src, sum(bytes), count(*) FROM transfer WHERE run_id = ? "
            "AND dst = ? AND chunk = ? GROUP BY phase, step, src "
            "ORDER BY phase = 'all_gather', step", (rid, w, c)).fetchall()
        into = [r for r in rows if r[1]]
        self.assertEqual(len(into), len(want), rows)
        for got, (phase, step, src, nbytes, segs) in zip(into, want):
            self.assertIn(f"{phase.replace('_', '-')} step {step}", got[0])
            self.assertEqual(got[1], f"from worker {src}")
            self.assertEqual(got[4], f"{nbytes} B")
        self.assertTrue(any(segs > 1 for *_, segs in want), "a message of several segments")
        # "holds after" in --explain's notation, complete at the end; and the
        # cells say the same at the last step ("all", op avg or not: they
        # said "mean" where the history said "all")
        holds = [r[6] for r in rows]
        self.assertEqual([h for h in holds if not re.fullmatch(r"all|\{[0-9,-]*\}", h)], [])
        self.assertEqual(holds[-1], "all")
        self.assertEqual(self.con.execute("SELECT op FROM run WHERE run_id = ?",
                                          (rid,)).fetchone()[0], "avg")
        from selenium.webdriver.common.keys import Keys
        self.press(Keys.END)
        shown = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('svg text')].map(t => t.textContent)",
            self.pane())
        self.assertEqual(shown.count("all"), 16, shown)
        self.assertNotIn("mean", shown)
        self.press(Keys.HOME)
        # click the first transfer: its trace row
        self.driver.execute_script(
            "[...arguments[0].querySelectorAll('.history tr.clickable')].find("
            "r => r.cells[1].textContent).click()", self.pane())
        trace = self.shown_trace_row()
        first = self.con.execute(
            "SELECT seq, src, dst, chunk, segment, bytes, send_begin_ns FROM transfer WHERE "
            "run_id = ? AND dst = ? AND chunk = ? ORDER BY phase = 'all_gather', step, seq LIMIT 1",
            (rid, w, c)).fetchone()
        self.assertEqual([trace[k] for k in ("seq", "src", "dst", "chunk", "segment", "bytes",
                                             "send_begin_ns")], [str(v) for v in first])
        # an arrow of step 1: its trace row
        self.click(".next")
        self.driver.execute_script(
            "arguments[0].querySelector('svg .arrow').dispatchEvent(new MouseEvent('click', "
            "{bubbles: true}))", self.pane())
        title = self.pane().find_element("css selector", ".traceRow h3").text
        self.assertRegex(title, r"worker \d \u2192 \d, reduce-scatter step 0, .*contributors")
        self.shot("history")
        self.assert_no_console_errors()

    # viewer-3: a failed run shows where it stopped: the error, the fault
    # injected, every transfer never received, the watchdog's worker table,
    # and the lost transfers dashed in the chunk view.
    def shown_trace_row(self):
        """The pane's trace row table as {column: text}."""
        row = self.driver.execute_script(
            "const t = arguments[0].querySelector('.traceRow table'); "
            "return [[...t.rows[0].cells].map(c => c.textContent), "
            "[...t.rows[1].cells].map(c => c.textContent)]", self.pane())
        return dict(zip(*row))

    # viewer-topo: a --topo run shows its cluster: a box per node, a
    # circle per GPU, a box per NIC, and a line per link whose title gives
    # the bytes it carried, each the SQL sum of the transfers over that GPU
    # pair (within a node) or NIC pair (between nodes); a run without a
    # topology shows none.
    def test_topology_view(self):
        self.open(self.page)
        self.select_run(self.runs["topo"])
        counts = self.driver.execute_script(
            "const s = arguments[0].querySelector('svg.topo'); return s && "
            "[s.querySelectorAll('rect.node').length, s.querySelectorAll('circle.gpu').length, "
            "s.querySelectorAll('rect.nic').length]", self.pane())
        self.assertEqual(counts, [2, 4, 2])
        self.assertIn("Topology: 2 nodes x 2 GPUs, 1 NIC per node", self.pane().text)
        titles = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('svg.topo .link title')]"
            ".map(t => t.textContent)", self.pane())
        shown = {}
        for t in titles:
            what, nbytes = t.split(": ")
            kind, src, _, _, dst = what.split()
            shown[(kind, int(src), int(dst))] = int(nbytes.split()[0].replace(",", ""))
        want = {}
        for src, dst, nbytes in self.con.execute(
                "SELECT src, dst, sum(bytes) FROM transfer WHERE run_id = ? GROUP BY src, dst",
                (self.runs["topo"],)):
            key = ("GPU", src, dst) if src // 2 == dst // 2 else ("NIC", src // 2, dst // 2)
            want[key] = want.get(key, 0) + nbytes
        self.assertEqual(shown, want)
        self.select_run(self.runs["W4"])
        self.assertIsNone(self.driver.execute_script(
            "return arguments[0].querySelector('svg.topo')", self.pane()))
        self.assert_no_console_errors()

    # viewer-step: a ringsim step --trace run shows its training step:
    # per worker its forward and backward and each bucket's all-reduce,
    # the part after the last gradient marked exposed, as the trace's
    # step_interval has them; another run shows none.
    def test_step_lanes(self):
        db = os.path.join(self.dir, "step.db")
        p = subprocess.run([RINGSIM, "step", "-p", os.path.join(EXAMPLES, "step_three.json"),
                            "-w", "2", "--net", "latency=1us,bandwidth=1GB/s", "--bucket-mb", "1",
                            "--segment-bytes", "1M", "--trace", db],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        page = os.path.join(self.dir, "step.html")
        p = run_tool("html", db, "-o", page)
        self.assertEqual(p.returncode, 0, p.stderr)
        con = sqlite3.connect(db)
        try:
            for rid in (1, 2):  # step 1's run, then the later steps'
                self.open(page)
                self.select_run(rid)
                rows = con.execute("SELECT kind, start_ns, end_ns FROM step_interval WHERE "
                                   "run_id = ? AND iter = 0", (rid,)).fetchall()
                last = max(e for k, _, e in rows if k == "backward")
                got = self.driver.execute_script(
                    "const s = arguments[0].querySelector('svg.step'); return s && "
                    "['.forward', '.backward', '.allreduce:not(.exposed)', '.exposed'].map("
                    "c => s.querySelectorAll('rect' + c).length)", self.pane())
                # an all-reduce's bar: its part before the last gradient, and after
                self.assertEqual(got, [sum(k == "forward" for k, _, _ in rows),
                                       sum(k == "backward" for k, _, _ in rows),
                                       sum(k == "allreduce" and min(e, max(s, last)) > s
                                           for k, s, e in rows),
                                       sum(k == "allreduce" and e > last for k, _, e in rows)])
                self.assertGreater(got[3], 0)
                self.assertIn("exposed after the last gradient", self.pane().text)
            self.assert_no_console_errors()
        finally:
            con.close()
        self.open(self.page)
        self.select_run(self.runs["W4"])
        self.assertIsNone(self.driver.execute_script(
            "return arguments[0].querySelector('svg.step')", self.pane()))

    def test_failed_run_shows_its_fault(self):
        self.open(self.page)
        rid = self.runs["failed"]
        self.select_run(rid)
        error = self.con.execute("SELECT error FROM run WHERE run_id = ?", (rid,)).fetchone()[0]
        self.assertTrue(error)
        self.assertEqual(self.pane().find_element("css selector", ".status").text,
                         f"FAILED: {error}")
        failure = self.pane().find_element("css selector", ".failure").text
        self.assertIn("crash:worker=2,step=3 (worker 2, all-gather step 0)", failure)
        lost = self.con.execute(
            "SELECT src, dst, phase, step FROM transfer WHERE run_id = ? AND recv_end_ns IS NULL "
            "ORDER BY send_begin_ns", (rid,)).fetchall()
        self.assertTrue(lost)
        self.assertIn(f"{len(lost)} transfer{'s' if len(lost) > 1 else ''} sent, never received",
                      failure)
        shown = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('.lost tr.clickable')].map("
            "r => [+r.cells[3].textContent, +r.cells[4].textContent, r.cells[1].textContent, "
            "+r.cells[2].textContent])", self.pane())
        self.assertEqual([tuple(r) for r in shown], lost)
        # the first one's trace row, its 64-bit checksum to the last digit
        self.driver.execute_script(
            "arguments[0].querySelector('.lost tr.clickable').click()", self.pane())
        trace = self.shown_trace_row()
        first = self.con.execute(
            "SELECT src, dst, seq, checksum FROM transfer WHERE run_id = ? AND recv_end_ns IS NULL "
            "ORDER BY send_begin_ns LIMIT 1", (rid,)).fetchone()
        self.assertIsNotNone(first[3], "--inject turns checksums on")
        self.assertEqual([trace[k] for k in ("src", "dst", "seq", "checksum")],
                         [str(v) for v in first])
        states = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('.watchdog tr')].slice(1).map("
            "r => [+r.cells[0].textContent, r.cells[1].textContent])", self.pane())
        self.assertEqual([tuple(s) for s in states], self.con.execute(
            "SELECT worker, state FROM worker WHERE run_id = ? ORDER BY worker", (rid,)).fetchall())
        # at the all-gather step of the first lost transfer: dashed, with an x
        phase, step = lost[0][2], lost[0][3]
        from selenium.webdriver.common.keys import Keys
        self.press(Keys.HOME)
        for _ in range(10):
            if self.stage()[1:3] == [phase, step]:
                break
            self.press(Keys.ARROW_RIGHT)
        self.assertEqual(self.stage()[1:3], [phase, step])
        dashed = self.driver.execute_script(
            "return arguments[0].querySelectorAll(\"svg .arrow[stroke-dasharray='4,3']\").length",
            self.pane())
        self.assertGreaterEqual(dashed, sum(1 for r in lost if r[2:] == (phase, step)))
        self.assertIn("never received", self.stage()[3])
        self.shot("failed")
        self.assert_no_console_errors()

    # viewer-switch: a page of an nvls run loads (its topology view read
    # participant W + n, the node's NVLink switch, as a GPU that is not
    # there, and stopped the page's script), and the view names the switch
    # "switch n (participant W+n)", as ringsim's own messages name it: its
    # box, and every link into and out of it, whose bytes are the trace's.
    def test_switch_named_as_switch(self):
        db = os.path.join(self.dir, "nvls.db")
        page = os.path.join(self.dir, "nvls.html")
        p = run_ringsim("-p", os.path.join(EXAMPLES, "mlp.json"), "--topo", "dgx-h100",
                        "--algo", "nvls", "--trace", db)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run_tool("html", db, "-o", page)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.open(page)
        boxes = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('svg.topo .switch title')].map("
            "t => t.textContent)", self.pane())
        self.assertEqual(boxes, ["switch 0 (participant 8)"])
        links = self.driver.execute_script(
            "return [...arguments[0].querySelectorAll('svg.topo .link title')].map("
            "t => t.textContent)", self.pane())
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        want = ["%s -> %s: %s bytes" % (f"GPU {s}" if s < 8 else "switch 0 (participant 8)",
                                        f"GPU {d}" if d < 8 else "switch 0 (participant 8)",
                                        f"{b:,}")
                for s, d, b in con.execute("SELECT src, dst, sum(bytes) FROM transfer "
                                           "GROUP BY src, dst")]
        self.assertEqual(sorted(links), sorted(want))
        self.assertNotIn("GPU 8", " ".join(links))
        self.assert_no_console_errors()

    # viewer-switch-rows: the timeline of an nvls run (one node) and an
    # nvlstree run (two) has a row per NVLink switch after the GPUs',
    # labelled as one (sw n), holding that switch's bars: each row's bars
    # are the transfers the trace has it receive; hovering a bar in a
    # switch's row names the switch as ringsim does.
    def test_switch_rows_in_timeline(self):
        from selenium.webdriver.common.action_chains import ActionChains
        for spec, algo, W, S in (("dgx-h100", "nvls", 8, 1), ("dgx-h100,nodes=2", "nvlstree", 16, 2)):
            with self.subTest(algo=algo):
                db = os.path.join(self.dir, f"{algo}-rows.db")
                page = os.path.join(self.dir, f"{algo}-rows.html")
                p = run_ringsim("-p", os.path.join(EXAMPLES, "mlp.json"), "--topo", spec,
                                "--algo", algo, "--trace", db)
                self.assertEqual(p.returncode, 0, p.stderr)
                p = run_tool("html", db, "-o", page)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.open(page)
                rows, bars, caption = self.driver.execute_script(
                    "const c = arguments[0].querySelector('canvas.timeline'); "
                    "return [c.dataset.rows && JSON.parse(c.dataset.rows), "
                    "c.dataset.bars && JSON.parse(c.dataset.bars), "
                    "c.previousElementSibling.textContent]", self.pane())
                self.assertEqual(rows, [f"w{w}" for w in range(W)] + [f"sw{n}" for n in range(S)])
                con = sqlite3.connect(db)
                self.addCleanup(con.close)
                got = dict(con.execute("SELECT dst, count(*) FROM transfer GROUP BY dst"))
                self.assertEqual(bars, [got.get(r, 0) for r in range(W + S)])
                self.assertTrue(all(bars[W:]), bars)
                self.assertIn(f"Simulated time, one row per worker, then one per NVLink switch "
                              f"(sw n: switch n, participant {W}+n). ", caption)
                # hover the last switch's row where a bar is drawn (a pixel
                # darker than the rows' white, grey and the step's yellow)
                x, y = self.driver.execute_script(
                    "const c = arguments[0].querySelector('canvas.timeline'), "
                    "r = c.getBoundingClientRect(), k = c.width / r.width, "
                    "rowH = (r.height - 26) / arguments[1], y = (arguments[1] - 0.6) * rowH, "
                    "d = c.getContext('2d').getImageData(0, Math.round(y * k), c.width, 1).data; "
                    "for (let i = 40 * k; i < c.width; i++) "
                    "  if (Math.min(d[4 * i], d[4 * i + 1], d[4 * i + 2]) < 150) "
                    "    return [i / k - r.width / 2, y - r.height / 2]; "
                    "return [null, null]", self.pane(), W + S)
                self.assertIsNotNone(x, "a bar in the last switch's row")
                canvas = self.find("canvas.timeline")
                ActionChains(self.driver).move_to_element_with_offset(
                    canvas, round(x) + 1, round(y)).perform()
                info = self.find(".tlinfo").text
                self.assertTrue(info.startswith(f"switch {S - 1} (participant {W + S - 1}): "
                                                f"bucket 0 "), info)
                self.assert_no_console_errors()

    # viewer-4: the page loads nothing: no request but the page itself (the
    # performance log and the page's own resource list), and no console error
    # while a user plays, zooms, toggles the clock, hovers the timeline and
    # opens two runs side by side.
    def test_no_network_no_console_errors(self):
        self.browser().get_log("performance")
        self.open(self.page)
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys
        self.select_run(self.runs["net"])
        self.assertTrue(self.pane().find_element("css selector", ".clock-sim").is_selected())
        self.click(".clock-wall")
        self.assertIn("Wall time", self.pane().text)
        self.click(".clock-sim")
        self.assertIn("Simulated time", self.pane().text)
        self.click(".zoomin")
        self.press(" ")  # play, until it has stepped (readysignal), then pause
        deadline = time.monotonic() + 30
        while self.stage()[0] == 0:
            self.assertLess(time.monotonic(), deadline, "play never stepped")
            time.sleep(0.05)
        self.press(" ")
        self.assertGreater(self.stage()[0], 0)
        canvas = self.pane().find_element("css selector", "canvas.timeline")
        ActionChains(self.driver).move_to_element(canvas).perform()
        self.driver.find_element("id", "sidebyside").click()
        self.assertEqual(len(self.driver.find_elements("css selector", ".pane")), 2)
        self.select_run(self.runs["rd"], pane=1)
        before = self.stage(0)[0]
        self.click(".steplabel", pane=1)  # the keys go to the pane clicked last
        self.press(Keys.ARROW_RIGHT)
        self.assertEqual((self.stage(0)[0], self.stage(1)[0]), (before, 1))
        self.assertIn("recursive-doubling", self.pane(1).text)
        self.shot("side_by_side")
        self.assertEqual(self.driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"), [])
        # the DevTools network events of the page's document (the browser's
        # own pages, chrome://..., log theirs too)
        url, urls = "file://" + self.page, []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent" and \
                    message["params"].get("documentURL", "").split("#")[0] == url:
                urls.append(message["params"]["request"]["url"])
        self.assertIn(url, urls, "the performance log saw the page itself")
        self.assertEqual([u for u in urls if u != url and not u.startswith("data:")], [],
                         "requests the page made")
        self.assert_no_console_errors()

    # viewer-5: a run of 100,000 transfers (64 workers, one bucket) opens,
    # its timeline aggregated per worker and step, and says so; the chunk
    # view steps.
    def test_large_run(self):
        model = os.path.join(self.dir, "w64.json")
        with open(model, "w") as f:  # 13 segments per chunk: 2 x 63 x 64 x 13 transfers
            json.dump({"name": "w64", "params": [{"name": "g", "shape": [64 * 13 * 256]}]}, f)
        db = os.path.join(self.dir, "large.db")
        p = subprocess.run([RINGSIM, "-p", model, "-w", "64", "--segment-bytes", "1024",
                            "--trace", db], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        con = sqlite3.connect(db)
        n = con.execute("SELECT count(*) FROM transfer").fetchone()[0]
        self.assertGreaterEqual(n, 100000)
        page = os.path.join(self.dir, "large.html")
        p = subprocess.run([sys.executable, TOOL, "html", db, "-o", page], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.open(page)
        # the page says it is ready (the time it took: bench/viewer_open.py)
        self.assertTrue(self.driver.execute_script("return document.body.dataset.readyMs"))
        self.assertIn(f"This run has {n:,} transfers, more than 20,000: one bar per worker and "
                      "step (aggregated)", self.pane().text)
        self.assertEqual(len(self.cells()), 64 * 64)
        self.click(".next")
        n1, phase, step, _ = self.stage()
        self.assertEqual((n1, phase, step), (1, "reduce_scatter", 0))
        got = {k: parse_held(v, 64) for k, v in self.cells().items()}
        self.assertEqual(got, self.ring_expected_db(con, 64, phase, step))
        con.close()
        self.shot("large")
        self.assert_no_console_errors()

    def ring_expected_db(self, con, W, phase, step):
        saved, self.con = self.con, con
        try:
            return self.ring_expected(1, 0, W, phase, step)
        finally:
            self.con = saved

    def timeline_text(self, pane=0):
        """The pane's timeline caption, and its legend as [class, text]."""
        return self.driver.execute_script(
            "const p = document.querySelectorAll('.pane')[arguments[0]]; "
            "return [p.querySelector('canvas.timeline').previousElementSibling.textContent, "
            "[...p.querySelectorAll('.legend > span')].map(s => [s.className, s.textContent])]",
            pane)

    # viewer-6 (issue 33, 16 and 17): the timeline's caption counts what it
    # draws as SQL counts the trace's transfers: received (a bar each; thick
    # beside the thin send bars of wall time), never received (a red x each),
    # sent (wall time only); not the bars of every kind summed (192 "bars"
    # for 96 transfers). The legend names only what the clock shown draws:
    # no hatching (no waits) and no send bars in simulated time.
    def test_caption_and_legend_say_what_is_drawn(self):
        self.open(self.page)
        for name, clock in (("W4", "wall"), ("failed", "wall"), ("net", "sim"), ("net", "wall")):
            with self.subTest(run=name, clock=clock):
                rid = self.runs[name]
                self.select_run(rid)
                if name == "net":
                    self.click(f".clock-{clock}")
                caption, legend = self.timeline_text()
                n, received, waited = self.con.execute(
                    "SELECT count(*), count(recv_end_ns), count(CASE WHEN wait_ns > 0 AND "
                    "recv_end_ns IS NOT NULL THEN 1 END) FROM transfer WHERE run_id = ?",
                    (rid,)).fetchone()
                lost, wall = n - received, clock == "wall"
                want = (f"{n:,} transfers: {received:,} received, a "
                        f"{'thick ' if wall else ''}bar each")
                if lost:
                    want += f"; {lost:,} never received, a red \u00d7 each"
                if wall:
                    want += f"; {n:,} sent, a thin pale bar each"
                self.assertEqual(caption, f"{'Wall' if wall else 'Simulated'} time, one row per "
                                          f"worker. {want}.")
                phases = {p.replace("_", "-") for (p,) in self.con.execute(
                    "SELECT DISTINCT phase FROM transfer WHERE run_id = ?", (rid,))}
                self.assertEqual({t for c, t in legend if c == "lg-phase"}, phases)
                want = {"lg-phase", "lg-step"} | ({"lg-send"} if wall else set()) | \
                    ({"lg-hatch"} if wall and waited else set()) | ({"lg-lost"} if lost else set())
                self.assertEqual({c for c, _ in legend}, want, legend)
                text = " ".join(t for _, t in legend)
                if not wall:
                    self.assertNotIn("hatched", text)
                    self.assertNotIn("send", text)
                if not lost:
                    self.assertNotIn("never received", text)
        self.assertTrue(self.con.execute("SELECT count(*) FROM transfer WHERE run_id = ? AND "
                                         "wait_ns > 0", (self.runs["W4"],)).fetchone()[0],
                        "a wall-time run with waits, whose legend names the hatching")
        self.assert_no_console_errors()

    PANE_BOXES = (
        "return [...document.querySelectorAll('.pane')].map(p => { "
        "const w = p.querySelector('.chunkwrap'), "
        "r = w.querySelector('svg').getBoundingClientRect(); "
        "return {wrap: [w.scrollWidth, w.clientWidth, w.scrollHeight, w.clientHeight], "
        "pane: [p.scrollWidth, p.clientWidth], svg: [r.width, r.height], "
        "maxh: parseFloat(getComputedStyle(w).maxHeight), "
        "page: [document.documentElement.scrollWidth, document.documentElement.clientWidth]}; })")

    def assert_fitted(self, why):
        boxes = self.driver.execute_script(self.PANE_BOXES)
        self.assertEqual(len(boxes), 2)
        for i, b in enumerate(boxes):
            sw, cw, sh, ch = b["wrap"]
            self.assertLessEqual(sw, cw, f"{why}: pane {i}'s chunk view scrolls across: {b}")
            self.assertLessEqual(sh, ch, f"{why}: pane {i}'s chunk view scrolls down: {b}")
            self.assertLessEqual(b["pane"][0], b["pane"][1], f"{why}: pane {i} scrolls: {b}")
            self.assertLessEqual(b["page"][0], b["page"][1], f"{why}: the page scrolls across")
            # fitted, not merely small: the grid fills the width or the height
            self.assertGreater(max(b["svg"][0] / cw, b["svg"][1] / b["maxh"]), 0.9, f"{why}: {b}")
        return boxes

    # viewer-7 (issue 33, 17): two W=16 runs side by side in a 1920x1080
    # window (whose grids at their default size overflow their panes):
    # "fit" puts each whole grid inside its pane, no scrollbar, and keeps
    # it there when the window narrows; each timeline's axis labels, in
    # either clock, stand apart inside the canvas (not "10 ms11 ms12 ms").
    def test_fit_and_axis_side_by_side(self):
        page = os.path.join(self.dir, "w16.html")
        p = run_tool("html", self.db, "-o", page, "--run", self.runs["W16sim"], self.runs["W16rd"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.browser().set_window_size(1920, 1080)
        self.addCleanup(self.driver.set_window_size, *self.WINDOW)
        self.open(page)
        boxes = self.driver.execute_script(self.PANE_BOXES)
        self.assertEqual(len(boxes), 2, "--run A B opens two panes")
        self.assertTrue(all(b["wrap"][0] > b["wrap"][1] for b in boxes),
                        f"at their default size both grids are wider than their panes: {boxes}")
        self.click(".zoomfit", pane=0)
        self.driver.execute_script("document.querySelectorAll('.pane')[1]"
                                   ".querySelector('.zoomfit').click()")
        before = self.assert_fitted("after fit")
        for i, clocks in enumerate((("sim", "wall"), ("wall",))):
            for clock in clocks:
                with self.subTest(pane=i, clock=clock):
                    ticks, width = self.driver.execute_script(
                        "const p = document.querySelectorAll('.pane')[arguments[0]], "
                        "r = p.querySelector('.clock-' + arguments[1]), "
                        "c = p.querySelector('canvas.timeline'); "
                        "if (r) r.click(); "
                        "return [JSON.parse(c.dataset.ticks), c.getBoundingClientRect().width]",
                        i, clock)
                    self.assertGreaterEqual(len(ticks), 3, ticks)
                    texts = [t for _, _, t in ticks]
                    self.assertEqual(len(set(texts)), len(texts), f"labels repeat: {texts}")
                    for (a0, a1, at), (b0, b1, bt) in zip(ticks, ticks[1:]):
                        self.assertLessEqual(a1 + 4, b0, f"{at!r} runs into {bt!r}: {ticks}")
                    self.assertGreaterEqual(ticks[0][0], 0)
                    self.assertLessEqual(ticks[-1][1], width)
        self.driver.set_window_size(1500, 900)
        for _ in range(60):  # the page redraws 150 ms after the last resize
            time.sleep(0.05)
            now = self.driver.execute_script(self.PANE_BOXES)
            if all(a["svg"] != b["svg"] for a, b in zip(before, now)):
                break
        self.assert_fitted("after the window narrowed")
        self.assert_no_console_errors()


# Names a page could be disabled by, or run: the parser's escapes inside a
# script element ('<!--' then '<script' swallow the page's code), a script,
# an image whose error runs one, an entity, JavaScript's line separators,
# quotes and a backslash.
HOSTILE = ("<!--<script>document.title='PWNED'</script>"
           "<img src=x onerror=\"document.title='PWNED'\">&amp;\u2028\u2029'\"\\")


class HostileNames(BrowserCase):
    """A model, its params, a trace file and an error holding HOSTILE: the
    page shows each as text; ringsim prints them and the trace holds them."""
    NO_PAGE = ("test_hostile_names_reach_the_trace_intact",)
    MODEL = "m" + HOSTILE + "\t"  # a tab: a control character, printed as '?'
    PARAMS = ("p" + HOSTILE, "q" + HOSTILE + "\x1b[31m")
    # a file name cannot hold '/': its '<!--<script' and an image
    TRACE = "t<!--<script><img src=x onerror=\"document.title='PWNED'\">&amp;\u2028.db"

    @classmethod
    def make_traces(cls):
        model = os.path.join(cls.dir, "hostile.json")
        with open(model, "w") as f:
            json.dump({"name": cls.MODEL, "params": [{"name": cls.PARAMS[0], "shape": [7]},
                                                     {"name": cls.PARAMS[1], "shape": [5]}]}, f)
        cls.db = os.path.join(cls.dir, cls.TRACE)
        cls.ok = run_ringsim("-w", 3, "-p", model, "--trace", cls.db)
        assert cls.ok.returncode == 0, cls.ok.stderr
        cls.failed = run_ringsim("-w", 4, "-p", model, "--inject", "crash:worker=2,step=3",
                                 "--timeout", "0.3", "--trace", cls.db)
        assert cls.failed.returncode == 3, cls.failed.stderr
        cls.con = sqlite3.connect(cls.db)
        # an error naming a param, as the check's errors quote one
        cls.con.execute("UPDATE run SET error = error || ' (param \"' || ? || '\")' "
                        "WHERE run_id = 2", (cls.PARAMS[0],))
        cls.con.commit()
        cls.page = os.path.join(cls.dir, "hostile.html")
        p = run_tool("html", cls.db, "-o", cls.page)
        assert p.returncode == 0, p.stderr

    @staticmethod
    def printed(name):
        """name as ringsim prints it: a control character as '?'."""
        return "".join("?" if ord(ch) < 0x20 or ord(ch) == 0x7f else ch for ch in name)

    # viewer-8 (issue 33, 2): ringsim prints the hostile model and param
    # names (control characters as '?') and the trace's file name, and the
    # trace holds the names byte for byte.
    def test_hostile_names_reach_the_trace_intact(self):
        out = self.ok.stdout
        self.assertIn(f'model "{self.printed(self.MODEL)}" on 3 workers', out)
        for name in self.PARAMS:
            self.assertIn(f"\n  {self.printed(name)}: [", out)
        self.assertIn(f"trace      {self.db}, run 1", out)
        self.assertIn(f'model "{self.printed(self.MODEL)}" on 4 workers', self.failed.stdout)
        self.assertEqual(self.con.execute("SELECT model FROM run ORDER BY run_id").fetchall(),
                         [(self.MODEL,), (self.MODEL,)])
        for rid in (1, 2):
            self.assertEqual(self.con.execute(
                "SELECT name FROM param WHERE run_id = ? ORDER BY idx", (rid,)).fetchall(),
                [(n,) for n in self.PARAMS])

    # viewer-9 (issue 33, 2): the page of that trace runs its script and
    # shows every name where it shows it (the trace file's name, each run's
    # label in the selectors, the summary, the failed run's error) as text;
    # no payload ran: the title is the page's, no image, no handler, only
    # the page's two script elements.
    def test_hostile_names_shown_as_text(self):
        self.open(self.page)
        d = self.driver
        model = self.printed(self.MODEL)
        self.assertEqual(d.find_element("id", "source").get_attribute("textContent"), self.TRACE)
        error = self.con.execute("SELECT error FROM run WHERE run_id = 2").fetchone()[0]
        self.assertIn(self.PARAMS[0], error)
        for rid in (2, 1):  # the latest opens first
            with self.subTest(run=rid):
                if rid == 1:
                    self.select_run(rid)
                labels, summary, status = d.execute_script(
                    "const p = document.querySelector('.pane'), s = p.querySelector('.status'); "
                    "return [[...p.querySelectorAll('select.run option')].map(o => o.textContent), "
                    "p.querySelector('.summary').textContent, s && s.textContent]")
                self.assertEqual(len(labels), 2)
                self.assertTrue(all(f", {model}, " in l for l in labels), labels)
                self.assertIn(f" all-reduce of {model} on ", summary)
                self.assertEqual(status, f"FAILED: {self.printed(error)}" if rid == 2 else None)
        # a payload's script would have run as the page was parsed, before
        # the page's own; an image's handler needs an image, and there is none
        self.assertEqual(d.execute_script(
            "return [document.title, document.images.length, "
            "document.querySelectorAll('[onerror]').length, document.scripts.length, "
            "document.querySelectorAll('.pane svg .cell').length > 0]"),
            ["ringsim trace viewer", 0, 0, 2, True])
        self.assert_no_console_errors()


def main():
    global TOOL
    cases = helpers.parse(globals(), "RINGSIM", "EXAMPLES", "TOOLS")
    TOOL = os.path.join(TOOLS, "ringsim_plot.py")
    SELECTED[:] = cases
    # a peer: skipped without the browser, failed under
    # RINGSIM_REQUIRE_PEERS=1
    try:
        browser_parts()
    except RuntimeError as e:
        helpers.peer_missing(str(e))
    helpers.run_tests(cases)


if __name__ == "__main__":
    main()
