#!/usr/bin/python3
"""The layering of src/, checked: docs/architecture.md gives the folders'
order in one line (`base < net < ... < cli`); a file may include a header
of its own folder or of a folder before it, and may call a function owned
by its own folder or one before it. A function is owned by the folder of
the src/ header that declares it or defines it inline (core/job.h
declares the table mpi/ fills: core owns that interface), else by the folder of the .c file
that defines it (the public calls of include/ringsim/, each by where it is
implemented). Folders on one rung (`run, mpi`) may not reach each other.

And one name: "channel" is NCCL's (one of C parallel rings, each over its
share of the data); the bounded FIFO on an edge is a queue (net/queue.h).
No line of src/ or include/ outside NCCL's files (src/algo/nccl*) says
"channel" for the FIFO (fifo_channel_lines).

    test_layers.py RINGSIM SOURCE_DIR [Layers.test_name ...]   (RINGSIM unused:
    every test file of tests/ is given the command first)
"""
import collections
import os
import re
import sys
import unittest

ROOT = None

STRIP = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\])*\"", re.S)
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \t*]*?\b(rs_\w+)\s*\([^;{]*?\)\s*\{",
                        re.M | re.S)
DECLARATION = re.compile(r"^(?!return\b)[A-Za-z_][\w \t*]*?\b(rs_\w+)\s*\([^;{]*?\)\s*"
                         r"(?:__attribute__\s*\(\(.*?\)\))?\s*;", re.M | re.S)
INLINE = re.compile(r"^static\s+inline\b[\w \t*]*?\b(rs_\w+)\s*\(", re.M)
CALL = re.compile(r"\b(rs_\w+)\s*\(")
INCLUDE = re.compile(r'#include "([a-z]+)/')


def layer_order(architecture_md):
    """{folder: rung} from the order line of docs/architecture.md."""
    with open(architecture_md) as f:
        lines = [l.strip() for l in f if re.match(r"^\s+base < ", l)]
    if len(lines) != 1:
        raise AssertionError(f"{architecture_md}: expected one 'base < ...' line, found "
                             f"{len(lines)}")
    rank = {}
    for rung, group in enumerate(lines[0].split("<")):
        for name in group.split(","):
            rank[name.strip()] = rung
    return rank


def violations(src, rank):
    """The includes and calls that reach up, or across a rung, as lines
    'src/FOLDER/FILE: includes X/' or ': calls NAME (X/)'."""
    texts = {}
    for folder in rank:
        for name in sorted(os.listdir(os.path.join(src, folder))):
            if name.endswith((".c", ".h")):
                with open(os.path.join(src, folder, name)) as f:
                    texts[(folder, name)] = f.read()
    unknown = sorted(set(os.listdir(src)) - set(rank))
    if unknown:
        return [f"src/{u}/: a folder the order in docs/architecture.md leaves out"
                for u in unknown]
    owner = {}
    for (folder, name), text in texts.items():
        if name.endswith(".c"):
            for m in DEFINITION.finditer(STRIP.sub(" ", text)):
                owner.setdefault(m.group(1), folder)
    for (folder, name), text in texts.items():
        if name.endswith(".h"):
            code = STRIP.sub(" ", text)
            for pattern in (DECLARATION, INLINE):
                for m in pattern.finditer(code):
                    owner[m.group(1)] = folder
    bad = set()
    for (folder, name), text in texts.items():
        for m in INCLUDE.finditer(text):
            other = m.group(1)
            if other in rank and other != folder and not rank[other] < rank[folder]:
                bad.add(f"src/{folder}/{name}: includes {other}/")
        for called in set(CALL.findall(STRIP.sub(" ", text))):
            other = owner.get(called)
            if other and other != folder and not rank[other] < rank[folder]:
                bad.add(f"src/{folder}/{name}: calls {called} ({other}/)")
    return sorted(bad)


# What "chan" may be on a line without meaning the FIFO: words that hold
# it (change, unchanged, exchange), NCCL's names (NCCL_MIN_NCHANNELS,
# MAXCHANNELS, OPT_CHANNELS, nChannels, --channels, the pick's .channels),
# and in the trace's files the column of traces from before the rename.
NOT_FIFO = re.compile(r"(?i:\w*chang\w*)|\w*CHANNELS\w*|nChannels|--channels|\"channels\"|"
                      r"(?:\.|->)(?:min_|max_)?channels\b|\b(?:min|max)_channels\b")
LEGACY = ("src/io/trace_schema.c", "src/io/trace_write.c", "src/io/trace_internal.h")
# A word that holds "channel": NCCL's channels, in the engine or not.
CHANNEL_WORD = re.compile(r"(?i:\w*channel\w*)")
# The FIFO's own words: a line with one of them and "chan" means the FIFO,
# NCCL named nearby or not.
FIFO_WORDS = re.compile(r"slot|fifo|copy-free|copying|direct|spin|\bhead\b|\btail\b|"
                        r"\bchan\b|rs_+chan|channel\.[ch]\b|RS_CHAN|CHANNEL_H", re.I)


def fifo_channel_lines(path, text):
    """The lines of text (a file of src/ or include/ at path) that say
    "chan" for the FIFO, as 'path:line: text'. A mention is NCCL's when the
    line or one of the two before or after it names NCCL and the line has
    none of the FIFO's words; NCCL's own files are not read."""
    if re.match(r"src/algo/nccl", path):
        return []
    lines = text.splitlines()
    bad = []
    for i, line in enumerate(lines):
        rest = NOT_FIFO.sub(" ", line)
        if path in LEGACY:
            rest = rest.replace("channel_slots", " ")
        if "chan" not in rest.lower():
            continue
        nccl = any("nccl" in l.lower() for l in lines[max(0, i - 2):i + 3])
        # NCCL's channels run in the engine too (the ring's: --channels,
        # docs/algorithms.md "Channels"): "channel" in a word is theirs;
        # "chan" alone, as the FIFO's rs_chan_t had it, is not
        nccl = nccl or "chan" not in CHANNEL_WORD.sub(" ", rest).lower()
        if nccl and not FIFO_WORDS.search(rest):
            continue
        bad.append(f"{path}:{i + 1}: {line.strip()}")
    return bad


class Layers(unittest.TestCase):
    # layers-1: every include and call of src/ goes down the order
    def test_arrows_go_down(self):
        rank = layer_order(os.path.join(ROOT, "docs", "architecture.md"))
        self.assertIn("cli", rank)
        self.assertEqual(violations(os.path.join(ROOT, "src"), rank), [])

    # layers-2: the check sees an arrow up, of either kind (in a copy of
    # two files: an include of run/ from net/, a call of rs_run_create
    # from algo/), and a folder the order leaves out
    def test_the_check_catches_an_arrow_up(self):
        import shutil
        import tempfile
        rank = layer_order(os.path.join(ROOT, "docs", "architecture.md"))
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "src")
            shutil.copytree(os.path.join(ROOT, "src"), src)
            with open(os.path.join(src, "net", "up.c"), "w") as f:
                f.write('#include "run/run.h"\n')
            with open(os.path.join(src, "algo", "up.c"), "w") as f:
                f.write("static int up(void) { return rs_run_create(0, 0, 0, 0); }\n")
            self.assertEqual(violations(src, rank),
                             ["src/algo/up.c: calls rs_run_create (run/)",
                              "src/net/up.c: includes run/"])
            os.mkdir(os.path.join(src, "extra"))
            self.assertEqual(violations(src, rank),
                             ["src/extra/: a folder the order in docs/architecture.md "
                              "leaves out"])


    # layers-3: "channel" is NCCL's; the FIFO on an edge is a queue. No
    # line of src/ or include/ but NCCL's files uses "chan" for the FIFO
    # (`grep -rn -i chan src include`, each hit judged as above): "chan"
    # alone needs NCCL named nearby, and no line says "channel" with the
    # FIFO's words.
    def test_no_channel_means_the_fifo(self):
        bad = []
        for top in ("src", "include"):
            for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
                for name in sorted(names):
                    if name.endswith((".c", ".h")):
                        full = os.path.join(dirpath, name)
                        with open(full) as f:
                            bad += fifo_channel_lines(os.path.relpath(full, ROOT), f.read())
        self.assertEqual(bad, [])
        self.assertTrue(os.path.exists(os.path.join(ROOT, "src", "net", "queue.c")))
        self.assertFalse(os.path.exists(os.path.join(ROOT, "src", "net", "channel.c")))

    # layers-4: that check tells the FIFO from NCCL's channels
    def test_the_check_tells_the_fifo_from_nccl(self):
        text = "\n".join([
            "/* a copying channel keeps 8 slots */",             # 1 the FIFO
            "rs_chan_t *c = &e->chan;",                          # 2
            "#include \"net/channel.h\"",                       # 3
            "/* wakes every chan */",                            # 4 no NCCL near
            "",
            "",
            "/* NCCL runs 16 channels, */",                      # 7 NCCL's
            "/* each a ring (its channels' rings) */",           # 8 NCCL a line off
            "f.min_channels = opt->nccl.channels;",              # 9 NCCL's names
            "/* exchange, unchanged */",                         # 10 other words
            "int n; /* NCCL_STEPS slots per channel */",          # 11 NCCL, FIFO words
            "\"segment_elems, channel_slots, timeout_s\"",       # 12 the old column
            "H(\"copy-free channels (NCCL's direct mode)\")",     # 13 NCCL, FIFO words
        ])
        self.assertEqual([l.split(":")[1] for l in fifo_channel_lines("src/x/a.c", text)],
                         ["1", "2", "3", "4", "11", "12", "13"])
        self.assertEqual([l.split(":")[1] for l in
                          fifo_channel_lines("src/io/trace_write.c", text)],
                         ["1", "2", "3", "4", "11", "13"])
        self.assertEqual(fifo_channel_lines("src/algo/nccl_tune.c", text), [])


def main():
    global ROOT
    if len(sys.argv) < 3:
        sys.exit("usage: test_layers.py RINGSIM SOURCE_DIR [Layers.test_name ...]")
    ROOT = os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[3:]])


if __name__ == "__main__":
    main()
