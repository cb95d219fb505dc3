#!/usr/bin/python3
"""Parameters, counted (issue 47; STYLE.md: "where a function needs nine
parameters, it needs a struct"): no function defined in src/ takes more
than MAX_PARAMS (8), and fewer than TOO_MANY_OVER_SIX (15) take more than
6. A function that needs more takes a parameter object: what several
functions pass together, named once (step.c's timeline_t, model.c's
sim_args_t, the public rs_sim_setup_t and rs_powersgd_io_t).

The definitions and their signatures are universal-ctags' (`ctags
--kinds-C=f --fields=+S`, every .c and .h under src/ read as C: static
inline functions of headers count, prototypes and macros do not). A
signature's parameters are its top-level commas plus one: a function
pointer's own parameters are one parameter, `(void)` is none, `...` one.
Without ctags the tests are skipped saying so (failed where
RINGSIM_REQUIRE_PEERS=1); scripts/deps.sh installs universal-ctags.

    test_params.py RINGSIM SOURCE_DIR [Params.test_name ...]   (RINGSIM
    unused: every test file of tests/ is given the command first)
"""
import os
import shutil
import subprocess
import tempfile
import unittest

import helpers

ROOT = None  # the source tree (its second argument)

MAX_PARAMS = 8          # no function over this
OVER = 6                # ... and of those over this,
TOO_MANY_OVER_SIX = 15  # fewer than this many


def parameters(signature):
    """The parameters of a signature as ctags gives it, "(int a,void (*
    f)(int x,int y))": 2."""
    inner = signature.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        raise ValueError(f"not a parameter list: {signature!r}")
    inner = inner[1:-1].strip()
    if inner in ("", "void"):
        return 0
    depth, count = 0, 1
    for ch in inner:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
    return count


def definitions(src):
    """Every function defined in the .c and .h files under src, as
    (parameters, 'src/DIR/FILE:LINE', name), sorted; the paths relative
    to src's parent."""
    ctags = shutil.which("ctags")
    if not ctags:
        helpers.peer_missing("params_* count parameters with universal-ctags, "
                             "not found: apt-get install universal-ctags "
                             "(scripts/deps.sh test installs it)")
    files = sorted(os.path.relpath(os.path.join(d, n), os.path.dirname(src))
                   for d, _, names in os.walk(src) for n in names
                   if n.endswith((".c", ".h")))
    out = subprocess.run(
        [ctags, "-x", "--languages=C", "--langmap=C:.c.h", "--kinds-C=f",
         "--fields=+S", "--_xformat=%N\t%F\t%n\t%S", "-o", "-", *files],
        cwd=os.path.dirname(src), capture_output=True, text=True, check=True)
    rows = []
    for line in out.stdout.splitlines():
        name, path, number, signature = line.split("\t")
        rows.append((parameters(signature), f"{path}:{number}", name))
    return sorted(rows)


def offenders(rows):
    """What breaks the limits, as lines naming each function (empty: none):
    every function over MAX_PARAMS, and every one over OVER when there are
    TOO_MANY_OVER_SIX or more of them."""
    over_max = [r for r in rows if r[0] > MAX_PARAMS]
    over = [r for r in rows if r[0] > OVER]
    bad = [f"{where}: {name} takes {n} parameters, more than {MAX_PARAMS}"
           for n, where, name in over_max]
    if len(over) >= TOO_MANY_OVER_SIX:
        bad.append(f"{len(over)} functions take more than {OVER} parameters, "
                   f"at most {TOO_MANY_OVER_SIX - 1} may:")
        bad += [f"  {where}: {name} takes {n}" for n, where, name in
                sorted(over, key=lambda r: (-r[0], r[1]))]
    return bad


# A file of every shape a definition takes, and what must not count.
SHAPES_C = """\
/* int fake(int a, int b, int c, int d, int e, int f, int g, int h, int i) {
 * a comment's "definition" is none */
#define MACRO(a, b, c, d, e, f, g, h, i) ((a) + (i))
int proto(int a, int b, int c, int d, int e, int f, int g, int h, int i);
static const char *text = "int str(int a, int b, int c) { }";
struct table { int (*fn)(int a, int b, int c, int d, int e, int f, int g); };

static int nine(int a, int b, int c,
                int d, int e, int f,
                int g, int h, int i) {
  return a + b + c + d + e + f + g + h + i;
}

int pointers(void (*fn)(void *ctx, int i), void *ctx,
             char (*err)[64]) {
  (void)fn;
  return ctx != 0 && err != 0;
}

int none(void) { return 0; }

int say(char *errmsg, int code, const char *fmt, ...) {
  return errmsg && fmt ? code : 0;
}

static int seven(int a, int b, int c, int d, int e, int f, int g)
{
  return a + b + c + d + e + f + g;
}
"""
SHAPES_H = """\
#ifndef SHAPES_H
#define SHAPES_H
static inline int eight(int a, int b, int c, int d, int e, int f, int g,
                        int h) {
  return a + h;
}
int declared(int a, int b, int c, int d, int e, int f, int g, int h, int i);
#endif
"""


class Params(unittest.TestCase):
    # params-1: no function of src/ over MAX_PARAMS, fewer than
    # TOO_MANY_OVER_SIX over OVER (the message names each one)
    def test_no_function_over_the_limits(self):
        rows = definitions(os.path.join(ROOT, "src"))
        self.assertGreater(len(rows), 500)  # (ctags read the tree)
        bad = offenders(rows)
        self.assertEqual(bad, [], "\n" + "\n".join(bad))

    # params-2: the count sees every shape of a definition (split over
    # lines, its brace on the next line, function pointers and arrays of
    # parameters, (void), a variadic one, static inline in a header) and
    # nothing else (a prototype, a macro, a comment, a string, a struct
    # member); and the check names a function over the limit
    def test_the_count_sees_every_shape(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "src", "x")
            os.makedirs(src)
            with open(os.path.join(src, "shapes.c"), "w") as f:
                f.write(SHAPES_C)
            with open(os.path.join(src, "shapes.h"), "w") as f:
                f.write(SHAPES_H)
            rows = definitions(os.path.join(tmp, "src"))
        self.assertEqual(sorted((name, n) for n, _, name in rows),
                         [("eight", 8), ("nine", 9), ("none", 0),
                          ("pointers", 3), ("say", 4), ("seven", 7)])
        self.assertIn(("src/x/shapes.c:8", "nine"), [r[1:] for r in rows])
        self.assertEqual(offenders(rows),
                         ["src/x/shapes.c:8: nine takes 9 parameters, more "
                          "than 8"])

    # params-3: the count of those over OVER: TOO_MANY_OVER_SIX - 1 pass,
    # TOO_MANY_OVER_SIX fail, listing them all, the most first
    def test_too_many_over_six_are_listed(self):
        rows = [(7, f"src/x/a.c:{i}", f"f{i}") for i in range(1, 14)]
        rows.append((8, "src/x/b.c:1", "g"))
        self.assertEqual(offenders(rows), [])
        rows.append((7, "src/x/a.c:99", "h"))
        bad = offenders(rows)
        self.assertEqual(bad[0], "15 functions take more than 6 parameters, "
                                 "at most 14 may:")
        self.assertEqual(bad[1], "  src/x/b.c:1: g takes 8")
        self.assertEqual(len(bad), 16)
        self.assertIn("  src/x/a.c:99: h takes 7", bad)


def main():
    helpers.main(globals(), "RINGSIM", "ROOT")


if __name__ == "__main__":
    main()
