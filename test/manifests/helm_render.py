"""A renderer of the subset of Helm's Go templates that manifests/helm/sriov-agent uses.

Debian has no helm package, npm has no Helm renderer (helm is a Go program) and the project's
machines reach no other registry, so `helm template` is reproduced here for exactly what the
chart uses, and anything else is refused (TemplateError) rather than guessed:

  {{ PIPELINE }}  {{- ... -}} (whitespace trimming)  {{/* comment */}}
  {{ if PIPELINE }} ... {{ else }} ... {{ end }}
  values: .Values.a.b, .Chart.Name/.Version/.AppVersion, .Release.Name/.Namespace,
          "string" and number literals
  functions: toYaml, toJson, quote, nindent N, indent N, default X
  pipelines: `X | f a` calls f(a, X), as in Go templates

Output formatting follows Helm's: toYaml emits sorted keys without a trailing newline (sigs.k8s.io
/yaml), toJson compact with sorted keys (encoding/json), quote a Go-quoted string. Truthiness as
in Go templates: false, 0, "", nil and empty maps/lists are false.
"""
import json
import os
import re

import yaml


class TemplateError(Exception):
    pass


ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.S)


def _tokens(text):
    """[("text", s) | ("action", s)] with {{- and -}} whitespace trimming applied."""
    out, pos, trim_next = [], 0, False
    for m in ACTION.finditer(text):
        chunk = text[pos:m.start()]
        if trim_next:
            chunk = chunk.lstrip()
        if m.group(1):
            chunk = chunk.rstrip()
        out.append(("text", chunk))
        out.append(("action", m.group(2)))
        trim_next = bool(m.group(3))
        pos = m.end()
    chunk = text[pos:]
    out.append(("text", chunk.lstrip() if trim_next else chunk))
    return out


def _truthy(v):
    return not (v is None or v is False or v == 0 or v == "" or v == {} or v == [])


def _to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, sort_keys=True, default_flow_style=False).rstrip("\n")


def _go_quote(s):
    s = s if isinstance(s, str) else _scalar(s)
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""  # Go's text/template prints <no value>; Helm renders it as ""
    if isinstance(v, (dict, list)):
        raise TemplateError(f"cannot print a {type(v).__name__} without toYaml/toJson: {v!r}")
    return str(v)


def _indent(n, s):
    return "\n".join((" " * int(n) + line) if line else line for line in str(s).split("\n"))


FUNCS = {
    "toYaml": (1, _to_yaml),
    "toJson": (1, lambda v: json.dumps(v, sort_keys=True, separators=(",", ":"))),
    "quote": (1, _go_quote),
    "indent": (2, _indent),
    "nindent": (2, lambda n, s: "\n" + _indent(n, s)),
    "default": (2, lambda d, v: v if _truthy(v) else d),
}


class Renderer:
    def __init__(self, values, chart, release_name="sriov-agent", release_namespace="default"):
        self.ctx = {"Values": values, "Chart": chart,
                    "Release": {"Name": release_name, "Namespace": release_namespace}}

    def _value(self, word):
        if word.startswith('"') and word.endswith('"'):
            return json.loads(word)
        if re.fullmatch(r"-?\d+", word):
            return int(word)
        if word.startswith("."):
            v = self.ctx
            for part in word[1:].split("."):
                if part == "":
                    continue
                if not isinstance(v, dict):
                    raise TemplateError(f"{word}: {part} of a non-map")
                key = {"Name": "name", "Version": "version", "AppVersion": "appVersion"}.get(
                    part, part) if v is self.ctx["Chart"] else part
                v = v.get(key)
            return v
        raise TemplateError(f"unknown operand {word!r}")

    def _command(self, words, piped):
        if words[0] in FUNCS:
            arity, fn = FUNCS[words[0]]
            args = [self._value(w) for w in words[1:]] + ([piped] if piped is not None else [])
            if len(args) != arity:
                raise TemplateError(f"{words[0]} takes {arity} argument(s), got {len(args)}")
            return fn(*args)
        if len(words) != 1 or piped is not None:
            raise TemplateError(f"unknown function {words[0]!r}")
        return self._value(words[0])

    def pipeline(self, text):
        value, first = None, True
        for cmd in text.split("|"):
            words = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', cmd.strip())
            if not words:
                raise TemplateError(f"empty command in {text!r}")
            value = self._command(words, None if first else value)
            first = False
        return value

    def render(self, text):
        toks = _tokens(text)
        out, _ = self._block(toks, 0, ())
        return out

    def _block(self, toks, i, stops):
        out = []
        while i < len(toks):
            kind, s = toks[i]
            if kind == "text":
                out.append(s)
                i += 1
                continue
            word = s.split(None, 1)[0] if s else ""
            if s.startswith("/*"):
                i += 1
            elif word in stops:
                return "".join(out), i
            elif word == "if":
                cond = _truthy(self.pipeline(s[2:]))
                yes, i = self._block(toks, i + 1, ("else", "end"))
                no = ""
                if toks[i][1] == "else":
                    no, i = self._block(toks, i + 1, ("end",))
                if toks[i][1] != "end":
                    raise TemplateError("if without end")
                out.append(yes if cond else no)
                i += 1
            elif word in ("else", "end", "range", "with", "define", "template", "include",
                          "block") or s.startswith("$"):
                raise TemplateError(f"unsupported action {{{{ {s} }}}}")
            else:
                out.append(_scalar(self.pipeline(s)))
                i += 1
        if stops:
            raise TemplateError(f"missing {{{{ {stops[-1]} }}}}")
        return "".join(out), i


def render_chart(chart_dir, overrides=None):
    """helm template: [(template path, rendered text)] in Helm's order (by file name)."""
    with open(os.path.join(chart_dir, "Chart.yaml")) as f:
        chart = yaml.safe_load(f)
    with open(os.path.join(chart_dir, "values.yaml")) as f:
        values = yaml.safe_load(f) or {}

    def merge(a, b):
        for k, v in b.items():
            a[k] = merge(a.get(k, {}), v) if isinstance(v, dict) and isinstance(a.get(k), dict) \
                and v else v
        return a

    values = merge(values, overrides or {})
    r = Renderer(values, chart)
    tdir = os.path.join(chart_dir, "templates")
    out = []
    for name in sorted(os.listdir(tdir)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(tdir, name)) as f:
                out.append((f"templates/{name}", r.render(f.read())))
    return out


def objects(rendered):
    """The Kubernetes objects of rendered templates."""
    objs = []
    for _, text in rendered:
        objs += [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    return objs
