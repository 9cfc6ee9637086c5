#!/usr/bin/env python3
"""Every sd-event timer of the product has an explicit, non-zero accuracy (issue 11.9).

sd_event_add_time()/sd_event_add_time_relative() with accuracy 0 get sd-event's default of
250 ms, which turns "retry at once" or a 1 s backoff into something else. This scans every C
file outside test/ and build directories for those calls (and sd_event_source_set_time_accuracy)
and fails when the accuracy argument is 0: a literal (0, 0ULL, (0), 0 * 1000) or a macro of the
same file that evaluates to 0. Variables are accepted (listed). --self-test checks the checker.

    check-timer-accuracy.py SRCDIR
    check-timer-accuracy.py --self-test
"""
import os
import re
import sys

CALLS = {"sd_event_add_time": 4, "sd_event_add_time_relative": 4,
         "sd_event_source_set_time_accuracy": 1}
SKIP_DIRS = {"test", ".git", "node_modules"}


def strip_comments(text):
    """Comments and string literals blanked (newlines kept, so line numbers stay)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank,
                  text, flags=re.S)


def split_args(text, start):
    """Arguments of the call whose '(' is at start (top-level commas); None if unbalanced."""
    depth, args, cur = 0, [], []
    for i in range(start, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
            if depth == 1:
                continue
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    return None


def evaluate(expr, defines, depth=0):
    """The integer value of a constant expression (macros of the file resolved), or None."""
    if depth > 10:
        return None
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b", r"\1", expr)
    expr = re.sub(r"\((?:u?int\d+_t|unsigned(?: long)*|long(?: long)?|usec_t)\)", "", expr)

    def macro(m):
        name = m.group(0)
        if name not in defines:
            raise KeyError(name)
        v = evaluate(defines[name], defines, depth + 1)
        if v is None:
            raise KeyError(name)
        return "(%d)" % v
    try:
        expr = re.sub(r"\b[A-Za-z_]\w*\b", macro, expr)
    except KeyError:
        return None
    if not re.fullmatch(r"[\d\s()+\-*/xXa-fA-F<>]*", expr):
        return None
    try:
        return int(eval(expr.replace("/", "//"), {"__builtins__": {}}))  # noqa: S307
    except Exception:
        return None


def check_text(text, name):
    """(problems, accepted variables) of one file."""
    clean = strip_comments(text)
    defines = dict(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+)$", clean, re.M))
    problems, variables = [], []
    for m in re.finditer(r"\b(%s)\s*\(" % "|".join(CALLS), clean):
        func = m.group(1)
        args = split_args(clean, m.end() - 1)
        line = clean.count("\n", 0, m.start()) + 1
        idx = CALLS[func]
        if args is None or len(args) <= idx:
            if not re.search(r"\bint\s+%s\s*\(" % func, clean[max(0, m.start() - 40):m.end()]):
                problems.append("%s:%d: %s: cannot read its arguments" % (name, line, func))
            continue
        acc = " ".join(args[idx].split())
        value = evaluate(acc, defines)
        if value is None:
            variables.append("%s:%d: %s accuracy %s (not a constant)" % (name, line, func, acc))
        elif value <= 0:
            problems.append("%s:%d: %s with accuracy %s: sd-event makes that 250 ms; give the "
                            "accuracy the timer's purpose needs" % (name, line, func, acc))
    return problems, variables


def self_test():
    bad = ["sd_event_add_time(e, &s, CLOCK_MONOTONIC, at, 0, cb, u);",
           "sd_event_add_time_relative(e, &s, CLOCK_MONOTONIC, 5 * USEC, 0ULL, cb, u);",
           "sd_event_add_time(e, &s, CLOCK_MONOTONIC, f(a, b), (0), cb, u);",
           "#define ACC 0\nsd_event_add_time(e, &s, CLOCK_MONOTONIC, at, ACC, cb, u);",
           "sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, 1,\n 0 * 1000, cb, u);",
           "sd_event_source_set_time_accuracy(s, 0);"]
    good = ["sd_event_add_time(e, &s, CLOCK_MONOTONIC, at, 50 * 1000, cb, u);",
            "#define ACC (50ULL * 1000)\nsd_event_add_time(e, &s, CLOCK_MONOTONIC, at, ACC, cb, u);",
            "/* sd_event_add_time(e, &s, c, at, 0, cb, u) */ int x;",
            "sd_event_add_time_relative(e, &s, CLOCK_MONOTONIC, 0, 1000, cb, u);"]
    ok = True
    for t in bad:
        if not check_text(t, "bad")[0]:
            print("self-test: not caught: %r" % t)
            ok = False
    for t in good:
        if check_text(t, "good")[0]:
            print("self-test: wrongly refused: %r" % t)
            ok = False
    return ok


def main():
    if sys.argv[1:] == ["--self-test"]:
        return 0 if self_test() else 1
    if not self_test():
        return 1
    src = sys.argv[1]
    problems, variables, calls = [], [], 0
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        dirs[:] = [d for d in dirs if not (rel == "." and (d in SKIP_DIRS or d.startswith("build")))
                   and d not in (".git",)]
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            with open(path, errors="replace") as fh:
                text = fh.read()
            calls += len(re.findall(r"\b(%s)\s*\(" % "|".join(CALLS), strip_comments(text)))
            p, v = check_text(text, os.path.relpath(path, src))
            problems += p
            variables += v
    for v in variables:
        print("note: " + v)
    for p in problems:
        print("FAIL " + p)
    print("%d timer calls checked, %d with accuracy 0" % (calls, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
