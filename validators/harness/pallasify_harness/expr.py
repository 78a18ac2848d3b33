"""Safe evaluator for the KernelSpec expression grammar.

C integer arithmetic over size symbols: integer literals, symbols, + - * / %
(truncating division, C remainder), unary minus, parentheses, min(a,b),
max(a,b), comparisons == != < <= > >= and the logical operators && || !.
Raw strings are never passed to eval(): the text is tokenised and parsed by
a small recursive-descent parser into closures.
"""

from __future__ import annotations

import re

__all__ = ["ExprError", "compile_expr", "evaluate"]


class ExprError(ValueError):
    """A malformed expression or an unknown symbol."""


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(==|!=|<=|>=|&&|\|\||[-+*/%()<>,!]))")


def _tokenize(text: str):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"unexpected character {text[pos:].strip()[:1]!r} in {text!r}")
        num, ident, op = m.groups()
        if num is not None:
            out.append(("num", int(num)))
        elif ident is not None:
            out.append(("id", ident))
        else:
            out.append(("op", op))
        pos = m.end()
    return out


def _cdiv(a: int, b: int) -> int:
    if b == 0:
        raise ExprError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a: int, b: int) -> int:
    return a - _cdiv(a, b) * b


_BIN = {
    "*": lambda a, b: a * b,
    "/": _cdiv,
    "%": _cmod,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
}

# Precedence levels, loosest first.
_LEVELS = [("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%")]
_FUNCS = {"min": min, "max": max}


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, kind=None, val=None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind) or (val is not None and tok[1] != val):
            want = val or kind or "a token"
            raise ExprError(f"expected {want!r} in {self.text!r}")
        self.i += 1
        return tok

    def parse(self):
        if not self.toks:
            raise ExprError("empty expression")
        fn = self.level(0)
        if self.i != len(self.toks):
            raise ExprError(f"trailing {self.toks[self.i][1]!r} in {self.text!r}")
        return fn

    def level(self, k):
        if k == len(_LEVELS):
            return self.unary()
        left = self.level(k + 1)
        while True:
            kind, val = self.peek()
            if kind != "op" or val not in _LEVELS[k]:
                return left
            self.i += 1
            right = self.level(k + 1)
            if val == "&&":
                left = (lambda l, r: lambda env: int(bool(l(env)) and bool(r(env))))(left, right)
            elif val == "||":
                left = (lambda l, r: lambda env: int(bool(l(env)) or bool(r(env))))(left, right)
            else:
                left = (lambda f, l, r: lambda env: f(l(env), r(env)))(_BIN[val], left, right)

    def unary(self):
        kind, val = self.peek()
        if kind == "op" and val in ("-", "+", "!"):
            self.i += 1
            inner = self.unary()
            if val == "-":
                return lambda env: -inner(env)
            if val == "!":
                return lambda env: int(not inner(env))
            return inner
        return self.atom()

    def atom(self):
        kind, val = self.take()
        if kind == "num":
            return lambda env, v=val: v
        if kind == "op" and val == "(":
            inner = self.level(0)
            self.take("op", ")")
            return inner
        if kind == "id":
            if val in _FUNCS and self.peek() == ("op", "("):
                self.i += 1
                a = self.level(0)
                self.take("op", ",")
                b = self.level(0)
                self.take("op", ")")
                f = _FUNCS[val]
                return lambda env: f(a(env), b(env))

            def sym(env, name=val, text=self.text):
                if name not in env:
                    raise ExprError(f"unknown symbol {name!r} in {text!r}")
                return env[name]

            return sym
        raise ExprError(f"unexpected {val!r} in {self.text!r}")


def compile_expr(text):
    """Compile an expression (str or int) into a function env -> int."""
    if isinstance(text, bool):
        raise ExprError(f"not an expression: {text!r}")
    if isinstance(text, int):
        return lambda env, v=text: v
    if not isinstance(text, str):
        raise ExprError(f"not an expression: {text!r}")
    if len(text) > 2000:
        raise ExprError("expression too long")
    return _Parser(text).parse()


def evaluate(text, env: dict) -> int:
    return compile_expr(text)(env)
