package main

import (
	"regexp"
	"strconv"
	"strings"
)

// Reason classes: blocking reasons are grouped by diagnostic code plus a
// class of the message with the kernel's own names taken out, so kernels
// stopped for the same reason count together.

var (
	// codeRE matches the diagnostic codes reasons carry: PKN/PPL/PDR…
	// (three letters, three digits), validator V- codes, emulator EMU- codes.
	codeRE = regexp.MustCompile(`\b(P[A-Z]{2}[0-9]{3}|V-[A-Z]+(?:-[A-Z]+)*|EMU-[A-Z]+(?:-[A-Z]+)*)\b`)
	// kernelIDRE matches a kernel id ("kernel k-4a59fcdf61").
	kernelIDRE = regexp.MustCompile(`\bk-[0-9a-f]{6,}\b`)
	quotedRE   = regexp.MustCompile(`"[^"]*"|'[^']*'|` + "`[^`]*`")
	// identRE matches code identifiers: names with an underscore or a digit
	// (elementwise_add_cuda, float4, x2), dotted names (block_size.x).
	identRE  = regexp.MustCompile(`\b[A-Za-z_][A-Za-z0-9]*(?:[_.][A-Za-z0-9_.]*|[0-9][A-Za-z0-9]*)\b`)
	numberRE = regexp.MustCompile(`\b[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?\b`)
	spaceRE  = regexp.MustCompile(`\s+`)
)

// firstCode returns the first diagnostic code in s, "" when none.
func firstCode(s string) string { return codeRE.FindString(s) }

// kernelIDIn returns the kernel id a message names, "" when none.
func kernelIDIn(s string) string { return kernelIDRE.FindString(s) }

// afterColon returns s after marker, or s when marker is absent.
func afterColon(s, marker string) string {
	if _, after, ok := strings.Cut(s, marker); ok {
		return strings.TrimSpace(after)
	}
	return s
}

// classMax bounds a reason class's length.
const classMax = 80

// reasonClass normalises a message to its class: the first clause, with
// quoted text, identifiers and numbers replaced, spaces collapsed.
func reasonClass(s string) string {
	s = firstClause(s)
	s = quotedRE.ReplaceAllString(s, "…")
	s = identRE.ReplaceAllString(s, "…")
	s = numberRE.ReplaceAllString(s, "N")
	s = strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
	if s == "" {
		return "no reason given"
	}
	if r := []rune(s); len(r) > classMax {
		s = string(r[:classMax-1]) + "…"
	}
	return s
}

// firstClause cuts s at the first "; " or " — " (where reasons chain
// drafters' refusals and hints).
func firstClause(s string) string {
	for _, sep := range []string{"; ", " — ", "\n"} {
		if i := strings.Index(s, sep); i >= 0 {
			s = s[:i]
		}
	}
	return s
}

// specClasses are the spec-inference failures (transforms/kernels) by the
// words of their templates, most specific first.
var specClasses = []struct {
	re    *regexp.Regexp
	class string
}{
	{regexp.MustCompile(`nothing in the host code gives the shape`), "nothing in the host code gives a pointer's shape"},
	{regexp.MustCompile(`size [0-9]+ of .* is unknown`), "a tensor size is unknown"},
	{regexp.MustCompile(`is not a tensor the host function defines`), "pointer is not a tensor the host function defines"},
	{regexp.MustCompile(`is an? .* parameter of the host function`), "scalar argument is a parameter of the host function"},
	{regexp.MustCompile(`has type .*, which has no dtype`), "parameter type has no dtype"},
	{regexp.MustCompile(`cannot evaluate call`), "cannot evaluate a call"},
	{regexp.MustCompile(`cannot evaluate function`), "cannot evaluate a function"},
	{regexp.MustCompile(`cannot evaluate`), "cannot evaluate an expression"},
}

// specClass classifies a needs-spec reason: a PKN002 message ("kernel K
// needs a spec: WHY; write …") or a draft reason ("no KernelSpec (WHY):
// write …"). The launch part it concerns (grid, block) is kept.
func specClass(s string) string {
	why := s
	if _, after, ok := strings.Cut(why, "needs a spec: "); ok {
		why = after
	} else if _, after, ok := strings.Cut(why, "no KernelSpec ("); ok {
		why = after
		if i := strings.LastIndex(why, "): write "); i >= 0 {
			why = why[:i]
		}
	}
	if i := strings.LastIndex(why, "; write "); i >= 0 {
		why = why[:i]
	}
	where := ""
	for _, part := range []string{"grid", "block", "shared"} {
		if strings.HasPrefix(why, part+" ") {
			where = part + ": "
		}
	}
	for _, c := range specClasses {
		if c.re.MatchString(why) {
			return where + c.class
		}
	}
	return reasonClass(why)
}

// codeClass is "CODE: class" for the first code in reason, or
// "fallback: class" when the reason carries none.
func codeClass(reason, fallback string) string {
	code := firstCode(reason)
	if code == "" {
		return fallback + ": " + reasonClass(reason)
	}
	i := strings.Index(reason, code) + len(code)
	rest := strings.TrimLeft(reason[i:], ": ")
	class := code + ": " + reasonClass(rest)
	if strings.Contains(reason, "configure an LLM") || strings.Contains(reason, "--llm-base-url") {
		class += " (needs-llm)"
	}
	return class
}

func itoa(n int) string { return strconv.Itoa(n) }
