package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/pipeline"
)

// SARIF 2.1.0 output: one run, the tool's rules (every code that occurs), and
// one result per diagnostic — rule findings and PIO problems alike.

// SARIFSchema is the schema URI written into every SARIF log.
const SARIFSchema = "https://json.schemastore.org/sarif-2.1.0.json"

type sarifLog struct {
	Version string     `json:"version"`
	Schema  string     `json:"$schema"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string        `json:"id"`
	Name             string        `json:"name,omitempty"`
	ShortDescription sarifMessage  `json:"shortDescription"`
	HelpURI          string        `json:"helpUri,omitempty"`
	Properties       *sarifRuleExt `json:"properties,omitempty"`
}

type sarifRuleExt struct {
	Safety string `json:"safety,omitempty"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties *sarifResultExt `json:"properties,omitempty"`
}

type sarifResultExt struct {
	Applied bool   `json:"applied"`
	Fix     string `json:"fix,omitempty"`
	Skipped string `json:"skipped,omitempty"`
	// Kernel fields, on the kernel stage's notes about a kernel.
	KernelID       string `json:"kernel_id,omitempty"`
	KernelClass    string `json:"kernel_class,omitempty"`
	SpecStatus     string `json:"spec_status,omitempty"`
	EmulatorStatus string `json:"emulator_status,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
}

func sarifLevel(d pipeline.Diagnostic) string {
	switch {
	case d.Severity == pipeline.SevError:
		return "error"
	case d.Applied || d.Severity == pipeline.SevInfo:
		return "note"
	}
	return "warning"
}

func writeSARIF(w io.Writer, rep *Report) error {
	var all []pipeline.Diagnostic
	all = append(all, rep.Problems...)
	all = append(all, rep.KernelNotes...)
	all = append(all, rep.Findings...)
	codes := map[string]bool{}
	for _, d := range all {
		codes[d.Code] = true
	}
	ids := make([]string, 0, len(codes))
	for c := range codes {
		ids = append(ids, c)
	}
	sort.Strings(ids)
	index := map[string]int{}
	driver := sarifDriver{Name: "pallasify", Version: rep.Version, Rules: []sarifRule{}}
	for i, id := range ids {
		index[id] = i
		sr := sarifRule{ID: id, ShortDescription: sarifMessage{Text: rep.title(id)}}
		if r := rep.rules[id]; r != nil {
			sr.Name = r.Name
			sr.Properties = &sarifRuleExt{Safety: r.Safety.String()}
		} else if c, ok := pipeline.CodeInfo(id); ok {
			sr.Name = c.Name
		}
		driver.Rules = append(driver.Rules, sr)
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}}
	kernelAt := map[string]KernelRow{}
	for _, k := range rep.Kernels {
		kernelAt[fmt.Sprintf("%s:%d", k.Path, k.Line)] = k
	}
	for _, d := range all {
		line, col := d.Line, d.Col
		if line < 1 {
			line = 1
		}
		if col < 1 {
			col = 1
		}
		res := sarifResult{RuleID: d.Code, RuleIndex: index[d.Code], Level: sarifLevel(d), Message: sarifMessage{Text: d.Message},
			Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: d.Path},
				Region: sarifRegion{StartLine: line, StartColumn: col}}}}}
		if d.Fix != "" || d.Applied || d.Skipped != "" {
			res.Properties = &sarifResultExt{Applied: d.Applied, Fix: d.Fix, Skipped: d.Skipped}
		}
		if k, ok := kernelAt[fmt.Sprintf("%s:%d", d.Path, d.Line)]; ok && strings.HasPrefix(d.Code, "PKN") {
			if res.Properties == nil {
				res.Properties = &sarifResultExt{}
			}
			res.Properties.KernelID, res.Properties.KernelClass = k.ID, k.Class
			res.Properties.SpecStatus, res.Properties.EmulatorStatus = k.Spec, k.Emulator
		}
		run.Results = append(run.Results, res)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Version: "2.1.0", Schema: SARIFSchema, Runs: []sarifRun{run}})
}
