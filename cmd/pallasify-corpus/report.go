package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// reportJSON is the part of `pallasify analyze|migrate --format json` the
// corpus benchmark reads. Keys the binary does not print yet decode to nil
// and count as unknown, never as false.
type reportJSON struct {
	Kind        string       `json:"kind"`
	Kernels     []kernelJSON `json:"kernels"`
	KernelNotes []diagJSON   `json:"kernel_notes"`
}

// kernelJSON is one kernel row of the report (pipeline/report.KernelRow).
type kernelJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Origin   string `json:"origin"`
	Class    string `json:"class"`
	Spec     string `json:"spec_status"`
	Emulator string `json:"emulator_status"`
	Drafter  string `json:"drafter"`
	Verdict  string `json:"verdict"`
	Reason   string `json:"reason"`
	Module   string `json:"module"`

	// The capture stage's keys (issue 10); nil when absent.
	BuiltCPU    *bool           `json:"built_cpu"`
	BuildReason json.RawMessage `json:"build_reason"`
	Captured    *int            `json:"captured"`
	SpecSource  *string         `json:"spec_source"`
	Emulated    *bool           `json:"emulated"`
	TPUCompiled map[string]bool `json:"tpu_compiled"`
	// Summaries of the draft columns, when the binary prints them; derived
	// from drafter/verdict/module otherwise.
	Drafted *bool `json:"drafted"`
	Proven  *bool `json:"proven"`
	Wired   *bool `json:"wired"`
}

// diagJSON is one kernel note (a PKN/PDR diagnostic).
type diagJSON struct {
	Code    string `json:"code"`
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// parseReport decodes one report printed by the binary.
func parseReport(data []byte) (*reportJSON, error) {
	var r reportJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	return &r, nil
}

// buildReason decodes build_reason, an object {code, text} or a plain
// string; ok is false when the key is absent or null.
func buildReason(raw json.RawMessage) (code, text string, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return "", "", false
		}
		code = firstCode(s)
		if code != "" && strings.HasPrefix(s, code) {
			s = strings.TrimLeft(s[len(code):], ": ")
		}
		return code, s, true
	}
	var o struct {
		Code string `json:"code"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || (o.Code == "" && o.Text == "") {
		return "", "", false
	}
	return o.Code, o.Text, true
}
