#!/usr/bin/python3
"""The docs stay true: every command README.md and docs/*.md show is run
against the freshly built ringsim, and what can be compared is.

    test_docs.py RINGSIM REPO_DIR [Docs.test_name ...]

What counts as a command: in a code block (fenced, or indented by 4), a
line `$ CMD`, whose shown output is the lines after it up to the next
command or blank line, or a line starting with `build/ringsim`, `ringsim `,
`tools/`, `sqlite3 ` or `scripts/` (no output shown). A line holding a
placeholder (MODEL.json, SPEC, N, [...], ...) is a synopsis, not a
command. The commands of one block run in order in a fresh directory that
holds examples/, tools/ and build/ringsim, so relative paths work and a
trace starts at run 1; a file a command reads but the block does not make
is prepared first (a trace of the W=4 example; over.json from the text of
docs/ddp.md).

A command may end `> FILE`: its stdout goes there, for the commands after
it. Compared: the exit status (0, or the `exit N` a shown line ends with); the
files a command writes with -o/--out; and every shown output line, in
order, exactly, except the measured times (wall time, algbw, busbw, the
reference's time), which are masked on both sides. A doc may leave lines
out ("..." or an excerpt), never change one.

Commands quoted inline in running text (`ringsim bench -b 8 ...`) are not
run: only code blocks show commands as commands.

Deliberately long commands are skipped, each by the SKIPPED list below,
which says why; an entry that no longer matches any command fails the
test, so the list cannot go stale.
"""
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import unittest

import helpers

RINGSIM = REPO = None

# (substring of the command, why it is not run here)
# Skipped too in a sanitized build (RINGSIM_SANITIZED, tests/CMakeLists.txt),
# whose worth is the sanitized program's own paths: the Python tools run
# none of it; ringsim model is arithmetic with no worker thread
# (teaching_model_every_algorithm runs it sanitized); ResNet-18's runs are
# model.json's at 60 times the bytes. They took half of docs_commands
# under ASan.
SANITIZED_SKIPPED = [
    ("tools/", "Python"),
    ("ringsim model ", "arithmetic, no worker thread"),
    ("examples/resnet18.json", "model.json's runs at 60 times the bytes"),
]
SKIPPED = [
    ("examples/gpt2_small.json",
     "GPT-2 small: the threaded run at W=4 holds 2 GB of buffers and takes "
     "about a minute; `ringsim model` at W=4096 tens of seconds "
     "(teaching_model_command runs it)"),
    ("--workers 256 --params examples/resnet18.json",
     "256 x ResNet-18 needs about 12 GB and minutes"),
    ("tools/torch_",
     "the PyTorch round trip needs torch and runs gloo processes: "
     "torch_round_trip runs exactly these commands"),
    ("grads/model.json", "reads what tools/torch_grads.py writes (see above)"),
    ("g64/model.json", "reads what tools/torch_grads.py writes (see above)"),
    ("rec/step2/", "reads what ringsim.torch.record_hook writes in a real DDP "
     "job: test_gloo's Ddp.test_record replays such a recording, bit for bit"),
    ("--params cnn.json", "reads what tools/torch_profile.py writes (torch_profile runs "
     "the tool and ringsim step on what it writes)"),
    ("scripts/",
     "installs packages with apt-get and rebuilds everything (minutes)"),
    ("bench --workers 4 -b 8 -e 64M",
     "a sweep up to 64 MiB, 25 iterations a size: about a minute "
     "(bench_table checks the same table on small sizes)"),
    ("bench --workers 2,4,8 -b 64K -e 64M",
     "the busbw sweep up to 64 MiB at W=8: minutes (scripts/doc-images)"),
    ("compare perf.db", "draws the busbw sweep's trace (see above)"),
    ("bench --workers 4,8 --algo all -b 8 -e 64M --json",
     "every algorithm up to 64 MiB at W=4 and 8: about six minutes "
     "(tools_compare_algorithms_crossovers runs the same on small sizes)"),
    ("compare --bench bench-algos.jsonl",
     "draws that sweep's output (scripts/doc-images draws the recorded one)"),
]

COMMAND_START = ("build/ringsim", "ringsim ", "tools/", "sqlite3 ", "scripts/")
SYNOPSIS = re.compile(r"\[|\.\.\.|\bMODEL\.json\b|\bSPEC\b|\bN\b|\bCOMMAND\b|"
                      r"\bTRACE\b|\bPATTERN\b")
EXIT_NOTE = re.compile(r"\s{2,}exit (\d+)\b.*$")
# Measured times differ from run to run: masked on both sides.
MASKS = [(re.compile(r"[0-9.]+ s wall   algbw [0-9.]+ GB/s   busbw [0-9.]+ GB/s"
                     r"   \((.*?): [0-9.]+ s\)"),
          r"T s wall   algbw B GB/s   busbw B GB/s   (\1: T s)"),
         (re.compile(r"measured wall [0-9.]+ us"), "measured wall T us")]


def doc_files():
    docs = os.path.join(REPO, "docs")
    return [os.path.join(REPO, "README.md")] + sorted(
        os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))


def code_blocks(text):
    """(language, lines) of each code block, dedented: fenced ones with their
    language, indented ones (4 or more spaces after a blank line) as ''."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            lang = line.strip()[3:]
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            yield lang, lines[i + 1:j]
            i = j + 1
        elif (line.startswith("    ") and line.strip() and i > 0
              and not lines[i - 1].strip()):
            indent = len(line) - len(line.lstrip())
            j = i
            while j < len(lines) and (lines[j].startswith(" " * indent) or not lines[j].strip()):
                j += 1
            while j > i and not lines[j - 1].strip():
                j -= 1
            yield "", [l[indent:] for l in lines[i:j]]
            i = j
        else:
            i += 1


def commands(lines):
    """(command text, shown output lines or None) of a block's commands.
    A command whose quotes or trailing backslash leave it open goes on
    over the next lines."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        shown = line.startswith("$ ")
        text = line[2:] if shown else line
        i += 1
        if not shown and not text.startswith(COMMAND_START):
            continue
        while True:
            if text.endswith("\\"):
                text = text[:-1] + " " + lines[i].strip()
                i += 1
                continue
            try:
                shlex.split(text, comments=True)
            except ValueError:  # an open quote: the command goes on
                text += "\n" + lines[i]
                i += 1
                continue
            break
        output = None
        if shown:
            output = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
        # A listing (`tools/x.py   what it is`) is no command either.
        bare = text.split("#")[0]
        if not SYNOPSIS.search(bare) and not re.search(r"\S {3,}\S", bare):
            out.append((text, output))
    return out


def masked(line):
    for pattern, replacement in MASKS:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def sqlite3_cli(argv):
    """`sqlite3 DB SQL` as the command-line shell prints it: rows, columns
    joined by |."""
    con = sqlite3.connect(argv[1])  # a path from the block's directory
    try:
        rows = con.execute(argv[2]).fetchall()
    except sqlite3.Error as e:
        return 1, "", f"Error: {e}\n"
    finally:
        con.close()
    return 0, "".join("|".join("" if v is None else str(v) for v in row) + "\n"
                      for row in rows), ""


class Docs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def fresh_dir(self, name):
        d = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.join(d, "build"))
        os.symlink(os.path.join(REPO, "examples"), os.path.join(d, "examples"))
        os.symlink(os.path.join(REPO, "tools"), os.path.join(d, "tools"))
        os.symlink(RINGSIM, os.path.join(d, "build", "ringsim"))
        return d

    def prepare(self, argv, cwd):
        """Files a command reads that its block did not make."""
        if argv[0] == "sqlite3" or argv[0].startswith("tools/"):
            for arg in argv[1:]:
                if arg.endswith(".db") and not os.path.exists(os.path.join(cwd, arg)):
                    self.run_ok([RINGSIM, "--workers", "4", "--params", "examples/model.json",
                                 "--segment-bytes", "64K", "--trace", arg], cwd)
        for arg in argv:
            if arg == "over.json" and not os.path.exists(os.path.join(cwd, arg)):
                with open(os.path.join(REPO, "docs", "ddp.md")) as f:
                    m = re.search(r"`over\.json`: `(\{.*?\})`", f.read(), re.S)
                self.assertIsNotNone(m, "docs/ddp.md no longer gives over.json")
                with open(os.path.join(cwd, arg), "w") as f:
                    f.write(m.group(1))

    def run_ok(self, argv, cwd):
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, f"{argv}: {p.stderr}")

    def execute(self, argv, cwd):
        if argv[0] == "sqlite3":
            return sqlite3_cli([argv[0], os.path.join(cwd, argv[1]), *argv[2:]])
        if ">" in argv[:-1]:  # `CMD > FILE`: stdout into FILE, in the block's directory
            at = argv.index(">")
            rc, out, err = self.execute(argv[:at], cwd)
            with open(os.path.join(cwd, argv[at + 1]), "w") as f:
                f.write(out)
            return rc, "", err
        if argv[0] in ("ringsim", "build/ringsim"):
            argv = [RINGSIM] + argv[1:]
        elif argv[0].startswith("tools/"):
            argv = [sys.executable, os.path.join(REPO, argv[0])] + argv[1:]
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout, p.stderr

    def check_command(self, text, shown, cwd):
        argv = shlex.split(text, comments=True)
        self.prepare(argv, cwd)
        want_rc = 0
        note = re.search(r"#\s*exit (\d+)\b", text)  # "# exit 3" beside the command
        if note:
            want_rc = int(note.group(1))
        want = []
        for line in shown or []:
            note = EXIT_NOTE.search(line)
            if note:
                want_rc = int(note.group(1))
                line = line[:note.start()]
            if line.strip() != "...":
                want.append(masked(line))
        rc, out, err = self.execute(argv, cwd)
        self.assertEqual(rc, want_rc, f"exit status; stderr: {err}")
        got = [masked(l) for l in (out + err).splitlines()]
        at = 0
        for line in want:
            try:
                at = got.index(line, at) + 1
            except ValueError:
                self.fail(f"the doc shows {line!r}, which the command does not print "
                          f"(in this order); it printed:\n{out}{err}")
        for flag in ("-o", "--out"):
            if flag in argv:
                path = os.path.join(cwd, argv[argv.index(flag) + 1])
                self.assertTrue(os.path.getsize(path) > 0, f"{path} not written")

    # docs-1: every command shown runs as the docs say it does.
    def test_commands(self):
        ran = skipped_by = 0
        used = set()
        sanitized = os.environ.get("RINGSIM_SANITIZED")
        for path in doc_files():
            name = os.path.relpath(path, REPO)
            with open(path) as f:
                text = f.read()
            for b, (lang, lines) in enumerate(code_blocks(text)):
                if lang not in ("", "sh", "shell", "console", "bash"):
                    continue
                cwd = None
                for command, shown in commands(lines):
                    skip = [s for s in SKIPPED if s[0] in command]
                    if skip:
                        used.update(s[0] for s in skip)
                        skipped_by += 1
                        continue
                    if sanitized and any(s[0] in command for s in SANITIZED_SKIPPED):
                        skipped_by += 1
                        continue
                    if cwd is None:
                        cwd = self.fresh_dir(f"{name.replace('/', '_')}-{b}")
                    with self.subTest(doc=name, command=command[:100]):
                        self.check_command(command, shown, cwd)
                    ran += 1
        print(f"\n{ran} commands run, {skipped_by} skipped"
              f"{f' (RINGSIM_SANITIZED={sanitized})' if sanitized else ''}", file=sys.stderr)
        self.assertGreaterEqual(ran, 15)
        self.assertEqual({s[0] for s in SKIPPED} - used, set(),
                         "SKIPPED entries that match no command any more")

    # docs-2: every ```sql query in the docs runs on a real trace and gives
    # rows; ddp.md's bytes per bucket are the run's, whatever the dtype
    # (run 2: step_three.json's three params in f16, two buckets at a
    # 1 MiB cap: ResNet-18's f16 run took 21 s under ASan).
    def test_sql_blocks(self):
        d = self.fresh_dir("sql")
        db = os.path.join(d, "t.db")
        half = os.path.join(d, "h.json")
        with open(os.path.join(REPO, "examples", "step_three.json")) as f:
            model = json.load(f)
        for p in model["params"]:
            p["dtype"] = "f16"
        with open(half, "w") as f:
            json.dump(model, f)
        reports = []
        for args in (["examples/model.json", "--segment-bytes", "64K"],
                     [half, "--bucket-mb", "1"]):
            p = subprocess.run([RINGSIM, "-w", "3", "--trace", db, "--json", "-p", *args],
                               cwd=d, capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            reports.append(json.loads(p.stdout))
        # runs 3 and 4: a training step's (ringsim step --trace), for the
        # queries of its intervals
        p = subprocess.run([RINGSIM, "step", "-p", "examples/step_three.json", "-w", "2",
                            "--net", "latency=1us,bandwidth=1GB/s", "--bucket-mb", "1",
                            "--segment-bytes", "1M", "--trace", db],
                           cwd=d, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        con = sqlite3.connect(db)
        queries = 0
        for path in doc_files():
            with open(path) as f:
                blocks = [lines for lang, lines in code_blocks(f.read()) if lang == "sql"]
            for lines in blocks:
                sql = "\n".join(lines)
                for run_id in (3, 4) if "step_interval" in sql else (1, 2):
                    q = (sql.replace(":run", str(run_id)).replace(":a", "1")
                         .replace(":b", "2").replace(":elem", "500"))
                    with self.subTest(doc=os.path.relpath(path, REPO), query=sql[:60], run=run_id):
                        rows = con.execute(q).fetchall()
                        self.assertGreater(len(rows), 0)
                        # bytes per bucket, from the param table
                        if re.search(r"FROM param\b", sql) and "AS bytes" in sql \
                                and run_id <= 2:
                            want = sorted((i, b["bytes"]) for i, b in
                                          enumerate(reports[run_id - 1]["buckets"]))
                            self.assertEqual(sorted((r[0], r[2]) for r in rows), want)
                queries += 1
        con.close()
        self.assertGreaterEqual(queries, 9)

    # docs-3: the error messages the docs quote are the ones ringsim prints
    # for those inputs (a quote may end in "..." and leave out the
    # "(see ringsim --help)" hint).
    def test_error_messages(self):
        d = self.fresh_dir("errors")
        models = {
            "shape_type": '{"params": [{"name": "w", "shape": "x"}]}',
            "no_name": '{"params": [{"shape": [2]}]}',
            "extra": '{"params": [{"name": "w", "shape": [2]}], "extra": 1}',
            "dup": '{"params": [{"name": "w", "shape": [2]}, {"name": "w", "shape": [1]}]}',
            "dup3": '{"params": [{"name": "a", "shape": [2]}, {"name": "w", "shape": [1]},'
                    ' {"name": "w", "shape": [1]}]}',
            "neg": '{"params": [{"name": "w", "shape": [2, -1]}]}',
            "neg0": '{"params": [{"name": "a", "shape": [1]}, {"name": "w", "shape": [-2]}]}',
            "big": '{"params": [{"name": "w", "shape": [1000000, 1000000]}]}',
            "dtype": '{"params": [{"name": "w", "shape": [2], "dtype": "i32"}]}',
            "two": None,  # examples/two_workers.json, named m.json
            "small": '{"params": [{"name": "w", "shape": [8]}]}',
            "values": '{"params": [{"name": "fc.weight", "shape": [4, 3]}], "grads": ['
                      '{"fc.weight": [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3]},'
                      '{"fc.weight": [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2]}]}',
        }
        cases = [  # (doc, model text or None, extra args)
            ("reliability.md", "shape_type", []), ("reliability.md", "no_name", []),
            ("reliability.md", "extra", []), ("reliability.md", "dup", []),
            ("reliability.md", "neg", []), ("reliability.md", "big", []),
            ("reliability.md", "dtype", []), ("model-json.md", "dtype", []),
            ("model-json.md", "extra", []), ("model-json.md", "dup3", []),
            ("model-json.md", "neg0", []), ("model-json.md", "values", []),
            ("reliability.md", None, ["-p", "two_workers.json", "-w", "3"]),
            ("model-json.md", "two", ["-w", "3"]),
            ("reliability.md", None, ["-p", "two_workers.json", "-w", "0"]),
            ("reliability.md", None, ["-p", "two_workers.json", "--bogus"]),
            ("reliability.md", None, ["-p", "two_workers.json", "--trace", "t.db"]),
            ("reliability.md", None, ["-p", "missing.json"]),
            ("reliability.md", None, ["-p", "two_workers.json", "--out", "/nonexistent/x.st"]),
            ("reliability.md", None, ["-p", "two_workers.json", "--inject", "boom:worker=1"]),
            ("reliability.md", "small", ["-w", "4", "--inject", "crash:worker=9"]),
        ]
        with open(os.path.join(REPO, "examples", "two_workers.json")) as f:
            two = f.read()
        with open(os.path.join(d, "two_workers.json"), "w") as f:
            f.write(two)
        for doc, model, args in cases:
            with self.subTest(doc=doc, model=model, args=args):
                if model:
                    with open(os.path.join(d, "m.json"), "w") as f:
                        f.write(models[model] or two)
                    args = ["-p", "m.json", *args]
                p = subprocess.run([RINGSIM, "--no-trace", *args], cwd=d,
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 2, p.stderr)
                line = p.stderr.strip()
                with open(os.path.join(REPO, "docs", doc)) as f:
                    text = f.read()
                quoted = re.findall(r"`(ringsim: [^`]*)`", text)
                quoted += [l.strip() for lang, lines in code_blocks(text)
                           for l in lines if l.strip().startswith("ringsim: ")]
                matches = [q for q in quoted if len(q) > 20 and (
                    line == q or line.startswith(q.rstrip(". ").rstrip()))]
                self.assertTrue(matches, f"docs/{doc} does not quote {line!r}")

    # docs-4: every picture the docs show is one scripts/doc-images makes,
    # and docs/img holds nothing the docs do not show.
    def test_images(self):
        shown = set()
        for path in doc_files():
            with open(path) as f:
                shown.update(re.findall(r"\]\((?:docs/)?img/([\w.-]+\.png)\)", f.read()))
        with open(os.path.join(REPO, "scripts", "doc-images")) as f:
            script = f.read()
        made = set(re.findall(r"docs/img/([\w.-]+\.png)", script))
        made |= {f"{p}.png" for p in re.findall(r"for picture in ([\w -]+);", script)[0].split()}
        self.assertGreaterEqual(len(shown), 6)
        self.assertEqual(shown - made, set(), "shown in the docs, not made by scripts/doc-images")
        self.assertEqual(set(os.listdir(os.path.join(REPO, "docs", "img"))) - shown, set(),
                         "in docs/img but shown nowhere")

    # docs-5: where the docs list an option's choices (`--op sum|avg|...`),
    # they list exactly the ones the command takes (as its usage error
    # names them), for `ringsim` or, in a paragraph about it, `ringsim bench`.
    def test_option_choices(self):
        def accepted(bench, option):
            argv = [RINGSIM] + (["bench"] if bench else ["-p", "x.json"]) + [option, "bogus"]
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            m = re.search(r"expected (.*?) \(see", p.stderr)
            self.assertIsNotNone(m, p.stderr)
            return set(re.split(r", | or ", m.group(1)))

        found = 0
        for path in doc_files():
            with open(path) as f:
                text = f.read()
            for para in re.split(r"\n\s*\n", text):
                for option, choices in re.findall(r"`(--?[a-z-]+)\s+([a-z0-9][a-z0-9-]*(?:\\?\|[a-z0-9][a-z0-9:=R-]*)+)`",
                                                  para):
                    bench = "bench" in para and option in ("-d", "--op", "--loop")
                    with self.subTest(doc=os.path.relpath(path, REPO), option=option):
                        self.assertEqual(set(choices.replace("\\", "").split("|")),
                                         accepted(bench, option))
                    found += 1
        self.assertGreaterEqual(found, 6)


    # docs-6: docs/algorithms.md's tables of a cluster are what
    # scripts/crossover-table makes of this ringsim now.
    def test_crossover_table(self):
        p = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "crossover-table"),
                            "--ringsim", RINGSIM,
                            "--check", os.path.join(REPO, "docs", "algorithms.md")],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(REPO, "docs", "algorithms.md")) as f:
            self.assertIn("| 512 | 4,096 | 1 GiB |", f.read())

    # docs-7: docs/cli.md's --op and --average rows say where avg divides in
    # each mode the command takes, and who divides that way: --op avg is not
    # "SUM divided by W, as DDP does" (DDP's reducer multiplies by a rounded
    # 1/W before the sum; its hooks divide first); ncclAvg on floats is
    # pre-mul (NCCL's hostToDevRedOp: ncclDevPreMulSum), post only on
    # integers. Each mode runs, and pre and pre-mul differ at W=3 as the row
    # says (not the same bits when W is not a power of two).
    def test_average_modes(self):
        with open(os.path.join(REPO, "docs", "cli.md")) as f:
            rows = {}  # each option's first row: the run's table
            for m in re.finditer(r"^\| `(--op|--average)[^`]*` \|.*$", f.read(), re.M):
                rows.setdefault(m.group(1), m.group(0))
        self.assertNotIn("as DDP does", rows["--op"])
        row = rows["--average"]
        for mode, who in (("post", "integer"), ("pre", "allreduce_hook"),
                          ("pre-mul", "PyTorch 1.13's DDP reducer")):
            with self.subTest(mode=mode):
                m = re.search(r"`%s`: ([^.]*)" % re.escape(mode), row)
                self.assertIsNotNone(m, row)
                self.assertIn("W", m.group(1))
        self.assertRegex(row, r"`pre-mul`:[^|]*DDP reducer[^|]*`ncclAvg` on float16, bfloat16, "
                              r"float32 and float64")
        self.assertRegex(row, r"`post`:[^|]*`ncclAvg` does this only on integer types")
        self.assertRegex(row, r"`pre`:[^|]*DDP's communication hooks")
        outs = {}
        with tempfile.TemporaryDirectory() as tmp:
            for mode in ("post", "pre", "pre-mul"):
                out = os.path.join(tmp, f"{mode}.safetensors")
                p = subprocess.run([RINGSIM, "-w", "3", "-p", os.path.join(REPO, "examples",
                                    "model.json"), "--average", mode, "--no-trace", "--out", out],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(out, "rb") as f:
                    outs[mode] = f.read()
        self.assertNotEqual(outs["pre"], outs["pre-mul"], "W=3: 1/3 rounds")


def main():
    helpers.main(globals(), "RINGSIM", "REPO")


if __name__ == "__main__":
    main()
