#!/usr/bin/env python3
"""Checks of the user documentation (README.md and docs/*.md), one CTest case each (label docs):

  links     every relative link resolves to a file of the repository, and every #anchor to a
            heading of its target (GitHub's slugs); docs/*.md open with a title and one line
            saying who the page is for ("For ..."); README.md links every docs/*.md
  runnable  every shell block marked runnable (a fence info string "sh runnable") runs with
            bash -euo pipefail and exits 0, in a scratch directory where test/, manifests/,
            crds/ and scripts/ are the repository's and build/ is this build, with build/ first
            on PATH and every "/tmp/" replaced by a fresh temporary directory; a block marked
            "sh runnable lab" needs the VM lab and is reported as skipped, with the reason
  config    docs/configuration.md against the program: each "### `sriov-agent CMD`" table lists
            exactly the flags of `sriov-agent CMD --help`, with the default --help states; the
            environment table, and the man page's ENVIRONMENT (docs/sriov-agent.h2m), list
            every variable the agent's sources getenv()
  events    the Events table of docs/operations.md lists exactly the reasons the sources post:
            literals in kube_events_post() calls (and the REASON macros they name), in the
            NodeState's add_event() calls, in `const char *reason = ...` choices and in the NAD
            controller's `event = json_pack(...)`; Warning/Normal are types, not reasons
  workitems no internal work-item numbers ("issue 13.5", "issues 11.5, 11.9", "#14"); references
            to other projects' trackers are links with an absolute URL and are not counted
  lint      markdownlint (markdownlint-cli, MARKDOWNLINT) with the repository's .markdownlint.json

  check-docs.py CASE SRCDIR BUILDDIR
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

CASE, SRC, BUILD = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
failures = 0


def check(cond, what):
    global failures
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures += 1


def doc_files():
    return [os.path.join(SRC, "README.md")] + sorted(glob.glob(os.path.join(SRC, "docs", "*.md")))


def rel(path):
    return os.path.relpath(path, SRC)


FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


def blocks_and_prose(text):
    """Yields ("code", info, lines, line number) and ("prose", line, line number)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            yield ("code", info, body, start)
        else:
            yield ("prose", lines[i], i + 1)
        i += 1


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped but - and _,
    spaces made -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    out = set()
    with open(path) as f:
        text = f.read()
    for kind, *rest in blocks_and_prose(text):
        if kind != "prose":
            continue
        m = re.match(r"^#{1,6} (.*?)\s*#*\s*$", rest[0])
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        out.add(s if n == 0 else f"{s}-{n}")
        seen[s] = n + 1
    return out


LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose_without_code(line):
    return re.sub(r"`[^`]*`", "", line)


def case_links():
    for path in doc_files():
        with open(path) as f:
            text = f.read()
        n_links = 0
        for kind, *rest in blocks_and_prose(text):
            if kind != "prose":
                continue
            line, lineno = rest
            for m in LINK.finditer(prose_without_code(line)):
                target = m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                    continue
                n_links += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                where = f"{rel(path)}:{lineno}: {target}"
                if not os.path.exists(dest):
                    check(False, f"{where}: no such file {rel(dest)}")
                    continue
                if not dest.startswith(SRC + os.sep):
                    check(False, f"{where}: leaves the repository")
                    continue
                if anchor:
                    if not dest.endswith(".md"):
                        check(False, f"{where}: an anchor into a file that is not Markdown")
                    elif anchor not in anchors(dest):
                        check(False, f"{where}: no heading #{anchor} in {rel(dest)}")
        check(True, f"{rel(path)}: {n_links} relative links resolve")

    for path in doc_files()[1:]:
        with open(path) as f:
            lines = f.read().split("\n")
        title = lines[0].startswith("# ")
        who = len(lines) > 2 and lines[1] == "" and lines[2].startswith("For ")
        check(title and who, f"{rel(path)} opens with a title and a line saying who it is for")
    with open(os.path.join(SRC, "README.md")) as f:
        readme = f.read()
    for path in doc_files()[1:]:
        check(f"]({rel(path)})" in readme, f"README.md's map links {rel(path)}")


def case_runnable():
    ran = skipped = 0
    for path in doc_files():
        with open(path) as f:
            text = f.read()
        for kind, *rest in blocks_and_prose(text):
            if kind != "code":
                continue
            info, body, lineno = rest
            words = info.split()
            if len(words) < 2 or words[1] != "runnable":
                continue
            where = f"{rel(path)}:{lineno}"
            check(words[0] in ("sh", "bash"), f"{where}: a runnable block is a shell block")
            if "lab" in words[2:]:
                print(f"skipped: {where}: needs the VM lab (a real kernel with an SR-IOV NIC)")
                skipped += 1
                continue
            with tempfile.TemporaryDirectory(prefix="sriov-docs-") as work:
                for d in ("test", "manifests", "crds", "scripts"):
                    os.symlink(os.path.join(SRC, d), os.path.join(work, d))
                os.symlink(BUILD, os.path.join(work, "build"))
                scratch = os.path.join(work, "tmp")
                os.mkdir(scratch)
                script = "\n".join(body).replace("/tmp/", scratch + "/")
                env = dict(os.environ, PATH=BUILD + os.pathsep + os.environ.get("PATH", ""))
                r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work,
                                   env=env, capture_output=True, text=True, timeout=120)
                out = (r.stdout + r.stderr).strip()
                print(f"--- {where}\n$ " + "\n$ ".join(body) + "\n" + out[-1500:])
                check(r.returncode == 0, f"{where}: the block exits 0 (status {r.returncode})")
                ran += 1
    print(f"{ran} runnable blocks ran, {skipped} skipped")
    check(ran > 0, "at least one runnable block exists and ran")


def help_of(command):
    agent = os.path.join(BUILD, "sriov-agent")
    r = subprocess.run([agent, command, "--help"], capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def help_options(text):
    """{flag: description} of the option lines of a --help text (an option line starts with
    spaces and a dash; its description continues on the lines indented further)."""
    opts = {}
    current = None
    for line in text.split("\n"):
        m = re.match(r"^\s{1,6}(-\w, )?(--[a-z][a-z-]*)(.*)$", line)
        if m:
            current = [m.group(3)]
            opts[m.group(2)] = current
            if m.group(1):
                opts[m.group(1)[:2]] = current
        elif current is not None and re.match(r"^\s{8,}\S", line):
            current.append(line)
        else:
            current = None
    return {k: " ".join(" ".join(v).split()) for k, v in opts.items()}


def help_default(description):
    m = re.search(r"\(default:?\s+([^()]*(?:\([^)]*\)[^()]*)*)\)", description)
    if not m:
        return None
    return m.group(1).strip().rstrip(";").strip()


def case_config():
    with open(os.path.join(SRC, "docs", "configuration.md")) as f:
        text = f.read()
    sections = re.split(r"^### `sriov-agent ([\w-]+)`\s*$", text, flags=re.M)
    tables = {}
    for command, body in zip(sections[1::2], sections[2::2]):
        body = re.split(r"^##? ", body, flags=re.M)[0]
        rows = {}
        for line in body.split("\n"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if len(cells) < 3 or cells[0] in ("Flag", "---") or set(cells[0]) <= set("-"):
                continue
            for flag in re.findall(r"`(-\w|--[a-z][a-z-]*)", cells[0]):
                rows[flag] = cells[1]
        tables[command] = rows
    check(set(tables) >= {"run", "plan", "discover", "watch"},
          f"configuration.md has a flag table per command: {sorted(tables)}")
    for command, rows in sorted(tables.items()):
        opts = help_options(help_of(command))
        check(bool(opts), f"sriov-agent {command} --help lists options")
        missing = sorted(set(opts) - set(rows))
        extra = sorted(set(rows) - set(opts))
        check(not missing and not extra,
              f"`sriov-agent {command}`: the table lists exactly the flags of --help "
              f"(not in the table: {missing}; not in --help: {extra})")
        for flag, description in sorted(opts.items()):
            default = help_default(description)
            if default is None or flag not in rows:
                continue
            cell = rows[flag].replace("`", "")
            # each item of the default --help states appears in the table's default cell
            items = [i.strip() for i in re.split(r",\s*", default.replace("the ", "")) if i.strip()]
            ok = all(i.replace("the ", "") in cell.replace("the ", "") for i in items)
            check(ok, f"`sriov-agent {command} {flag}`: default {default!r} "
                      f"(table says {rows[flag]!r})")

    env_section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", env_section))
    used = set()
    for root in ("agent", "lib"):
        for path in glob.glob(os.path.join(SRC, root, "**", "*.c"), recursive=True):
            if os.sep + "cni" + os.sep in path:
                continue  # the CNI plugin's variables are documented in docs/cni.md
            with open(path, errors="replace") as f:
                used |= set(re.findall(r"\b(?:secure_)?getenv\(\"([A-Z0-9_]+)\"\)", f.read()))
    check(len(used) >= 5, f"the agent reads environment variables: {sorted(used)}")
    check(used <= documented, f"every variable the agent reads is in the environment table "
                              f"(missing: {sorted(used - documented)})")
    # The man page's ENVIRONMENT section (docs/sriov-agent.h2m) names every one of them too.
    with open(os.path.join(SRC, "docs", "sriov-agent.h2m")) as f:
        h2m = f.read()
    env = re.search(r"^\[ENVIRONMENT\]\n(.*?)(?=^\[|\Z)", h2m, re.M | re.S)
    check(env is not None, "docs/sriov-agent.h2m has an [ENVIRONMENT] section")
    named = set(re.findall(r"\\fB([A-Z0-9_]+)\\fR", env.group(1))) if env else set()
    check(used <= named, f"the man page's ENVIRONMENT names every variable the agent reads "
                         f"(missing: {sorted(used - named)})")


WORK_ITEM = re.compile(r"\b(?:issues?|items?|tasks?)\s+\d+(?:\.\d+)?\b|(?<![\w&/])#\d+\b", re.I)


def event_reasons_in_code():
    """{reason: file} of every Event reason the agent's sources can post."""
    files = sorted(glob.glob(os.path.join(SRC, "agent", "**", "*.c"), recursive=True) +
                   glob.glob(os.path.join(SRC, "lib", "**", "*.c"), recursive=True))
    headers = sorted(glob.glob(os.path.join(SRC, "agent", "*.h")) +
                     glob.glob(os.path.join(SRC, "lib", "**", "*.h"), recursive=True))
    macros = {}
    for h in headers:
        with open(h) as f:
            macros.update(re.findall(r"#define\s+(\w*REASON\w*)\s+\"(\w+)\"", f.read()))
    sites = [re.compile(p, re.S) for p in (r"\bkube_events_post\s*\([^;]*;",
                                           r"\badd_event\s*\([^;]*;",
                                           r"\bconst char \*reason\s*=[^;]*;",
                                           r"\bevent\s*=\s*json_pack\s*\([^;]*;")]
    found = {}
    for path in files:
        with open(path) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        for site in sites:
            for m in site.finditer(text):
                call = re.sub(r"\bstrcmp\s*\([^)]*\)", "", m.group(0))
                names = re.findall(r'"([A-Z][A-Za-z]+)"', call)
                names += [macros[n] for n in re.findall(r"\b\w*REASON\w*\b", call) if n in macros]
                for name in names:
                    if name not in ("Warning", "Normal"):
                        found.setdefault(name, rel(path))
    return found


def case_events():
    code = event_reasons_in_code()
    check(len(code) >= 10, f"the sources post Events with these reasons: {sorted(code)}")
    with open(os.path.join(SRC, "docs", "operations.md")) as f:
        text = f.read()
    table = re.search(r"^\| Reason \| Type \| On \| When \|\n((?:\|.*\n)+)", text, re.M)
    check(table is not None, "docs/operations.md has the Events table (| Reason | Type | On | When |)")
    documented = set()
    for line in (table.group(1).split("\n") if table else []):
        cells = line.split("|")
        if len(cells) > 2:
            documented |= set(re.findall(r"`([A-Za-z]+)`", cells[1]))
    for name, where in sorted(code.items()):
        check(name in documented, f"Event reason {name} ({where}) is in the Events table")
    for name in sorted(documented - set(code)):
        check(False, f"the Events table lists {name}, which no source posts")


def case_workitems():
    total = 0
    for path in doc_files():
        with open(path) as f:
            text = f.read()
        for kind, *rest in blocks_and_prose(text):
            if kind != "prose":
                continue
            line, lineno = rest
            # links to other projects' trackers carry the project in an absolute URL
            visible = LINK.sub(lambda m: "" if re.match(r"^https?://", m.group(2)) else m.group(1),
                               line)
            for m in WORK_ITEM.finditer(visible):
                check(False, f"{rel(path)}:{lineno}: internal work-item reference "
                             f"{m.group(0)!r}: say what the thing does instead")
                total += 1
    check(total == 0, "no internal work-item numbers in README.md and docs/")


def case_lint():
    tool = os.environ.get("MARKDOWNLINT") or shutil.which("markdownlint")
    check(tool is not None, "markdownlint is installed (scripts/install-deps)")
    if not tool:
        return
    files = [rel(p) for p in doc_files()]
    r = subprocess.run([tool, "--config", ".markdownlint.json", *files], cwd=SRC,
                       capture_output=True, text=True, timeout=120)
    print((r.stdout + r.stderr).strip())
    check(r.returncode == 0, f"markdownlint passes on {len(files)} files")


CASES = {"links": case_links, "runnable": case_runnable, "config": case_config,
         "events": case_events,
         "workitems": case_workitems, "lint": case_lint}
CASES[CASE]()
print(f"{CASE}: {'FAILED' if failures else 'passed'} ({failures} failures)")
sys.exit(1 if failures else 0)
