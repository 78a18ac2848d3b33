package main

import (
	"encoding/json"
	"sort"
	"strings"
)

// Kernel kinds: each gets its own rows in the tables.
const (
	KindCUDA   = "cuda"
	KindTriton = "triton"
	KindAll    = "all"
)

// Spec sources, in the order the capture stage tries them (pipeline.Spec*).
var specSources = []string{"tests", "call-sites+user-spec", "static", "none"}

// Tri is a fact that may be unknown (its key was absent from the JSON).
type Tri int8

const (
	Unknown Tri = iota
	No
	Yes
)

func triOf(b *bool) Tri {
	switch {
	case b == nil:
		return Unknown
	case *b:
		return Yes
	default:
		return No
	}
}

func triBool(b bool) Tri {
	if b {
		return Yes
	}
	return No
}

// MarshalJSON writes true, false or null.
func (t Tri) MarshalJSON() ([]byte, error) {
	switch t {
	case Yes:
		return []byte("true"), nil
	case No:
		return []byte("false"), nil
	}
	return []byte("null"), nil
}

// Kernel is one kernel's facts, merged from the folder's analyze and migrate
// reports, and the first point where it was blocked.
type Kernel struct {
	Folder      string          `json:"folder"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Path        string          `json:"path"`
	Line        int             `json:"line"`
	Origin      string          `json:"origin"`
	Kind        string          `json:"kind"`
	Built       Tri             `json:"built_cpu"`
	BuildCode   string          `json:"build_code,omitempty"`
	BuildText   string          `json:"build_text,omitempty"`
	Captured    *int            `json:"captured"`
	SpecSource  string          `json:"spec_source,omitempty"` // "" unknown
	Emulated    Tri             `json:"emulated"`
	Drafted     Tri             `json:"drafted"`
	Verdict     string          `json:"verdict,omitempty"`
	Proven      Tri             `json:"proven"`
	TPUCompiled map[string]bool `json:"tpu_compiled,omitempty"`
	Wired       Tri             `json:"wired"`
	// Block is the first blocking point: a diagnostic code and its reason
	// class ("PKN002 needs-spec: a tensor size is unknown"); "" when wired.
	Block string `json:"block,omitempty"`
}

// TPU is whether the TPU compile gate passed on every chip it ran for.
func (k *Kernel) TPU() Tri {
	if len(k.TPUCompiled) == 0 {
		return Unknown
	}
	for _, ok := range k.TPUCompiled {
		if !ok {
			return No
		}
	}
	return Yes
}

// mergeKernels joins a folder's analyze and migrate reports by kernel id
// (either may be nil) and finds each kernel's first blocking point. The
// inventory facts (build, capture, spec, emulation) come from analyze where
// it has them, the draft facts from migrate.
func mergeKernels(folder string, analyze, migrate *reportJSON) []Kernel {
	type pair struct{ a, m *kernelJSON }
	var order []string
	byID := map[string]*pair{}
	add := func(r *reportJSON, set func(*pair, *kernelJSON)) {
		if r == nil {
			return
		}
		for i := range r.Kernels {
			kj := &r.Kernels[i]
			p := byID[kj.ID]
			if p == nil {
				p = &pair{}
				byID[kj.ID] = p
				order = append(order, kj.ID)
			}
			set(p, kj)
		}
	}
	add(analyze, func(p *pair, k *kernelJSON) { p.a = k })
	add(migrate, func(p *pair, k *kernelJSON) { p.m = k })
	notes := indexNotes(analyze, migrate)
	out := make([]Kernel, 0, len(order))
	for _, id := range order {
		p := byID[id]
		k := mergeOne(folder, p.a, p.m)
		k.Block = firstBlock(&k, p.a, p.m, notes)
		out = append(out, k)
	}
	return out
}

// mergeOne combines one kernel's two rows.
func mergeOne(folder string, a, m *kernelJSON) Kernel {
	base := a
	if base == nil {
		base = m
	}
	k := Kernel{Folder: folder, ID: base.ID, Name: base.Name, Path: base.Path, Line: base.Line, Origin: base.Origin, Kind: KindCUDA}
	if base.Origin == "triton" {
		k.Kind = KindTriton
	}
	inv := []*kernelJSON{a, m} // inventory facts: analyze first
	for _, r := range inv {
		if r == nil {
			continue
		}
		if k.BuildCode == "" && k.BuildText == "" {
			k.BuildCode, k.BuildText, _ = buildReason(r.BuildReason)
		}
		// nothing is built for a Triton kernel (its build_reason is only why
		// no test launched it): built for CPU stays unknown
		if k.Built == Unknown && k.Kind != KindTriton {
			k.Built = builtOf(r.BuiltCPU, k.BuildCode != "" || k.BuildText != "")
		}
		// launches captured in either run (a Triton kernel's are recorded by
		// migrate's interpreter run, after analyze)
		if r.Captured != nil && (k.Captured == nil || *r.Captured > *k.Captured) {
			c := *r.Captured
			k.Captured = &c
		}
		if k.SpecSource == "" && r.SpecSource != nil {
			k.SpecSource = *r.SpecSource
		}
		// The original ran on the CPU in either run.
		if e := triOf(r.Emulated); e > k.Emulated {
			k.Emulated = e
		}
	}
	if m != nil {
		k.Verdict = m.Verdict
		k.Drafted, k.Proven, k.Wired = draftFacts(m)
		if len(m.TPUCompiled) > 0 {
			k.TPUCompiled = m.TPUCompiled
		}
	}
	return k
}

// builtOf reads built_cpu. The report prints the key for every kernel, so
// false alone means refused or never tried: it counts as not built only with
// a build_reason, and as unknown without one.
func builtOf(b *bool, hasReason bool) Tri {
	t := triOf(b)
	if t == No && !hasReason {
		return Unknown
	}
	return t
}

// capturedOf is whether launches were captured: known when some were, or
// when the build's outcome is known (nothing runs without a build).
func capturedOf(k *Kernel) Tri {
	switch {
	case k.Captured == nil:
		return Unknown
	case *k.Captured > 0:
		return Yes
	case k.Built == Unknown:
		return Unknown
	}
	return No
}

// draftFacts reads drafted/proven/wired from the keys the binary prints, or
// derives them from drafter/verdict/module; all unknown when the draft stage
// did not run (drafter and verdict "-").
func draftFacts(m *kernelJSON) (drafted, proven, wired Tri) {
	ran := m.Verdict != "" && m.Verdict != "-"
	drafted, proven, wired = triOf(m.Drafted), triOf(m.Proven), triOf(m.Wired)
	if !ran {
		return drafted, proven, wired
	}
	if drafted == Unknown {
		drafted = triBool(m.Drafter != "" && m.Drafter != "-" && m.Drafter != "none")
	}
	if proven == Unknown {
		proven = triBool(m.Verdict == "proven")
	}
	if wired == Unknown {
		wired = triBool(m.Verdict == "proven" && m.Module != "")
	}
	return drafted, proven, wired
}

// notes indexes kernel notes by location and by the kernel id they name.
type notes struct {
	at   map[string][]diagJSON // "path:line"
	byID map[string][]diagJSON // PDR004 and others naming "kernel k-…"
}

func noteKey(path string, line int) string { return path + ":" + itoa(line) }

func indexNotes(rs ...*reportJSON) notes {
	n := notes{at: map[string][]diagJSON{}, byID: map[string][]diagJSON{}}
	seen := map[string]bool{}
	for _, r := range rs {
		if r == nil {
			continue
		}
		for _, d := range r.KernelNotes {
			key := d.Code + "\x00" + noteKey(d.Path, d.Line) + "\x00" + d.Message
			if seen[key] {
				continue // analyze and migrate both report discovery notes
			}
			seen[key] = true
			if d.Line > 0 {
				n.at[noteKey(d.Path, d.Line)] = append(n.at[noteKey(d.Path, d.Line)], d)
			}
			if id := kernelIDIn(d.Message); id != "" {
				n.byID[id] = append(n.byID[id], d)
			}
		}
	}
	return n
}

// find returns the first note with code for kernel k.
func (n notes) find(k *Kernel, code string) (diagJSON, bool) {
	for _, d := range n.byID[k.ID] {
		if d.Code == code {
			return d, true
		}
	}
	for _, d := range n.at[noteKey(k.Path, k.Line)] {
		if d.Code == code {
			return d, true
		}
	}
	return diagJSON{}, false
}

// firstBlock names where kernel k stopped short of being wired, walking
// back from the furthest stage it reached: a proven kernel is blocked by the
// TPU gate or the wiring (PDR004), a drafted one by its verdict (V- codes), a
// kernel with a spec by the drafters' refusal (PPL codes), one without by
// the CPU build (EMU- codes) or spec inference (PKN002 and its reason class),
// a Triton kernel by PKN007 (inventory only).
func firstBlock(k *Kernel, a, m *kernelJSON, n notes) string {
	switch {
	case k.Wired == Yes:
		return ""
	case m == nil || k.Verdict == "" || k.Verdict == "-":
		return "migrate: kernel stages did not run"
	case k.Proven == Yes:
		if k.TPU() == No {
			return "TPU compile gate failed: " + strings.Join(failedChips(k.TPUCompiled), ",")
		}
		if d, ok := n.find(k, "PDR004"); ok {
			return "PDR004 not wired: " + reasonClass(afterColon(d.Message, "not wired in:"))
		}
		return "PDR004 not wired: no reason reported"
	case k.Drafted == Yes:
		return codeClass(m.Reason, "verdict "+k.Verdict)
	case k.Kind == KindTriton:
		if _, ok := n.find(k, "PKN007"); ok || strings.Contains(m.Reason, "Triton") {
			return "PKN007 triton: inventory only"
		}
		return codeClass(m.Reason, "triton: "+k.Verdict)
	case m.Verdict == "needs-spec" || k.SpecSource == "none":
		if k.Built == No && (k.BuildCode != "" || k.BuildText != "") {
			code := k.BuildCode
			if code == "" {
				code = "EMU-?"
			}
			return code + " build for CPU: " + reasonClass(k.BuildText)
		}
		reason := m.Reason
		if d, ok := n.find(k, "PKN002"); ok {
			reason = d.Message
		}
		return "PKN002 needs-spec: " + specClass(reason)
	default:
		return codeClass(m.Reason, k.Verdict)
	}
}

func failedChips(m map[string]bool) []string {
	var out []string
	for chip, ok := range m {
		if !ok {
			out = append(out, chip)
		}
	}
	sort.Strings(out)
	return out
}

// Count is how many kernels have a fact, out of those for which it is known.
type Count struct {
	Yes   int `json:"yes"`
	Known int `json:"known"`
}

func (c *Count) add(t Tri) {
	if t != Unknown {
		c.Known++
	}
	if t == Yes {
		c.Yes++
	}
}

// Counts is one table row.
type Counts struct {
	Label    string         `json:"label"`
	Kind     string         `json:"kind"`
	Found    int            `json:"found"`
	Built    Count          `json:"built_cpu"`
	Captured Count          `json:"captured"` // kernels with at least one captured launch
	Spec     map[string]int `json:"spec_source"`
	SpecKnwn int            `json:"spec_known"`
	Emulated Count          `json:"emulated"`
	Drafted  Count          `json:"drafted"`
	Proven   Count          `json:"proven"`
	TPU      Count          `json:"tpu_compiled"`
	Wired    Count          `json:"wired"`
}

// count tallies the kernels of kind (KindAll: every kernel).
func count(label, kind string, ks []Kernel) Counts {
	c := Counts{Label: label, Kind: kind, Spec: map[string]int{}}
	for i := range ks {
		k := &ks[i]
		if kind != KindAll && k.Kind != kind {
			continue
		}
		c.Found++
		c.Built.add(k.Built)
		c.Captured.add(capturedOf(k))
		if k.SpecSource != "" {
			c.Spec[k.SpecSource]++
			c.SpecKnwn++
		}
		c.Emulated.add(k.Emulated)
		c.Drafted.add(k.Drafted)
		c.Proven.add(k.Proven)
		c.TPU.add(k.TPU())
		c.Wired.add(k.Wired)
	}
	return c
}

// Reason is one blocking reason and how many kernels it blocks.
type Reason struct {
	Block string `json:"block"`
	Count int    `json:"count"`
}

// topReasons groups the kernels' blocking points, most frequent first (ties
// by name), at most n.
func topReasons(ks []Kernel, n int) []Reason {
	m := map[string]int{}
	for _, k := range ks {
		if k.Block != "" {
			m[k.Block]++
		}
	}
	out := make([]Reason, 0, len(m))
	for b, c := range m {
		out = append(out, Reason{b, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Block < out[j].Block
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Folder is one corpus folder's result.
type Folder struct {
	Name     string   `json:"name"`
	Rows     []Counts `json:"rows"` // cuda, triton, all
	Blocking []Reason `json:"blocking"`
	Kernels  []Kernel `json:"kernels"`
	// Wall times of the two runs, in seconds.
	AnalyzeS float64  `json:"analyze_s"`
	MigrateS float64  `json:"migrate_s"`
	Errors   []string `json:"errors,omitempty"`
}

// Aggregate is the whole run, as written by -json.
type Aggregate struct {
	Date     string       `json:"date"`
	Corpus   string       `json:"corpus"`
	Binary   string       `json:"binary"`
	Target   string       `json:"target"`
	Parallel int          `json:"parallel"`
	WallS    float64      `json:"wall_s"`
	Folders  []Folder     `json:"folders"`
	Total    []Counts     `json:"total"` // a row per folder, then cuda, triton, all
	Blocking []Reason     `json:"blocking"`
	TPUHost  *HostReport  `json:"tpuhost,omitempty"` // -tpuhost
	Audit    *AuditReport `json:"audit,omitempty"`   // -audit
}

// TopN is how many blocking reasons the tables list.
const TopN = 10

// summarizeFolder fills a folder's rows and blocking reasons from its kernels.
func summarizeFolder(f *Folder) {
	f.Rows = kindRows("", f.Kernels)
	f.Blocking = topReasons(f.Kernels, TopN)
}

func kindRows(prefix string, ks []Kernel) []Counts {
	return []Counts{
		count(prefix+"CUDA", KindCUDA, ks),
		count(prefix+"Triton", KindTriton, ks),
		count(prefix+"all", KindAll, ks),
	}
}

// summarizeTotal fills the total rows and reasons over every folder.
func summarizeTotal(agg *Aggregate) {
	var all []Kernel
	agg.Total = nil
	for _, f := range agg.Folders {
		for _, kind := range []string{KindCUDA, KindTriton} {
			label := f.Name + " · CUDA"
			if kind == KindTriton {
				label = f.Name + " · Triton"
			}
			agg.Total = append(agg.Total, count(label, kind, f.Kernels))
		}
		all = append(all, f.Kernels...)
	}
	agg.Total = append(agg.Total, kindRows("total ", all)...)
	agg.Blocking = topReasons(all, TopN)
}

// folderFromReports is the pure part of running one folder: the two
// reports (raw JSON, either may be nil) to the folder's result.
func folderFromReports(name string, analyze, migrate []byte) Folder {
	f := Folder{Name: name}
	var a, m *reportJSON
	var err error
	if analyze != nil {
		if a, err = parseReport(analyze); err != nil {
			f.Errors = append(f.Errors, "analyze: "+err.Error())
		}
	}
	if migrate != nil {
		if m, err = parseReport(migrate); err != nil {
			f.Errors = append(f.Errors, "migrate: "+err.Error())
		}
	}
	f.Kernels = mergeKernels(name, a, m)
	summarizeFolder(&f)
	return f
}

// jsonAggregate renders agg for -json.
func jsonAggregate(agg *Aggregate) ([]byte, error) {
	b, err := json.MarshalIndent(agg, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
