"""Build SimQPN (QPME's simulator, Java) from a QPME git directory, for the peer benchmark.

    python benchmarks/peers/simqpn_build.py [--force]

No QPME code is kept in this repository: the build reads a QPME git directory
(``QPN_QPME_REPO``; default the local mirror below, a bare repository or a clone)
and writes into a cache directory (``QPN_SIMQPN_HOME``, default
``~/.cache/qpn-bench/simqpn``):

* ``src/`` — ``sources/qpme.simqpn.kernel`` at HEAD (``git archive``);
* ``lib/`` — the kernel's libraries, blobs of older commits of the same repository
  (QPME once shipped them; HEAD builds inside Eclipse and has none);
* ``stubs/`` — compile-only WEKA stubs (WEKA is used only by the WEKA service-time
  distribution, which none of the examples uses; the stubs throw if called);
* ``classes/`` — ``javac -encoding ISO-8859-1`` of all that;
* ``examples/`` — QPME's example models (``*.qpe``) at HEAD;
* ``build.json`` — what was built from which commit (a build is skipped when it
  matches HEAD).

One edit is made to the sources, as string edits here: the command-line runner
``console/SimQPN.java`` loses its Eclipse ``IApplication`` entry points (its own
``main`` stays); the simulation code is untouched.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

RECIPE = 1                                   # bump when the steps below change
DEFAULT_REPO = "/work/.mirror/DescartesResearch+QPME/repo"
KERNEL = "sources/qpme.simqpn.kernel"
EXAMPLES = "sources/qpme.qpe.feature/root_files/examples"
MAIN_CLASS = "de.tud.cs.simqpn.kernel.console.SimQPN"
CONSOLE = KERNEL + "/src/de/tud/cs/simqpn/kernel/console/SimQPN.java"
# (commit, path in that commit, file name in lib/)
JARS = [
    ("5decdc5", "sources/cern.colt/colt.jar", "colt.jar"),                              # colt 1.2.0
    ("46e2299", "redistributable_libraries/sources/jbarrier-1.0.jar", "jbarrier.jar"),
    ("5decdc5", "sources/org.dom4j/dom4j-1.6.1.jar", "dom4j.jar"),
    ("5decdc5", "sources/org.dom4j/jaxen-1.1-beta-6.jar", "jaxen.jar"),
    ("817da31", "sources/qpe.regressiontests/lib/log4j-1.2.16.jar", "log4j-1.2.16.jar"),
    ("817da31", "sources/qpe.regressiontests/lib/commons-math-2.1.jar", "commons-math-2.1.jar"),
]
# compile-only stand-ins for the five WEKA types the kernel names
WEKA_STUBS = {
    "weka/classifiers/Classifier.java":
        "package weka.classifiers;\n/** Compile-only stub. */\n"
        "public interface Classifier { double classifyInstance(weka.core.Instance i) throws Exception; }\n",
    "weka/core/Instance.java":
        "package weka.core;\n/** Compile-only stub. */\n"
        "public interface Instance { void setValue(int i, double v); void setDataset(Instances d); }\n",
    "weka/core/Instances.java":
        "package weka.core;\n/** Compile-only stub. */\npublic class Instances {\n"
        "  public Instances(String n, java.util.ArrayList<Attribute> a, int c) {\n"
        "    throw new UnsupportedOperationException(\"WEKA stub\");\n  }\n"
        "  public void setClass(Attribute a) {}\n  public int numAttributes() { return 0; }\n}\n",
    "weka/core/Attribute.java":
        "package weka.core;\n/** Compile-only stub. */\npublic class Attribute {\n"
        "  public Attribute(String n) { throw new UnsupportedOperationException(\"WEKA stub\"); }\n}\n",
    "weka/core/DenseInstance.java":
        "package weka.core;\n/** Compile-only stub. */\npublic class DenseInstance implements Instance {\n"
        "  public DenseInstance(int n) { throw new UnsupportedOperationException(\"WEKA stub\"); }\n"
        "  public void setValue(int i, double v) {}\n  public void setDataset(Instances d) {}\n}\n",
}


class BuildError(RuntimeError):
    """SimQPN cannot be built here (a tool or the QPME repository is missing, or a step failed)."""


def home_dir() -> str:
    """The cache directory of the build."""
    return os.path.expanduser(os.environ.get("QPN_SIMQPN_HOME", "~/.cache/qpn-bench/simqpn"))


def repo_dir() -> str:
    """The QPME git directory (a clone's ``.git`` is found from its work tree)."""
    path = os.path.expanduser(os.environ.get("QPN_QPME_REPO", DEFAULT_REPO))
    return os.path.join(path, ".git") if os.path.isdir(os.path.join(path, ".git")) else path


def _need(tool: str) -> str:
    exe = shutil.which(tool)
    if exe is None:
        raise BuildError(f"'{tool}' not found on PATH (SimQPN needs a JDK: java and javac; built and run with 17)")
    return exe


def _git(repo: str, *args: str, text: bool = True) -> str | bytes:
    p = subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, text=text)
    if p.returncode != 0:
        err = p.stderr if text else p.stderr.decode(errors="replace")
        raise BuildError(f"git {' '.join(args)} in {repo} failed: {err.strip()[-300:]}")
    return p.stdout


def _edit_console(text: str) -> str:
    """The runner without Eclipse's IApplication: each edit must apply exactly once."""
    edits = [
        (r"import org\.eclipse\.core\.runtime\.Platform;\n", ""),
        (r"import org\.eclipse\.equinox\.app\.IApplication;\n", ""),
        (r"import org\.eclipse\.equinox\.app\.IApplicationContext;\n", ""),
        (r"public class SimQPN implements IApplication \{", "public class SimQPN { // edited by qpn's simqpn_build.py"),
        (r"\t@Override\n\tpublic Object start\(IApplicationContext context\)[^{]*\{.*?\n\t\}\n", ""),
        (r"\t@Override\n\tpublic void stop\(\) \{.*?\n\t\}\n", ""),
        (r"return IApplication\.EXIT_OK;", "return Integer.valueOf(0);"),
    ]
    for pattern, new in edits:
        text, n = re.subn(pattern, new, text, count=1, flags=re.S)
        if n != 1:
            raise BuildError(f"console/SimQPN.java has changed upstream: the edit /{pattern}/ does not apply")
    if "IApplication" in text or "org.eclipse" in text:
        raise BuildError("console/SimQPN.java still refers to Eclipse after the edits")
    return text


def classpath(home: str | None = None) -> str:
    """The class path of a finished build."""
    home = home or home_dir()
    libs = sorted(os.path.join(home, "lib", f) for f in os.listdir(os.path.join(home, "lib")) if f.endswith(".jar"))
    return os.pathsep.join([os.path.join(home, "classes"), *libs])


def built(home: str | None = None) -> dict | None:
    """The stamp of a finished build in ``home``, or None."""
    try:
        with open(os.path.join(home or home_dir(), "build.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _build(repo: str, head: str, out: str, say) -> None:
    javac = _need("javac")
    src, lib, stubs, classes = (os.path.join(out, d) for d in ("src", "lib", "stubs", "classes"))
    for d in (src, lib, classes):
        os.makedirs(d)
    tar = _git(repo, "archive", "--format=tar", head, KERNEL, EXAMPLES, text=False)
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        if hasattr(tarfile, "data_filter"):
            t.extractall(src, filter="data")
        else:
            t.extractall(src)
    say(f"extracted {KERNEL} at {head[:10]} (git archive)")
    shutil.move(os.path.join(src, EXAMPLES), os.path.join(out, "examples"))
    shutil.rmtree(os.path.join(src, "sources", "qpme.qpe.feature"))
    say(f"examples: {', '.join(sorted(os.listdir(os.path.join(out, 'examples'))))}")
    for commit, path, name in JARS:
        with open(os.path.join(lib, name), "wb") as f:
            f.write(_git(repo, "show", f"{commit}:{path}", text=False))
        say(f"lib/{name} <- {commit}:{path}")
    console = os.path.join(src, CONSOLE)
    with open(console, encoding="latin-1") as f:
        text = f.read()
    with open(console, "w", encoding="latin-1") as f:
        f.write(_edit_console(text))
    say("edited console/SimQPN.java: Eclipse IApplication entry points removed (main kept)")
    kernel_src = os.path.join(src, KERNEL, "src")
    sources = []
    for dirpath, _, files in os.walk(kernel_src):
        sources += [os.path.join(dirpath, f) for f in files if f.endswith(".java")]
    uses_weka = False
    for s in sources:
        with open(s, encoding="latin-1") as f:
            uses_weka = uses_weka or "import weka." in f.read()
    if uses_weka:
        for rel, body in WEKA_STUBS.items():
            os.makedirs(os.path.dirname(os.path.join(stubs, rel)), exist_ok=True)
            with open(os.path.join(stubs, rel), "w") as f:
                f.write(body)
            sources.append(os.path.join(stubs, rel))
        say(f"wrote {len(WEKA_STUBS)} compile-only WEKA stubs")
    argfile = os.path.join(out, "sources.txt")
    with open(argfile, "w") as f:
        f.write("\n".join(f'"{s}"' for s in sources) + "\n")
    jars = os.pathsep.join(os.path.join(lib, n) for _, _, n in JARS)
    cmd = [javac, "-nowarn", "-encoding", "ISO-8859-1", "-d", classes, "-cp", jars, "@" + argfile]
    say(f"javac {len(sources)} files ...")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise BuildError(f"javac failed:\n{p.stderr.strip()[-2000:]}")
    for dirpath, _, files in os.walk(kernel_src):          # resources (the flattening XSL)
        for f in files:
            if f.endswith((".xsl", ".xml", ".properties")):
                rel = os.path.relpath(os.path.join(dirpath, f), kernel_src)
                os.makedirs(os.path.dirname(os.path.join(classes, rel)), exist_ok=True)
                shutil.copy(os.path.join(dirpath, f), os.path.join(classes, rel))
                say(f"resource {rel}")


def ensure_built(force: bool = False, quiet: bool = False) -> str:
    """Build SimQPN into the cache directory unless a build of the repository's HEAD is
    there; return the cache directory.  Raises :class:`BuildError` with the reason."""
    say = (lambda s: None) if quiet else (lambda s: print(f"simqpn_build: {s}", flush=True))
    home, repo = home_dir(), repo_dir()
    stamp = built(home)
    _need("java")
    if not os.path.isdir(repo):
        if stamp and not force:
            say(f"QPME repository {repo} not found; using the existing build in {home}")
            return home
        raise BuildError(f"QPME git directory {repo} not found (set QPN_QPME_REPO to a clone of "
                         f"https://github.com/DescartesResearch/QPME)")
    _need("git")
    head = str(_git(repo, "rev-parse", "HEAD")).strip()
    if stamp and stamp.get("qpme_head") == head and stamp.get("recipe") == RECIPE and not force:
        say(f"up to date: {home} (QPME {head[:10]}); --force rebuilds")
        return home
    parent = os.path.dirname(home.rstrip(os.sep)) or "."
    os.makedirs(parent, exist_ok=True)
    out = tempfile.mkdtemp(prefix=".simqpn-build-", dir=parent)
    try:
        say(f"building SimQPN from {repo} into {home}")
        _build(repo, head, out, say)
        javac_version = subprocess.run(["javac", "-version"], capture_output=True, text=True)
        with open(os.path.join(out, "build.json"), "w") as f:
            json.dump({"qpme_repo": repo, "qpme_head": head, "recipe": RECIPE, "main_class": MAIN_CLASS,
                       "jars": [f"{c}:{p}" for c, p, _ in JARS],
                       "javac": (javac_version.stdout + javac_version.stderr).strip()}, f, indent=1)
        if os.path.isdir(home):
            shutil.rmtree(home)
        os.replace(out, home)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    say(f"built: {home}")
    return home


def main(argv: list[str] | None = None) -> int:
    """Command line: build (or say it is up to date) and print the class path."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        home = ensure_built(force="--force" in args)
    except BuildError as e:
        print(f"simqpn_build: error: {e}", file=sys.stderr)
        return 1
    print(f"simqpn_build: java -cp {classpath(home)} {MAIN_CLASS} -r CONFIG -d SEED model.qpe")
    return 0


if __name__ == "__main__":
    sys.exit(main())
