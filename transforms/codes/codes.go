// Package codes is the one registry of pallasify's diagnostic codes: the rule
// codes (PDV001, PCU003, ...), the driver's (PIO, PKN, PDR, PPL, PTR, CAP),
// the validators' (V-, EMU-, SBX-) and the LLM drafter's (L-). Each code is
// defined once, next to what raises it: the package that raises it registers
// its Code values at init (codes.Register), and `pallasify rules`, `pallasify
// rules CODE` and the bot's `/pallasify explain CODE` read them from here.
//
// The package is a leaf: it imports nothing of pallasify, so every layer
// (transforms, validators, pipeline, cmd) can register and read codes.
package codes

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Severity is how serious a diagnostic is.
type Severity string

const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// Code documents one diagnostic code. The field order is that of the tables
// the defining packages write ({Code, Name, Severity, Title, Doc}).
type Code struct {
	Code     string // the ID: PIO001, V-MISMATCH, ...; stable forever
	Name     string // kebab-case
	Severity Severity
	Title    string // one line
	Doc      string // the explanation `pallasify rules CODE` prints
}

// Family is the code's family: the prefix letters of a P-code ("PIO" for
// PIO001) or the prefix with its dash for the others ("V-", "EMU-").
func (c Code) Family() string { return FamilyOf(c.Code) }

// FamilyOf returns the family of a code ID (see Code.Family).
func FamilyOf(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i+1]
	}
	if len(id) > 3 {
		return id[:3]
	}
	return id
}

// Entry is a registered code with the group it is listed under.
type Entry struct {
	Code
	// Group is the short label `pallasify rules` shows for a code that is
	// not a rule ("input", "kernel", "verdict", ...); for a rule, its fix
	// safety ("safe", "unsafe", "diagnostic").
	Group string
	// About says in a few words where the family comes from ("validator
	// verdict reason"); printed with the code's doc.
	About string
	// Rule is set for the codes of rewrite rules, whose full page (example
	// for both targets) the rules command prints itself.
	Rule bool
}

// ID matches what a code looks like: a family prefix plus three digits
// (PDV001, PKN007) or an upper-case family and name joined by dashes
// (V-MISMATCH, EMU-INCLUDE, L-GATE, CAP-NO-TESTS).
var ID = regexp.MustCompile(`^(P[A-Z]{2}\d{3}|[A-Z]{1,4}-[A-Z][A-Z0-9-]+)$`)

var (
	mu    sync.RWMutex
	table = map[string]Entry{}
)

// Register records codes under a group. It panics (at init: a programming
// error) on a malformed ID, a code registered twice, or a missing name,
// title or doc, so the registry can only hold documented codes.
func Register(group, about string, cs ...Code) {
	mu.Lock()
	defer mu.Unlock()
	for _, c := range cs {
		add(Entry{Code: c, Group: group, About: about})
	}
}

// RegisterRule records a rewrite rule's code; safety is its fix safety.
func RegisterRule(c Code, safety string) {
	mu.Lock()
	defer mu.Unlock()
	add(Entry{Code: c, Group: safety, About: "rewrite rule", Rule: true})
}

func add(e Entry) {
	c := e.Code
	switch {
	case !ID.MatchString(c.Code):
		panic(fmt.Sprintf("codes: %q is not a code ID", c.Code))
	case table[c.Code].Code.Code != "":
		panic(fmt.Sprintf("codes: %s registered twice (%s and %s)", c.Code, table[c.Code].Name, c.Name))
	case strings.TrimSpace(c.Name) == "" || strings.TrimSpace(c.Title) == "" || strings.TrimSpace(c.Doc) == "":
		panic(fmt.Sprintf("codes: %s needs a name, a title and a doc", c.Code))
	}
	if c.Severity == "" {
		c.Severity = Info
		e.Code = c
	}
	table[c.Code] = e
}

// Lookup returns the entry of a code, ignoring case and surrounding space
// and backquotes.
func Lookup(id string) (Entry, bool) {
	mu.RLock()
	defer mu.RUnlock()
	e, ok := table[strings.ToUpper(strings.Trim(strings.TrimSpace(id), "`"))]
	return e, ok
}

// All returns every registered code: rule codes first, then the other
// families, each in family order and by ID within a family.
func All() []Entry {
	mu.RLock()
	out := make([]Entry, 0, len(table))
	for _, e := range table {
		out = append(out, e)
	}
	mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Rule != b.Rule {
			return a.Rule
		}
		if fa, fb := familyRank(a.Family()), familyRank(b.Family()); fa != fb {
			return fa < fb
		}
		return a.Code.Code < b.Code.Code
	})
	return out
}

// familyOrder is the listing order of the families that are not rules: the
// order a run meets them (input, kernels, capture, drafts, validation).
var familyOrder = []string{"PIO", "PKN", "CAP-", "EMU-", "SBX-", "PPL", "PTR", "PDR", "L-", "V-"}

func familyRank(f string) string {
	for i, g := range familyOrder {
		if g == f {
			return fmt.Sprintf("%02d", i)
		}
	}
	return "99" + f
}

// Families counts the registered codes per family.
func Families() map[string]int {
	m := map[string]int{}
	for _, e := range All() {
		m[e.Family()]++
	}
	return m
}
