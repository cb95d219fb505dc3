#!/usr/bin/python3
"""The public API is what the headers say it is (docs/architecture.md).

    test_api.py exports LIBRINGSIM_SO REPO_DIR CC NM
    test_api.py headers REPO_DIR CC CXX BUILD_INCLUDE_DIR
    test_api.py opaque REPO_DIR CC BUILD_INCLUDE_DIR

The build generates ringsim/version.h (ringsim.h includes it): in
BUILD_INCLUDE_DIR, or in include/ beside LIBRINGSIM_SO (macros alone, it
is compiled through ringsim.h).

exports: the functions include/ringsim/*.h declare with RS_API, read from
the headers as the preprocessor gives them (RS_API defined as a marker),
are exactly the functions libringsim.so exports (`nm -D --defined-only`),
both ways; it exports no rs__ internal and nothing else of ours (names
starting with '_' are the toolchain's: _init, a sanitizer's); every function
a public header declares carries RS_API (one without would be documented but
hidden), and none in include/ringsim/internal/ does (those are the command's
own, hidden); and every C function the Python package calls (python/ringsim:
lib.rs_... and _lib.py's prototypes) is exported.

headers: every header under include/ringsim/ compiles on its own as C11 and
as C++ (C++11 and the compiler's default), -Wall -Wextra -Werror -pedantic
(so a program in either language can include it: no flexible array
member, no C11 atomics); and none includes a C header that C++ has not
got (<stdatomic.h>, <threads.h>, ...), which a C++ compiler may accept on
its own.

opaque: rs_config_t is opaque to a program outside ringsim. Against the
public headers alone (include/ringsim/ without internal/, as installed), a
C file that takes sizeof(rs_config_t) must fail to compile, for the type's
being incomplete, while one that makes a config through rs_config_new and
rs_config_set compiles; and with include/ringsim/internal/config.h (the
library's, the command's and the C tests' view) sizeof compiles, so the
layout is still there for them.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARKER = "__rs_api_marker__"
# -I of the build's generated headers (ringsim/version.h), set by main
GENERATED = []


def fail(problems):
    for p in problems:
        print("FAIL: " + p)
    sys.exit(1)


def headers(repo, sub=""):
    return sorted(glob.glob(os.path.join(repo, "include", "ringsim", sub,
                                         "*.h")))


def statements(text):
    """The file-scope statements of preprocessed C text (split at ';' and at
    the '}' closing a block that no ';' follows), whitespace collapsed."""
    out, cur, depth = [], [], 0
    for ch in text:
        cur.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            out.append(" ".join("".join(cur).split()))
            cur = []
    rest = " ".join("".join(cur).split())
    if rest:
        out.append(rest)
    return out


def declared_functions(repo, cc, header):
    """[(name, has RS_API)] of the functions header itself declares (not the
    headers it includes), read from `cc -E` with RS_API as a marker."""
    include = os.path.join(repo, "include")
    pre = subprocess.run(
        [cc, "-E", "-x", "c", "-std=c11", "-I", include, *GENERATED,
         "-DRS_API=" + MARKER, header],
        capture_output=True, text=True)
    if pre.returncode != 0:
        fail([f"{cc} -E {header}: {pre.stderr.strip()}"])
    mine, current = [], None
    target = os.path.realpath(header)
    for line in pre.stdout.splitlines():
        m = re.match(r'# \d+ "([^"]*)"', line)
        if m:
            current = os.path.realpath(m.group(1))
            continue
        if current == target:
            mine.append(line)
    found = []
    for st in statements("\n".join(mine)):
        head = st.split("{", 1)[0] if "{" in st else st
        if st.startswith("typedef") or "(" not in head:
            continue  # a type, or a struct or enum with no function before
        m = re.search(r"([A-Za-z_]\w*)\s*\($", head.split("(", 1)[0] + "(")
        if not m:
            continue
        found.append((m.group(1), MARKER in head.split("(", 1)[0]))
    return found


def exported_symbols(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", lib],
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail([f"{nm} -D {lib}: {out.stderr.strip()}"])
    names = set()
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2:
            names.add(fields[-1].split("@")[0])
    return names


def python_calls(repo):
    """The C functions python/ringsim calls: lib.rs_NAME, and the names in
    _lib.py's prototype table ("rs_NAME": ...)."""
    calls = {}
    for path in sorted(glob.glob(os.path.join(repo, "python", "ringsim",
                                              "*.py"))):
        text = open(path, encoding="utf-8").read()
        names = set(re.findall(r"\blib\.(rs_\w+)", text))
        names |= set(re.findall(r'"(rs_\w+)"\s*:', text))
        for n in names:
            calls.setdefault(n, os.path.relpath(path, repo))
    return calls


def check_exports(lib, repo, cc, nm):
    problems = []
    public = {}
    for h in headers(repo):
        for name, api in declared_functions(repo, cc, h):
            rel = os.path.relpath(h, repo)
            if not api:
                problems.append(f"{rel} declares {name} without RS_API: "
                                f"documented, but hidden in libringsim.so")
            public[name] = rel
    for h in headers(repo, "internal"):
        for name, api in declared_functions(repo, cc, h):
            if api:
                problems.append(f"{os.path.relpath(h, repo)} declares {name} "
                                f"with RS_API: internal/ is the command's, "
                                f"not exported")
    if not public:
        problems.append("no function found in include/ringsim/*.h: the "
                        "declarations were not read")
    exported = exported_symbols(nm, lib)
    ours = {s for s in exported if not s.startswith("_")}
    for s in sorted(ours - set(public)):
        kind = "an internal rs__ function" if s.startswith("rs__") else \
            "not declared RS_API in include/ringsim/*.h"
        problems.append(f"libringsim.so exports {s}: {kind}")
    for name in sorted(set(public) - exported):
        problems.append(f"{public[name]} declares {name} with RS_API, but "
                        f"libringsim.so does not export it")
    for name, path in sorted(python_calls(repo).items()):
        if name not in exported:
            problems.append(f"{path} calls {name}, which libringsim.so does "
                            f"not export")
    if problems:
        fail(problems)
    print(f"ok: libringsim.so exports exactly the {len(public)} functions "
          f"declared RS_API in {len(headers(repo))} public headers; "
          f"{len(python_calls(repo))} called by python/ringsim")


# C headers C++ has not got (stdatomic.h until C++23), or where it means
# something else: a public header must not include them, even where a C++
# compiler happens to accept the include alone (g++'s stdatomic.h does).
C_ONLY = {"stdatomic.h", "threads.h", "stdnoreturn.h", "complex.h",
          "tgmath.h"}


def check_headers(repo, cc, cxx):
    include = os.path.join(repo, "include")
    warn = ["-Wall", "-Wextra", "-Werror", "-pedantic"]
    modes = [("C11", [cc, "-std=c11", "-x", "c"]),
             ("C++11", [cxx, "-std=c++11", "-x", "c++"]),
             ("C++ (the compiler's default)", [cxx, "-x", "c++"])]
    problems, count = [], 0
    every = headers(repo) + headers(repo, "internal")
    if not every:
        fail([f"no header under {include}/ringsim"])
    for h in every:
        text = open(h, encoding="utf-8").read()
        for name in re.findall(r"^\s*#\s*include\s*<([^>]+)>", text, re.M):
            if name in C_ONLY:
                problems.append(f"{os.path.relpath(h, repo)} includes "
                                f"<{name}>, which C++ has not got")
        for label, cmd in modes:
            r = subprocess.run(cmd + warn + ["-fsyntax-only", "-I", include,
                                             *GENERATED, h],
                               capture_output=True, text=True)
            count += 1
            if r.returncode != 0:
                problems.append(f"{os.path.relpath(h, repo)} as {label}:\n"
                                + r.stderr.strip())
    if problems:
        fail(problems)
    print(f"ok: {len(every)} headers compile as C11, C++11 and C++ "
          f"({count} compilations)")


def check_opaque(repo, cc):
    public = [os.path.relpath(h, os.path.join(repo, "include"))
              for h in headers(repo)]
    includes = "".join(f'#include "{h}"\n' for h in public)
    uses = {
        "sizeof": "size_t rs_config_size(void);\n"
                  "size_t rs_config_size(void) { return sizeof(rs_config_t); }\n",
        "the calls": "int make(void);\nint make(void) {\n"
                     "  char err[RS_ERRMSG_MAX];\n"
                     "  rs_config_t *c = rs_config_new();\n"
                     "  int rc = rs_config_set(c, \"workers\", \"2\", err);\n"
                     "  rs_config_free(c);\n  return rc;\n}\n",
    }
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        # the installed view: include/ringsim/ without internal/
        shutil.copytree(os.path.join(repo, "include", "ringsim"),
                        os.path.join(tmp, "include", "ringsim"),
                        ignore=shutil.ignore_patterns("internal"))

        def compile_(name, text, include):
            path = os.path.join(tmp, name + ".c")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return subprocess.run(
                [cc, "-std=c11", "-Wall", "-Wextra", "-Werror",
                 "-fsyntax-only", "-I", include, *GENERATED, path],
                capture_output=True, text=True)

        installed = os.path.join(tmp, "include")
        r = compile_("size", includes + uses["sizeof"], installed)
        if r.returncode == 0:
            problems.append(
                "sizeof(rs_config_t) compiles against the public headers "
                f"({', '.join(public)}): one of them defines struct "
                "rs_config; its layout belongs in "
                "include/ringsim/internal/config.h")
        elif "incomplete" not in r.stderr:
            problems.append("sizeof(rs_config_t) against the public headers "
                            "failed, but not for an incomplete type:\n"
                            + r.stderr.strip())
        r = compile_("calls", includes + uses["the calls"], installed)
        if r.returncode != 0:
            problems.append("a config made through rs_config_new and "
                            "rs_config_set does not compile against the "
                            "public headers:\n" + r.stderr.strip())
        r = compile_("internal", includes + '#include '
                     '"ringsim/internal/config.h"\n' + uses["sizeof"],
                     os.path.join(repo, "include"))
        if r.returncode != 0:
            problems.append("sizeof(rs_config_t) with "
                            "ringsim/internal/config.h does not compile:\n"
                            + r.stderr.strip())
    if problems:
        fail(problems)
    print(f"ok: rs_config_t is incomplete in the {len(public)} public "
          f"headers, whole with ringsim/internal/config.h")


def main(argv):
    if len(argv) == 5 and argv[0] == "exports":
        GENERATED[:] = ["-I", os.path.join(os.path.dirname(argv[1]),
                                           "include")]
        check_exports(*argv[1:])
    elif len(argv) == 5 and argv[0] == "headers":
        GENERATED[:] = ["-I", argv[4]]
        check_headers(*argv[1:4])
    elif len(argv) == 4 and argv[0] == "opaque":
        GENERATED[:] = ["-I", argv[3]]
        check_opaque(*argv[1:3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
