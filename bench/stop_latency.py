#!/usr/bin/python3
"""bench/stop_latency.py - how soon a failed or interrupted run ends: the
times the tests once asserted (pyapi_interrupt*, mpi_transport_crash_*,
viewer_large_run), measured here as ratios, not held by a test (a shared
machine can stall any of them for seconds).

    bench/stop_latency.py [--build DIR] [--runs N]

Prints, for each case, the median of N runs (default 3):
  command crash    a worker crashes, --timeout T: the command's wall / T
  command stall    a worker stalls for 10 min, --timeout T: wall / T
  mpi crash        the same over mpirun -np 3 (where mpirun is found)
  python ctrl-c    Ctrl-C in ringsim.ddp_allreduce_average_grads during a
                   10-minute stall: milliseconds to KeyboardInterrupt, and
                   that over the 5 s the test once allowed (needs numpy;
                   the build's libringsim.so)
  viewer open      ringsim-plot html of a 100,000-transfer run opened in
                   headless Chromium: the page's readyMs, and that over a
                   2-worker run's (needs selenium, chromium, chromedriver)
A ratio near 1 for the first three means the run ends as soon as the
timeout says (the tests once held wall < T + 6 s).
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 2.0


def model(d):
    path = os.path.join(d, "m.json")
    with open(path, "w") as f:
        json.dump({"name": "m", "params": [{"name": "w", "shape": [4096]}]}, f)
    return path


def command(cmd):
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t
    if p.returncode != 3:
        sys.exit(f"stop_latency.py: expected exit 3 from {cmd}: {p.stderr}")
    return took


def python_interrupt(build):
    code = ("import os, time, numpy, ringsim\n"
            "grads = [{'w': numpy.ones(8, numpy.float32)} for _ in range(3)]\n"
            "print(len(os.listdir('/proc/self/task')), flush=True)\n"
            "try:\n"
            "    ringsim.ddp_allreduce_average_grads(grads,\n"
            "        inject='stall:worker=1,step=0,ms=600000', timeout=900)\n"
            "except KeyboardInterrupt:\n"
            "    print(time.monotonic(), flush=True)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               RINGSIM_LIBRARY=os.path.join(build, "libringsim.so"))
    with subprocess.Popen([sys.executable, "-c", code], env=env,
                          stdout=subprocess.PIPE, text=True) as p:
        threads = int(p.stdout.readline())
        while len(os.listdir(f"/proc/{p.pid}/task")) < threads + 4:
            time.sleep(0.001)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=600)
    return float(out) - sent


def viewer_open_ms(ringsim, d, workers, shape, segment):
    from selenium import webdriver
    path = os.path.join(d, f"w{workers}.json")
    with open(path, "w") as f:
        json.dump({"name": "v", "params": [{"name": "g", "shape": [shape]}]}, f)
    db = os.path.join(d, f"w{workers}.db")
    subprocess.run([ringsim, "-p", path, "-w", str(workers), "--segment-bytes",
                    str(segment), "--trace", db], check=True, capture_output=True)
    page = os.path.join(d, f"w{workers}.html")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ringsim_plot.py"),
                    "html", db, "-o", page], check=True, capture_output=True)
    options = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(a)
    driver = webdriver.Chrome(options=options)
    try:
        driver.get("file://" + page)
        while driver.execute_script("return document.body.dataset.ready") != "1":
            time.sleep(0.05)
        return int(driver.execute_script("return document.body.dataset.readyMs"))
    finally:
        driver.quit()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="the build directory (default: build/)")
    ap.add_argument("--runs", type=int, default=3, help="runs per case")
    a = ap.parse_args()
    ringsim = os.path.join(a.build, "ringsim")
    if not os.access(ringsim, os.X_OK):
        print(f"stop_latency.py: no {ringsim} (build first)", file=sys.stderr)
        return 2
    med = statistics.median
    with tempfile.TemporaryDirectory() as d:
        m = model(d)
        base = [ringsim, "-p", m, "-w", "4", "--no-trace", "--timeout",
                str(TIMEOUT), "--inject"]
        for name, fault in (("command crash", "crash:worker=2,step=1"),
                            ("command stall", "stall:worker=2,step=1,ms=600000")):
            t = med(command(base + [fault]) for _ in range(a.runs))
            print(f"{name:14} {t:7.2f} s  wall / timeout {t / TIMEOUT:5.2f}")
        mpirun = shutil.which("mpirun")
        if mpirun:
            cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
                   "3", ringsim, "--transport", "mpi", "-p", m, "-w", "7",
                   "--no-trace", "--timeout", str(TIMEOUT), "--inject",
                   "crash:worker=3,step=1"]
            t = med(command(cmd) for _ in range(a.runs))
            print(f"{'mpi crash':14} {t:7.2f} s  wall / timeout {t / TIMEOUT:5.2f}")
        else:
            print(f"{'mpi crash':14} (no mpirun)")
        try:
            t = med(python_interrupt(a.build) for _ in range(a.runs))
            print(f"{'python ctrl-c':14} {t * 1e3:7.1f} ms to KeyboardInterrupt,"
                  f" / the 5 s the test once allowed {t / 5:.1e}")
        except (OSError, ValueError) as e:
            print(f"{'python ctrl-c':14} (not measured: {e})")
        try:
            large = med(viewer_open_ms(ringsim, d, 64, 64 * 13 * 256, 1024)
                        for _ in range(a.runs))
            small = med(viewer_open_ms(ringsim, d, 2, 2, 4)
                        for _ in range(a.runs))
            print(f"{'viewer open':14} {large:7d} ms for 100,000+ transfers,"
                  f" / a 2-worker run's {small} ms: {large / max(small, 1):.1f}")
        except Exception as e:  # no selenium or browser: say so, go on
            print(f"{'viewer open':14} (not measured: {type(e).__name__}: {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
