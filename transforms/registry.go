// Package transforms is the rule registry: every rule family's immutable
// Rules list, concatenated in a fixed order, with lookup by code or name and
// --select/--ignore resolution.
//
// Families and code prefixes:
//
//	device       PDV  device strings, .cuda(), device comparisons and defaults
//	cuda-api     PCU  torch.cuda.* calls
//	amp          PAM  torch.cuda.amp, autocast("cuda"), GradScaler
//	distributed  PDS  the NCCL backend, DDP device_ids
//	hf           PHF  Hugging Face loaders and pipelines
//	compile      PCM  torch.compile settings
//	hazards      PDX  diagnostic-only rules
//	xla          PXL  PyTorch/XLA (torch_xla) to TorchTPU
//	files        PNF  files that are not Python: requirement sets, Dockerfiles,
//	                  launchers, CI workflows, configs (transforms/files)
//	tpuperf      PTP  TPU findings: matmul precision, recompiling shapes, MXU
//	                  sizes, GPU-style sharding and process settings
//
// A family package exports `var Rules = []*rule.Rule{...}` and is added to
// All with one line. Rules are plain values; this package registers their
// codes, with their docs, in the code registry (transforms/codes) once.
// The files family's rules are values of their own type (files.Rule: they
// read lines, not a Python tree): Files lists them, and --select/--ignore
// entries name them as they name the Python rules.
package transforms

import (
	"fmt"
	"strings"

	"github.com/pallasify/pallasify/transforms/amp"
	"github.com/pallasify/pallasify/transforms/codes"
	"github.com/pallasify/pallasify/transforms/compile"
	"github.com/pallasify/pallasify/transforms/cudaapi"
	"github.com/pallasify/pallasify/transforms/device"
	"github.com/pallasify/pallasify/transforms/distributed"
	"github.com/pallasify/pallasify/transforms/files"
	"github.com/pallasify/pallasify/transforms/hazards"
	"github.com/pallasify/pallasify/transforms/hf"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/tpuperf"
	"github.com/pallasify/pallasify/transforms/xla"
)

// families returns the rule families in registry order. Order matters: when
// two fixes overlap, the engine keeps the one of the earlier rule.
func families() [][]*rule.Rule {
	return [][]*rule.Rule{
		device.Rules,
		cudaapi.Rules,
		amp.Rules,
		distributed.Rules,
		hf.Rules,
		compile.Rules,
		hazards.Rules,
		xla.Rules,
		tpuperf.Rules,
	}
}

// Every rule's code is in the code registry, with the rule's page as its doc.
func init() {
	for _, r := range All() {
		sev := codes.Info
		if r.Safety == rule.DisplayOnly {
			sev = codes.Warning
		}
		codes.RegisterRule(codes.Code{Code: r.Code, Name: r.Name, Severity: sev, Title: r.Title(), Doc: r.Doc}, r.Safety.String())
	}
	for _, r := range files.Rules {
		sev := codes.Info
		if r.Safety == rule.DisplayOnly {
			sev = codes.Warning
		}
		codes.Register(r.Safety.String(), "rule for non-Python files (transforms/files)",
			codes.Code{Code: r.Code, Name: r.Name, Severity: sev, Title: r.Title(), Doc: r.Doc})
	}
}

// Files returns the rules for non-Python files (transforms/files), in
// registry order.
func Files() []*files.Rule { return append([]*files.Rule(nil), files.Rules...) }

// SelectFiles returns the rules for non-Python files that --select and
// --ignore leave (entries as Select takes them, which has checked them).
func SelectFiles(selectCodes, ignoreCodes []string) []*files.Rule {
	split := func(list []string) []string {
		var out []string
		for _, item := range list {
			for _, s := range strings.Split(item, ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
		}
		return out
	}
	sel, ign := split(selectCodes), split(ignoreCodes)
	var out []*files.Rule
	for _, r := range files.Rules {
		in := len(sel) == 0
		for _, s := range sel {
			in = in || matchesFile(r, s)
		}
		for _, s := range ign {
			in = in && !matchesFile(r, s)
		}
		if in {
			out = append(out, r)
		}
	}
	return out
}

func matchesFile(r *files.Rule, s string) bool {
	return strings.EqualFold(s, "ALL") || strings.HasPrefix(r.Code, strings.ToUpper(s)) || r.Name == s
}

// All returns every registered rule (removed ones included, marked
// Removed), families in a fixed order. The slice is new on every call; the
// rules are shared and must not be modified.
func All() []*rule.Rule {
	var out []*rule.Rule
	for _, f := range families() {
		out = append(out, f...)
	}
	return out
}

// Lookup returns the rule with the given code (any case) or name, or nil.
func Lookup(code string) *rule.Rule {
	code = strings.TrimSpace(code)
	for _, r := range All() {
		if strings.EqualFold(r.Code, code) || r.Name == code {
			return r
		}
	}
	return nil
}

// Select returns the rules of all that --select and --ignore leave, in
// registry order. An entry is a code ("PDV001"), a code prefix ("PDV",
// "PDV0": a family or part of one), a rule name ("cuda-method") or "ALL";
// codes and prefixes are case-insensitive. An empty selectCodes selects
// every rule. An entry that matches no rule is an error, so a typo does not
// silently select nothing. Removed rules are never selected. Safety
// (unsafe fixes, diagnostic-only rules) is the engine's business, not
// Select's.
func Select(all []*rule.Rule, selectCodes, ignoreCodes []string) ([]*rule.Rule, error) {
	sel, err := entries(all, selectCodes, "select")
	if err != nil {
		return nil, err
	}
	ign, err := entries(all, ignoreCodes, "ignore")
	if err != nil {
		return nil, err
	}
	out := make([]*rule.Rule, 0, len(all))
	for _, r := range all {
		if r.Removed {
			continue
		}
		in := len(sel) == 0
		for _, s := range sel {
			if matches(r, s) {
				in = true
				break
			}
		}
		for _, s := range ign {
			if matches(r, s) {
				in = false
				break
			}
		}
		if in {
			out = append(out, r)
		}
	}
	return out, nil
}

// entries splits comma-separated entries, drops blanks and checks that each
// matches some rule.
func entries(all []*rule.Rule, list []string, flag string) ([]string, error) {
	var out []string
	for _, item := range list {
		for _, s := range strings.Split(item, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			found := false
			for _, r := range files.Rules {
				found = found || matchesFile(r, s)
			}
			for _, r := range all {
				if matches(r, s) {
					found = true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("--%s %s: no rule has this code, code prefix or name", flag, s)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func matches(r *rule.Rule, s string) bool {
	return strings.EqualFold(s, "ALL") || strings.HasPrefix(r.Code, strings.ToUpper(s)) || r.Name == s
}
