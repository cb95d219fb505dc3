#!/usr/bin/python3
"""The CTest cases, read from the test files themselves (tests/CMakeLists.txt
runs this at configure time, and again whenever a test file changes).

    ctest_cases.py cmake OUT.cmake TEST_FILE...
        write OUT.cmake: for each unittest class of each file with test_*
        methods of its own, ringsim_cases_<stem>_<Class> is the list of its
        case names (the method names without test_), in file order; and
        ringsim_cmocka_programs is the stems of the test_*.c files given
    ctest_cases.py check CTESTTESTFILE TESTS_DIR
        exit 1, listing them, when a test of the directory's files is not
        among those CTESTTESTFILE (the build's tests/CTestTestfile.cmake:
        what ctest runs) registers: a test_* method of a unittest class
        is registered when a test's command runs its file with the
        argument Class.test_name or Class; a test_*.py without unittest
        classes, when a test's command names the file; a test_NAME.c, when
        a test runs the program test_NAME. A test naming Class.test_name
        that its file does not define fails it too. Prints the tests this
        build registers but does not run (DISABLED), with the reason
        (their RINGSIM_WHY). A test without LABELS fails it too
        (tests/CMakeLists.txt's last block gives every test its labels).

A class's own methods only: one that inherits test_* methods (test_reliability's
Signals from Reliability) is run for the methods it defines, so each method
is one CTest test, once.
"""
import ast
import os
import re
import sys


def own_cases(path):
    """[(Class, [case, ...])] of the unittest classes in the Python file, in
    file order: the classes deriving, directly or through a class of the
    file, from unittest.TestCase, with their own test_* methods."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    tests = set()
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {ast.unparse(b) for b in node.bases}
        if not bases & ({"unittest.TestCase", "TestCase"} | tests):
            continue
        tests.add(node.name)
        cases = [n.name[len("test_"):] for n in node.body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name.startswith("test_")]
        if cases:
            found.append((node.name, cases))
    return found


def write_cmake(out, files):
    text = ["# written by tests/ctest_cases.py from the test files: do not edit"]
    programs = []
    for path in files:
        name = os.path.basename(path)
        stem = name.rsplit(".", 1)[0]
        if name.endswith(".c"):
            programs.append(stem[len("test_"):])
            continue
        for cls, cases in own_cases(path):
            text.append(f"set(ringsim_cases_{stem}_{cls} {' '.join(cases)})")
    text.append(f"set(ringsim_cmocka_programs {' '.join(programs)})")
    new = "\n".join(text) + "\n"
    # rewritten only when it changes, so a touched file costs no rebuild
    try:
        with open(out, encoding="utf-8") as f:
            if f.read() == new:
                return 0
    except FileNotFoundError:
        pass
    with open(out, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


ARG = re.compile(r'"((?:[^"\\]|\\.)*)"|([^\s()"]+)')


def cmake_args(text):
    """The arguments of one CMake command's text, quotes and escapes
    undone."""
    return [re.sub(r"\\(.)", r"\1", q) if q or not bare else bare
            for q, bare in ARG.findall(text)]


def read_ctest_file(path):
    """{test name: [command, args...]}, {test name: {property: value}} of a
    CTestTestfile.cmake."""
    commands, props = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*(add_test|set_tests_properties)\((.*)\)\s*$", line)
            if not m:
                continue
            args = cmake_args(m.group(2))
            if m.group(1) == "add_test":
                commands[args[0]] = args[1:]
            elif len(args) >= 2 and args[1] == "PROPERTIES":
                kv = args[2:]
                props.setdefault(args[0], {}).update(zip(kv[::2], kv[1::2]))
    return commands, props


def check(ctest_file, tests_dir):
    commands, props = read_ctest_file(ctest_file)
    files = sorted(n for n in os.listdir(tests_dir)
                   if n.startswith("test_") and n.endswith((".py", ".c")))
    problems, count = [], 0
    for name in files:
        path = os.path.join(tests_dir, name)
        if name.endswith(".c"):
            count += 1
            program = name[:-2]
            # (the program, or a stand-in naming it where cmocka is missing)
            if not any(os.path.basename(a) == program
                       for cmd in commands.values() for a in cmd):
                problems.append(f"{name}: no test runs {program}")
            continue
        runs = [cmd for cmd in commands.values()
                if any(os.path.basename(a) == name for a in cmd)]
        classes = own_cases(path)
        if not classes:
            count += 1
            if not runs:
                problems.append(f"{name}: no test runs it")
            continue
        defined = set()
        for cls, cases in classes:
            for case in cases:
                count += 1
                selector = f"{cls}.test_{case}"
                defined.add(selector)
                if not any(selector in cmd or cls in cmd for cmd in runs):
                    problems.append(f"{name}: {selector} is not a CTest test")
        for cmd in runs:
            for a in cmd:
                if re.fullmatch(r"[A-Za-z_]\w*\.test_\w+", a) and a not in defined:
                    problems.append(f"{name}: a test runs {a}, which the "
                                    "file does not define")
    for p in problems:
        print(f"not registered: {p} (tests/CMakeLists.txt names each test "
              "file and class; a build reconfigures after a test file "
              "changes)")
    unlabelled = sorted(t for t in commands if not props.get(t, {}).get("LABELS"))
    for t in unlabelled:
        print(f"no LABELS: {t} (tests/CMakeLists.txt's last block labels "
              "every test: keep it last)")
    disabled = sorted(t for t, kv in props.items()
                      if kv.get("DISABLED", "").upper() in ("TRUE", "ON", "1"))
    print(f"{count} tests in {len(files)} files of {tests_dir}; "
          f"{len(commands)} CTest tests, {len(disabled)} disabled in this build:")
    for t in disabled:
        print(f"  {t}: {props[t].get('RINGSIM_WHY', '(no reason given)')}")
    return 1 if problems or unlabelled else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "cmake":
        return write_cmake(argv[1], argv[2:])
    if len(argv) == 3 and argv[0] == "check":
        return check(argv[1], argv[2])
    print("usage: ctest_cases.py cmake OUT.cmake TEST_FILE... | "
          "check CTESTTESTFILE TESTS_DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
