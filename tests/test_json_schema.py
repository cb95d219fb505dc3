#!/usr/bin/python3
"""Every JSON document ringsim prints names its kind and version
("schema": "ringsim.<kind>/<N>", docs/json.md) and is what
docs/schema/<kind>.json says: each kind's commands (with and without
--hook, --topo, --algo all, several workers, --like nccl) run here and
their output is validated against the schema its "schema" key names
(python3-jsonschema); every key a command prints is described there
(the schemas leave no object open: additionalProperties false, or a map
whose values are described), and every key a schema describes is printed
by some command here (but those NOT_PRINTED says why). The Python
package's reports (ringsim.allreduce) are the same documents, and
docs/json.md's example validates too.

    test_json_schema.py RINGSIM EXAMPLES REPO [JsonSchema.test_name ...]

jsonschema is a peer (Debian's python3-jsonschema, which scripts/test
installs): without it the file skips, or fails where
RINGSIM_REQUIRE_PEERS=1 (tests/helpers.py).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = REPO = None
jsonschema = None  # imported by main(), a peer

NET = "latency=5us,bandwidth=25GB/s"
COMPUTE = "flops=10T,rows=64"  # for model.json, which has no backward_us

# The commands of each kind: (args, exit status, extra environment). The
# names MODEL, TWO and STEP are examples/model.json, two_workers.json and
# step_three.json; TRACE a fresh trace in the case's directory.
CASES = {
    "run": [
        (["-p", "TWO", "--json", "--no-trace"], 0, None),
        (["-p", "MODEL", "-w", "4", "--json", "--trace", "TRACE"], 0, None),
        (["-p", "MODEL", "-w", "4", "--json", "--no-trace", "--hook", "fp16"], 0, None),
        (["-p", "MODEL", "-w", "3", "--json", "--no-trace", "--hook", "bf16"], 0, None),
        (["-p", "TWO", "--json", "--no-trace", "--hook", "allreduce"], 0, None),
        (["-p", "MODEL", "-w", "16", "--json", "--no-trace", "--topo",
          "dgx-h100,nodes=2"], 0, None),
        (["-p", "MODEL", "-w", "4", "--json", "--no-trace", "--algo", "auto",
          "--net", NET, "--order-report"], 0, None),
        (["-p", "MODEL", "-w", "4", "--json", "--no-trace", "--algo", "tree"], 0, None),
        # a run a fault ended (exit 3): the watchdog, the check's nulls
        (["-p", "MODEL", "-w", "4", "--json", "--no-trace", "--timeout", "1",
          "--inject", "crash:worker=1,step=0"], 3, None),
        # workers that end with other bits (exit 1): the mismatches
        (["-p", "MODEL", "-w", "4", "--json", "--no-trace"], 1,
         {"RINGSIM_TEST_FLIP": "1:7,2:100"}),
    ],
    "powersgd": [
        (["-p", "MODEL", "-w", "4", "--json", "--no-trace", "--hook",
          "powersgd:rank=2"], 0, None),
        (["-p", "MODEL", "-w", "4", "--json", "--no-trace", "--hook",
          "powersgd:rank=2,start=2,feedback=on,warm=on", "--iterations", "4",
          "--net", NET], 0, None),
    ],
    "bench": [
        (["bench", "-b", "8", "-e", "64", "-f", "8", "-g", "4", "-n", "1",
          "--warmup", "0", "--json"], 0, None),
        (["bench", "-b", "8", "-e", "16", "-f", "2", "-w", "2,4", "--algo", "all",
          "-n", "1", "--warmup", "0", "--json"], 0, None),
        (["bench", "-b", "8", "-e", "8", "-w", "4", "--algo", "auto", "-c", "0",
          "-n", "1", "--warmup", "0", "--json"], 0, None),
    ],
    "model": [
        (["model", "-p", "MODEL", "-w", "4", "--net", NET, "--json"], 0, None),
        (["model", "-p", "MODEL", "-w", "16", "--topo", "dgx-h100,nodes=2",
          "--algo", "hier", "--json"], 0, None),
    ],
    "model.all": [
        (["model", "-p", "MODEL", "-w", "4", "--net", NET, "--algo", "all",
          "--json"], 0, None),
        (["model", "-p", "MODEL", "-w", "16", "--topo", "pcie,nodes=2",
          "--algo", "all", "--json"], 0, None),
        # (a topology NCCL's model knows: the nccl key is an object)
        (["model", "-p", "MODEL", "--topo", "dgx-h100,nodes=2",
          "--algo", "all", "--json"], 0, None),
    ],
    "model.rows": [
        (["model", "-p", "MODEL", "-w", "8,64,512", "--net", NET, "--json"], 0, None),
        (["model", "-p", "MODEL", "-w", "8,64", "--net", NET, "--algo", "all",
          "--json"], 0, None),
        (["model", "-p", "MODEL", "--topo", "dgx-h100,nodes=1,2,4", "--json"], 0, None),
    ],
    "model.sweep": [
        (["model", "--like", "nccl", "--topo", "dgx-h100,nodes=2", "-b", "8",
          "-e", "1M", "-f", "32", "--json"], 0, None),
        (["model", "--like", "nccl", "--topo", "dgx-h100,nodes=2", "-b", "8",
          "-e", "1M", "-f", "32", "--algo", "ring", "--proto", "simple",
          "--channels", "4", "--json"], 0, None),
    ],
    "model.nccl": [
        (["model", "--like", "nccl", "--topo", "dgx-h100,nodes=2", "-p", "MODEL",
          "--json"], 0, None),
    ],
    "step": [
        (["step", "-p", "STEP", "-w", "2", "--net", NET, "--json"], 0, None),
        (["step", "-p", "STEP", "-w", "4", "--net", NET, "--algo", "all",
          "--bucket-mb", "sweep", "--json"], 0, None),
        (["step", "-p", "MODEL", "-w", "4", "--net", NET, "--compute", COMPUTE,
          "--hook", "powersgd:rank=2", "--json"], 0, None),
        (["step", "-p", "MODEL", "-w", "4", "--net", NET, "--compute", COMPUTE,
          "--hook", "fp16", "--json"], 0, None),
        (["step", "-p", "STEP", "-w", "128", "--net", NET, "--json"], 0, None),
        (["step", "-p", "STEP", "-w", "16", "--topo", "dgx-h100,nodes=2",
          "--json"], 0, None),
        (["step", "-p", "MODEL", "--like", "nccl", "--topo", "dgx-h100,nodes=2",
          "--compute", COMPUTE, "--bucket-mb", "0,1", "--json"], 0, None),
    ],
    "diff": [
        (["diff", "-p", "MODEL", "-w", "4", "--algo", "ring,rd", "--json"], 0, None),
        (["diff", "-p", "MODEL", "-w", "4", "--algo", "ring,ring", "--json"], 0, None),
        (["diff", "-p", "MODEL", "--workers", "2,8", "--json"], 0, None),
        (["diff", "-p", "MODEL", "-w", "4", "--hook", "none,fp16", "--json"], 0, None),
        (["diff", "-p", "MODEL", "-w", "16", "--algo", "ring,tree", "--json"], 0, None),
        # on NCCL's channels: each order names its channel
        (["diff", "-p", "MODEL", "-w", "8", "--topo", "dgx-h100,nodes=1", "--algo",
          "ring,tree", "--json"], 0, None),
    ],
    "diff.each": [
        (["diff", "-p", "MODEL", "-w", "4", "--algo", "ring,rd,tree", "--json"], 0, None),
    ],
}

# Keys a schema describes that no command above prints, and why.
NOT_PRINTED = {
    "bench": {
        "/procs": "--transport mpi only (tests/test_mpi_transport.py)",
        "/mpi_allreduce_us": "--transport mpi only (tests/test_mpi_transport.py)",
    },
}


def load_schemas():
    """{kind: schema} of docs/schema/KIND.json."""
    schemas = {}
    for path in sorted(glob.glob(os.path.join(REPO, "docs", "schema", "*.json"))):
        with open(path) as f:
            schemas[os.path.basename(path)[:-len(".json")]] = json.load(f)
    return schemas


def validator(schemas, kind):
    """A Draft 2020-12 validator of kind's schema, its references to the
    other files ("diff.json#/...") resolved among schemas."""
    cls = jsonschema.Draft202012Validator
    try:  # jsonschema >= 4.18: the referencing library
        from referencing import Registry, Resource
        registry = Registry().with_resources(
            (f"{k}.json", Resource.from_contents(s)) for k, s in schemas.items())
        return cls(schemas[kind], registry=registry)
    except ImportError:  # Debian 12's 4.10
        store = {f"{k}.json": s for k, s in schemas.items()}
        return cls(schemas[kind],
                   resolver=jsonschema.RefResolver("", schemas[kind], store=store))


def deref(schemas, node, kind):
    """node with its "$ref"s followed: (the node, the kind it is in)."""
    while "$ref" in node:
        where, _, pointer = node["$ref"].partition("#")
        if where:
            kind = where[:-len(".json")]
        node = schemas[kind]
        for part in filter(None, pointer.split("/")):
            node = node[part]
    return node, kind


def subschemas(node):
    """The schemas directly inside node: (path step, schema)."""
    for key, sub in node.get("properties", {}).items():
        yield "/" + key, sub
    if isinstance(node.get("additionalProperties"), dict):
        yield "/*", node["additionalProperties"]
    if isinstance(node.get("items"), dict):
        yield "/[]", node["items"]
    for sub in node.get("oneOf", []):
        yield "", sub


def described_paths(schemas, kind):
    """Every key path kind's schema describes ("/rows/[]/later/buckets"),
    but those of another kind's it refers to."""
    out = set()

    def walk(node, where, path, seen):
        if not node.get("$ref", "#").startswith("#"):
            return  # another kind's keys: its own commands print them
        node, where = deref(schemas, node, where)
        if id(node) in seen:
            return
        for step, sub in subschemas(node):
            if step not in ("", "/*", "/[]"):
                out.add(path + step)
            walk(sub, where, path + step, seen | {id(node)})
    walk(schemas[kind], kind, "", frozenset())
    return out


def printed_paths(schemas, kind, doc):
    """Every key path of doc, as its schema names them (a map's keys as
    "*", an array's items as "[]")."""
    out = set()

    def walk(node, where, path, value):
        if not node.get("$ref", "#").startswith("#"):
            return  # (as described_paths)
        node, where = deref(schemas, node, where)
        if "oneOf" in node:  # the branch the value matches
            for sub in node["oneOf"]:
                b, bw = deref(schemas, sub, where)
                if jsonschema.Draft202012Validator(b).is_valid(value):
                    walk(b, bw, path, value)
            return
        if isinstance(value, dict):
            props = node.get("properties", {})
            for key, v in value.items():
                if key in props:
                    out.add(f"{path}/{key}")
                    walk(props[key], where, f"{path}/{key}", v)
                elif isinstance(node.get("additionalProperties"), dict):
                    walk(node["additionalProperties"], where, path + "/*", v)
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            for v in value:
                walk(node["items"], where, path + "/[]", v)
    walk(schemas[kind], kind, "", doc)
    return out


class JsonSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schemas = load_schemas()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def args(self, args):
        names = {"MODEL": os.path.join(EXAMPLES, "model.json"),
                 "TWO": os.path.join(EXAMPLES, "two_workers.json"),
                 "STEP": os.path.join(EXAMPLES, "step_three.json"),
                 "TRACE": os.path.join(self.tmp.name, "t.db")}
        return [names.get(a, a) for a in args]

    def documents(self, kind):
        """Each command of kind run: its documents (bench: one a line)."""
        for args, status, env in CASES[kind]:
            rc, out, err = helpers.run(*self.args(args), env=env, cwd=self.tmp.name)
            self.assertEqual(rc, status, f"{args}: {err}")
            lines = out.splitlines() if kind == "bench" else [out]
            self.assertTrue(out.strip(), f"{args}: no output")
            for text in lines:
                yield args, json.loads(text)

    def assert_valid(self, doc, kind, what):
        """doc is a kind document by its schema (every error listed)."""
        self.assertEqual(doc.get("schema"), f"ringsim.{kind}/1", what)
        errors = sorted(validator(self.schemas, kind).iter_errors(doc),
                        key=lambda e: list(e.absolute_path))
        self.assertEqual(
            [f"/{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
             for e in errors], [], f"{what} against docs/schema/{kind}.json")

    def check_kinds(self, *kinds):
        """Each kind's commands print valid documents of that kind, and
        together every key its schema describes (but NOT_PRINTED's)."""
        for kind in kinds:
            printed = set()
            for args, doc in self.documents(kind):
                self.assert_valid(doc, kind, " ".join(args))
                printed |= printed_paths(self.schemas, kind, doc)
            described = described_paths(self.schemas, kind)
            self.assertEqual(described - printed, set(NOT_PRINTED.get(kind, {})),
                             f"docs/schema/{kind}.json describes keys no "
                             "command here printed")

    # json-1: a run's report, with and without a hook, on a topology, with
    # auto, failed and with workers that differ
    def test_run(self):
        self.check_kinds("run")

    # json-2: --hook powersgd's report, one step and several
    def test_powersgd(self):
        self.check_kinds("powersgd")

    # json-3: bench --json's rows (JSON Lines), one W and several, all
    # algorithms, auto, unchecked
    def test_bench(self):
        self.check_kinds("bench")

    # json-4: ringsim model: one algorithm, --algo all, several sizes
    def test_model(self):
        self.check_kinds("model", "model.all", "model.rows")

    # json-5: ringsim model --like nccl: the sweep, and a model's buckets
    def test_model_like_nccl(self):
        self.check_kinds("model.sweep", "model.nccl")

    # json-6: ringsim step, with threads and without, hooks, many workers
    def test_step(self):
        self.check_kinds("step")

    # json-7: ringsim diff: a pair (identical, two world sizes, orders not
    # written out), and several sides whose comparisons are pairs
    def test_diff(self):
        self.check_kinds("diff", "diff.each")

    # json-8: every schema file is some command's, every command's kind
    # has its file, and docs/json.md names each
    def test_every_schema_is_used(self):
        self.assertEqual(set(self.schemas), set(CASES),
                         "docs/schema/*.json against the kinds run here")
        with open(os.path.join(REPO, "docs", "json.md")) as f:
            text = f.read()
        for kind in CASES:
            self.assertIn(f"ringsim.{kind}/1", text, "docs/json.md")
            self.assertIn(f"schema/{kind}.json", text, "docs/json.md")

    # json-9: each schema is a valid Draft 2020-12 schema of its kind that
    # describes every key (a type and a meaning), and leaves no object open
    def test_schemas_describe_every_key(self):
        for kind, schema in self.schemas.items():
            jsonschema.Draft202012Validator.check_schema(schema)
            self.assertEqual(schema["$schema"],
                             "https://json-schema.org/draft/2020-12/schema", kind)
            self.assertRegex(schema["title"], rf"^ringsim\.{re.escape(kind)}/[1-9][0-9]*$")
            self.assertEqual(schema["properties"]["schema"]["const"], schema["title"])
            self.assertIn("schema", schema["required"], kind)
            nodes = [("", schema)] + [(f"$defs/{k}", d)
                                      for k, d in schema.get("$defs", {}).items()]
            while nodes:
                path, node = nodes.pop()
                if "$ref" in node:
                    continue
                if node.get("type") == "object" or "object" in node.get("type", []) \
                        or "properties" in node:
                    self.assertIn("additionalProperties", node, f"{kind}: {path} is open")
                    extra = node["additionalProperties"]
                    self.assertTrue(extra is False or isinstance(extra, dict),
                                    f"{kind}: {path}: additionalProperties {extra}")
                    self.assertEqual(set(node.get("required", [])) - set(node.get("properties", {})),
                                     set(), f"{kind}: {path} requires undescribed keys")
                for step, sub in subschemas(node):
                    if step not in ("", "/[]"):
                        self.assertIn("description", sub, f"{kind}: {path}{step}")
                        self.assertTrue({"type", "$ref", "oneOf", "const", "enum"} & set(sub),
                                        f"{kind}: {path}{step} has no type")
                    nodes.append((path + step, sub))

    # json-10: the Python package's reports are the same documents
    def test_python_reports(self):
        code = r"""
import json
import numpy as np
import ringsim
grads = [{"w": np.arange(12, dtype=np.float32).reshape(3, 4) * (r + 1),
          "b": np.full(5, r, np.float32)} for r in range(8)]
reports = []
for options in ({}, {"hook": "fp16"}, {"algo": "auto", "net": "latency=5us,bandwidth=25GB/s"},
                {"topo": "dgx-h100,gpus=4,nics=4,nodes=2"}, {"hook": "powersgd:rank=1"}):
    reports.append(ringsim.allreduce(grads, **options)[1])
print(json.dumps(reports))
"""
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"),
                   RINGSIM_LIBRARY=os.path.join(os.path.dirname(RINGSIM), "libringsim.so"))
        p = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, env=env, timeout=300, cwd=self.tmp.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        reports = json.loads(p.stdout)
        kinds = ["run"] * 4 + ["powersgd"]
        for k, (kind, report) in enumerate(zip(kinds, reports)):
            self.assert_valid(report, kind, f"the Python report {k}")
        self.assertIsNotNone(reports[1]["hook"])
        self.assertIn("bytes_sent_off_node", reports[3])

    # json-11: docs/json.md's example is a valid document of its kind
    def test_docs_example(self):
        with open(os.path.join(REPO, "docs", "json.md")) as f:
            lines = f.read().splitlines()
        shown = 0
        for i, line in enumerate(lines):
            if not (line.startswith("    $ build/ringsim") and "--json" in line):
                continue
            body = []
            for more in lines[i + 1:]:
                if not more.startswith("    "):
                    break
                body.append(more[4:])
            doc = json.loads("\n".join(body))
            self.assert_valid(doc, doc["schema"].split("/")[0][len("ringsim."):],
                              line.strip())
            shown += 1
        self.assertGreater(shown, 0, "docs/json.md shows no --json example")


def main():
    global jsonschema
    cases = helpers.parse(globals(), "RINGSIM", "EXAMPLES", "REPO")
    jsonschema = helpers.import_peer("jsonschema", "python3-jsonschema")
    helpers.run_tests(cases)


if __name__ == "__main__":
    main()
