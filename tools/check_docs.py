#!/usr/bin/env python3
"""Checks every fenced code block of README.md and docs/*.md (issue 25: snippets
that cannot rot). Each block is preceded by a marker line that says how:

  <!-- snippet: compile HARNESS -->     C++ (or CUDA, for a .cu harness): the block
        replaces the `// SNIPPET` line of HARNESS (docs/snippets/), its #include
        lines hoisted to the top, `...` lines dropped; compiled with -Werror
        against the public headers (and libtorch's, or nvcc, where the harness
        needs them).
  <!-- snippet: run python; OLD -> NEW; ... -->   run with the build's module on a
        small ImageFolder the check writes, after replacing each OLD by NEW.
  <!-- snippet: run sh; OLD -> NEW; ... -->       run by bash -e in a scratch
        folder, with the build's `stoke` first on PATH.
  <!-- snippet: run sh by tools/test.sh; ... -->  costly: run by tools/test.sh
        (`check_docs.py --by tools/test.sh`), not by the ctest.
  <!-- snippet: entry -->   the README's two commands: each names a script of the
        checkout, and .ci/run runs the second.
  <!-- snippet: excerpt FILE -->   the block's code lines (comments and spacing
        aside) occur in FILE in the same order; FILE is built or run by the tests.
  <!-- snippet: usage -->  a synopsis of `stoke COMMAND ...` lines: every option
        it names is in `stoke help COMMAND`, with the same list of values.
  <!-- snippet: output -->   what a command printed: the paragraph before it
        names the command (in backquotes), the machine and the date (YYYY-MM-DD).

NEW may use $IMAGES (the ImageFolder), $DEVICE (cuda:0 with a GPU, else cpu),
$SCRATCH (a scratch folder) and $VENV. Prints each block's result and the
counts; exits 1 if any block fails, or has no marker.

usage: check_docs.py --root DIR --build DIR [--cxx C++] [--nvcc NVCC]
                     [--torch-includes A:B] [--by tools/test.sh] [--venv DIR]
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*snippet:\s*(.*?)\s*-->\s*$")
MACHINES = ("2-core VM", "H100 machine")


class Skip(Exception):
    """A block this build cannot check (no CUDA compiler, no Torch): counted, not failed."""


class Block:
    def __init__(self, path, line, marker, lines, before):
        self.path, self.line, self.marker, self.lines = path, line, marker, lines
        self.before = before  # the paragraph above the marker (or the fence)

    def where(self):
        return f"{self.path}:{self.line}"

    def text(self):
        return "\n".join(self.lines) + "\n"


def blocks_of(root, path):
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        k = start - 1
        marker = None
        if k >= 0 and MARKER.match(lines[k]):
            marker = MARKER.match(lines[k]).group(1)
            k -= 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        para = []
        while k >= 0 and lines[k].strip() and not lines[k].startswith("```"):
            para.insert(0, lines[k])
            k -= 1
        out.append(Block(rel, start + 1, marker, lines[start + 1:j], " ".join(para)))
        i = j + 1
    return out


def substitutions(spec, env):
    """`OLD -> NEW` pairs of a marker's ;-separated tail, $NAMEs of NEW expanded."""
    pairs = []
    for part in spec:
        if "->" not in part:
            raise ValueError(f"`{part}` is not OLD -> NEW")
        old, new = (s.strip() for s in part.split("->", 1))
        for name, value in env.items():
            new = new.replace("$" + name, value)
        pairs.append((old, new))
    return pairs


def apply(text, pairs, where):
    for old, new in pairs:
        if old not in text:
            raise ValueError(f"{where}: `{old}` is not in the block (a stale substitution)")
        text = text.replace(old, new)
    return text


def run(cmd, timeout, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    return p.returncode, (p.stdout + p.stderr)


def code_lines(lines, comment):
    """A block's or file's code: comments, blank lines, `...` and spacing removed."""
    out = []
    for line in lines:
        if comment in line:
            line = line[:line.index(comment)]
        line = " ".join(line.split())
        if line and line != "...":
            out.append(line)
    return out


class Checker:
    def __init__(self, a):
        self.a = a
        self.root = os.path.abspath(a.root)
        self.build = os.path.abspath(a.build)
        self.scratch = tempfile.mkdtemp(prefix="stoke_docs_")
        self.stoke = os.path.join(self.build, "tools", "stoke")
        self.images = os.path.join(self.scratch, "images")
        self.counts = {}
        self.failures = []
        self.seen = set()
        self.device = None

    def env(self, spec):
        """The $NAMEs a marker's substitutions may use; the folder and the device
        are made or probed only for a marker that uses them."""
        spec = ";".join(spec)
        if "$DEVICE" in spec and self.device is None:
            code, out = run([sys.executable, "-c",
                             "import torch; print('cuda:0' if torch.cuda.is_available() else 'cpu')"],
                            120)
            self.device = out.strip().splitlines()[-1] if code == 0 and out.strip() else "cpu"
        if "$IMAGES" in spec and not os.path.isdir(self.images):
            code, out = run([self.stoke, "synth", self.images, "--count", "300", "--classes", "4",
                             "--min-side", "64", "--max-side", "160"], 300)
            if code != 0:
                raise RuntimeError("stoke synth failed: " + out)
        return {"IMAGES": self.images, "DEVICE": self.device or "cpu", "SCRATCH": self.scratch,
                "VENV": os.path.abspath(self.a.venv) if self.a.venv else ""}

    def count(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def fail(self, block, why):
        self.failures.append(f"{block.where()}: {why}")
        print(f"FAIL {block.where()} ({block.marker}): {why}")

    def check(self, block):
        if block.marker is None:
            self.fail(block, "a code block without a `<!-- snippet: ... -->` marker line above it")
            return
        parts = [p.strip() for p in block.marker.split(";")]
        head, subs = parts[0].split(), parts[1:]
        kind, by = head[0], None
        if "by" in head:
            by, head = " ".join(head[head.index("by") + 1:]), head[:head.index("by")]
        if (self.a.by or None) != by:
            if by is not None:
                self.count(f"run by {by}")
                print(f"ok   {block.where()}: run by {by}")
            return
        key = (block.marker, block.text())
        if key in self.seen:
            self.count(kind + " (same block as one above)")
            print(f"ok   {block.where()}: the same block and marker as one checked above")
            return
        self.seen.add(key)
        method = getattr(self, "check_" + kind, None)
        if method is None:
            self.fail(block, f"unknown snippet kind `{kind}`")
            return
        try:
            why = method(block, head[1:], subs)
        except Skip as e:
            self.count(f"{kind} skipped ({e})")
            print(f"skip {block.where()}: {e}")
            return
        except (ValueError, RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            why = str(e)
        if why:
            self.fail(block, why)
        else:
            label = kind + (" " + head[1] if kind in ("run",) else "")
            self.count(label)
            print(f"ok   {block.where()}: {block.marker}")

    # ---- kinds ----

    def check_compile(self, block, args, subs):
        if len(args) != 1:
            return "compile takes one harness file"
        harness = os.path.join(self.root, args[0])
        with open(harness, encoding="utf-8") as f:
            text = f.read()
        if "// SNIPPET\n" not in text:
            return f"{args[0]} has no `// SNIPPET` line"
        # Includes hoisted above the harness; the body keeps its lines (an
        # include or `...` becomes a blank line) so that errors name the page's.
        includes = [l for l in block.lines if l.startswith("#include")]
        body = ["" if l.startswith("#include") or l.strip() == "..." else l for l in block.lines]
        before, after = text.split("// SNIPPET\n", 1)
        resume = before.count("\n") + 2
        source = ("\n".join(includes) + f'\n#line 1 "{args[0]}"\n' + before +
                  f'#line {block.line + 1} "{block.path}"\n' + "\n".join(body) + "\n" +
                  f'#line {resume} "{args[0]}"\n' + after)
        suffix = os.path.splitext(harness)[1]
        src = os.path.join(self.scratch, f"snippet_{len(self.seen)}{suffix}")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        include = os.path.join(self.root, "include")
        if suffix == ".cu":
            if not self.a.nvcc:
                raise Skip("no CUDA compiler in this build")
            cmd = [self.a.nvcc, "-std=c++17", "-I", include, "-Werror", "all-warnings",
                   "-Xcompiler", "-Wall,-Wextra,-Werror", "-c", src, "-o", src + ".o"]
        else:
            cmd = [self.a.cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                   "-I", include, src]
            if "torch" in os.path.basename(harness):
                if not self.a.torch_includes:
                    raise Skip("this build found no Torch")
                dirs = {os.path.realpath(d) for d in self.a.torch_includes.split(":") if d}
                for d in sorted(dirs - {"/usr/include", "/usr/local/include"}):
                    cmd[1:1] = ["-isystem", d]
        code, out = run(cmd, 600)
        return None if code == 0 else "does not compile:\n" + out[-3000:]

    def check_run(self, block, args, subs):
        lang = args[0] if args else ""
        text = apply(block.text(), substitutions(subs, self.env(subs)), block.where())
        child = dict(os.environ)
        # `stoke` is the build's, `python3` the one running this check (Debian's,
        # which sees python3-torch, as on the fresh machine the README is for).
        child["PATH"] = os.pathsep.join([os.path.dirname(self.stoke),
                                         os.path.dirname(sys.executable), child["PATH"]])
        child.pop("PYTHONPATH", None)
        if lang == "python":  # the build's module (a shell block installs its own)
            child["PYTHONPATH"] = os.path.join(self.build, "python")
        child.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        child.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        child.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
        if lang == "python":
            cmd, cwd = [sys.executable, "-c", text], self.scratch
        elif lang == "sh":
            for word in text.split():
                if word.startswith("build/release/") and not os.path.exists(os.path.join(self.root, word)):
                    raise Skip(f"{word} is not built here")
            cmd, cwd = ["bash", "-e", "-o", "pipefail", "-c", text], self.root
        else:
            return f"run takes python or sh, not `{lang}`"
        code, out = run(cmd, 600, cwd=cwd, env=child)
        return None if code == 0 else f"exit {code}:\n" + out[-3000:]

    def check_entry(self, block, args, subs):
        commands = code_lines(block.lines, "#")
        for c in commands:
            script = os.path.join(self.root, c.split()[0])
            if not os.access(script, os.X_OK):
                return f"`{c}`: {c.split()[0]} is not an executable script of the checkout"
        with open(os.path.join(self.root, ".ci", "run"), encoding="utf-8") as f:
            ci = f.read()
        if not commands or commands[-1] not in ci:
            return f".ci/run does not run `{commands[-1] if commands else ''}`"
        return None

    def check_excerpt(self, block, args, subs):
        if len(args) != 1:
            return "excerpt takes one file"
        path = os.path.join(self.root, args[0])
        comment = "#" if path.endswith((".py", ".sh", ".txt", ".cmake")) else "//"
        with open(path, encoding="utf-8") as f:
            have = code_lines(f.read().split("\n"), comment)
        want = code_lines(block.lines, comment)
        at = 0
        for line in want:
            while at < len(have) and have[at] != line:
                at += 1
            if at == len(have):
                return f"`{line}` is not in {args[0]} (after the lines before it)"
            at += 1
        return None

    def check_usage(self, block, args, subs):
        entries = re.split(r"^stoke ", block.text(), flags=re.M)[1:]
        if not entries:
            return "the synopsis shows no `stoke COMMAND` line"
        for entry in entries:
            command = entry.split()[0]
            code, help_text = run([self.stoke, "help", command], 60)
            if code != 0:
                return f"`stoke help {command}` failed: {help_text}"
            known = {name: None for name in re.findall(r"--[a-z-]+", help_text)}
            known.update(re.findall(r"^\s+(--[a-z-]+)(?:\s+(\S+))?", help_text, re.M))
            for name, value in re.findall(r"(--[a-z-]+)(?: ([A-Za-z0-9:,\[\]]+(?:\|[A-Za-z0-9:,\[\]]+)+))?",
                                          entry):
                while value.count("]") > value.count("["):  # the synopsis's own bracket
                    value = value[:-1]
                if name not in known:
                    return f"stoke {command}: {name} is not in `stoke help {command}`"
                if value and set(value.split("|")) != set((known[name] or "").split("|")):
                    return (f"stoke {command}: the synopsis says {name} {value}, "
                            f"`stoke help {command}` says {name} {known[name]}")
        return None

    def check_output(self, block, args, subs):
        para = block.before
        if not re.search(r"`[^`]+`", para):
            return "the paragraph above the output names no command in backquotes"
        if not re.search(r"\b20\d\d-\d\d-\d\d\b", para):
            return "the paragraph above the output gives no date (YYYY-MM-DD)"
        if not any(m in para for m in MACHINES):
            return f"the paragraph above the output names no machine ({', '.join(MACHINES)})"
        return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--cxx", default="c++")
    p.add_argument("--nvcc", default="")
    p.add_argument("--torch-includes", default="")
    p.add_argument("--by", default="", help="run the blocks marked `by` this script")
    p.add_argument("--venv", default="")
    a = p.parse_args()
    c = Checker(a)
    try:
        files = [os.path.join(c.root, "README.md")] + sorted(glob.glob(os.path.join(c.root, "docs", "*.md")))
        total = 0
        for path in files:
            for block in blocks_of(c.root, path):
                total += 1
                c.check(block)
    finally:
        shutil.rmtree(c.scratch, ignore_errors=True)
    print(f"\n{total} code blocks in README.md and docs/: " +
          ", ".join(f"{n} {k}" for k, n in sorted(c.counts.items())))
    if c.failures:
        print(f"{len(c.failures)} failed:\n  " + "\n  ".join(f.split("\n")[0] for f in c.failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
