"""Every run-time form of a draft, proven (validators/CONTRACTS.md, "Forced forms").

A rule draft's run() picks among forms at trace time from the shapes: the
in-kernel gather or its XLA form, the plane form or per-iteration gathers,
the array's own rows or flat blocks, a 2-D array's transposes or not. Each
choice goes through the module's _form(name, natural, applies) helper
(transforms/pallas/pyemit.go), which asks the module-level hook _FORCE when
the harness has set it (a user's import leaves it None). The harness runs
every case under the shapes' own choices (recording them), then again with
one decision forced to each alternative the shapes did not take: toward the
fallback (False) always, toward the first form (True) where the helper says
it applies (interpret mode has no VMEM limit), except the first forms bounded
by a VMEM budget (BUDGETED): too slow to interpret past it. A decision consulted only
under a forced form is forced within it, so every branch a user's shapes
can reach runs at the validated shapes.
"""

from __future__ import annotations

import contextlib

# What each alternative of a decision is: (True, False).
FORMS = {
    "vfits": ("the in-kernel gather (_vtake)", "the windowed or XLA form (_run_win, _run_xla)"),
    "vwin": ("the in-kernel gather from windows (_run_win)", "the XLA form (_run_xla)"),
    "plane": ("the plane form (the window's plane in VMEM)", "the per-iteration gathers"),
    "own_rows": ("the array's own rows (_row_halo)", "the flat blocks"),
    "column_major": ("the column-major form (over the transposes)", "the row-major form"),
    "vperm": ("the view in XLA's layout order", "the row-major view"),
}
# First forms bounded by a VMEM budget: not forced past it. _vtake visits
# every source row per block, so the in-kernel gather forced at
# float32_instance's larger shapes took the validation past 480 s; these are
# proven at the shapes that take them (the verdict's forms.natural says which).
BUDGETED = {"vfits", "plane", "vwin"}
# Forms the TPU compile gate compiles when forced: the fallbacks, and both
# layouts of a 2-D array (a first form forced past its VMEM budget is one no
# user's shape runs).
BOTH_ON_TPU = {"column_major"}


def describe(ctx) -> str:
    """A forced context, ((name, alt), ...), in words."""
    parts = []
    for name, alt in ctx:
        what = FORMS.get(name, ("its first form", "its fallback"))[0 if alt else 1]
        parts.append(f"{name}={alt} ({what})")
    return "forced " + ", then ".join(parts)


class Forms:
    """The decisions a candidate consults, per shape and forced context, and
    the hook that records or forces them."""

    def __init__(self, mod):
        self.mod = mod
        self.active = "_FORCE" in vars(mod) and mod._FORCE is None
        self.seen = {}  # (shape index, ctx) -> {name: {(natural, applies)}}
        self.ran = {}  # ctx -> {shape index: cases run}
        self.seconds = 0.0  # in forced runs, traces included

    @contextlib.contextmanager
    def hooked(self, j, ctx=()):
        """run() traced at shape j with ctx's decisions forced."""
        if not self.active:
            yield
            return
        force = dict(ctx)
        seen = self.seen.setdefault((j, ctx), {})

        def hook(name, natural, applies):
            seen.setdefault(name, set()).add((bool(natural), bool(applies)))
            if name in force:
                return force[name] and bool(applies)
            return natural

        self.mod._FORCE = hook
        try:
            yield
        finally:
            self.mod._FORCE = None

    def children(self, j, ctx=()):
        """The contexts to force below ctx at shape j: each decision ctx's
        trace consulted that its parent's did not (every decision, below the
        shapes' own choices), toward each alternative that changes a choice."""
        seen = self.seen.get((j, ctx), {})
        parent = self.seen.get((j, ctx[:-1]), {}) if ctx else {}
        forced = dict(ctx)
        out = []
        for alt in (False, True):  # the fallbacks first
            for name in sorted(seen):
                if name in forced or name in parent:
                    continue
                if alt and name in BUDGETED:
                    continue
                if any(natural and not alt or alt and applies and not natural for natural, applies in seen[name]):
                    out.append(ctx + ((name, alt),))
        return out

    def record(self, ctx, j, seconds):
        by = self.ran.setdefault(ctx, {})
        by[j] = by.get(j, 0) + 1
        self.seconds += seconds

    def tpu_contexts(self):
        """Each forced context the TPU gate compiles, with the smallest
        shape index it ran at (the sweep's shapes grow with the index)."""
        return [(ctx, min(by)) for ctx, by in self.ran.items()
                if all(not alt or name in BOTH_ON_TPU for name, alt in ctx)]

    def summary(self):
        """The verdict's forms section: each decision's natural choices per
        shape, each forced context's cases per shape."""
        natural = {}
        for (j, ctx), names in sorted(self.seen.items(), key=lambda kv: (kv[0][0], len(kv[0][1]))):
            if ctx:
                continue
            for name, vals in names.items():
                natural.setdefault(name, {})[str(j)] = sorted({nat for nat, _ in vals})
        return {"natural": natural, "forced_s": round(self.seconds, 3),
                "forced": [{"forms": describe(ctx), "cases": {str(j): n for j, n in sorted(by.items())}}
                           for ctx, by in self.ran.items()]}
