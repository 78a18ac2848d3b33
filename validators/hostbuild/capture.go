package hostbuild

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CaptureSchema is the schema tag of every launch record.
const CaptureSchema = "pallasify.capture/v1"

// Launch is one recorded kernel launch (a line of launches.jsonl).
type Launch struct {
	Schema       string   `json:"schema"`
	Seq          int      `json:"seq"`
	Kernel       string   `json:"kernel"`
	Instance     string   `json:"instance"`
	TemplateArgs []string `json:"template_args"`
	Grid         [3]int   `json:"grid"`
	Block        [3]int   `json:"block"`
	SharedBytes  int      `json:"shared_bytes"`
	Site         string   `json:"site"` // file:line of the launch in the build's sources
	Args         []Arg    `json:"args"`
	RolesFrom    string   `json:"roles_from"` // replay | diff
	DurationS    float64  `json:"duration_s"`
	Error        string   `json:"error,omitempty"`
	// Probe says the launch came from the runtime's backward probe, not
	// from the test's own calls: "backward of mmcv.ops.gather_points.GatherPoints"
	// (the test called the op's autograd Function forward only; the probe
	// differentiated one copy of that call). From probes.jsonl.
	Probe string `json:"probe,omitempty"`
	// StandIns are the absent data files the test had read (as seeded random
	// data of the shape it asked for) before this launch: the inputs are
	// not the repository's data, the shapes are the test's. From probes.jsonl.
	StandIns []string `json:"standins,omitempty"`
	// Dir is the capture directory the record was read from (for the
	// before/after files); not part of the record.
	Dir string `json:"-"`
}

// Arg is one argument of a launch.
type Arg struct {
	Index int    `json:"index"`
	Name  string `json:"name,omitempty"` // from the kernel's __global__ declaration
	Decl  string `json:"decl,omitempty"` // the declared parameter type ("const T* __restrict__")
	Kind  string `json:"kind"`           // scalar | pointer | struct
	CType string `json:"ctype"`          // the argument's C++ type as passed ("const float*", "c10::Half*")
	DType string `json:"dtype"`          // element (pointer) or value (scalar) dtype; "opaque" for structs
	Lanes int    `json:"lanes,omitempty"`
	// Value is a scalar's value (JSON number or bool; null for NaN/Inf) or a
	// struct's bytes as a hex string.
	Value   json.RawMessage `json:"value,omitempty"`
	Address string          `json:"address,omitempty"`
	// ShapeHint is the tensor's sizes when the pointer is a tensor's data
	// pointer (from a packed accessor, or the tensors the Python call saw).
	ShapeHint   []int64 `json:"shape_hint,omitempty"`
	Strides     []int64 `json:"strides,omitempty"`
	ShapeFrom   string  `json:"shape_from,omitempty"` // accessor | tensor
	Alloc       *Alloc  `json:"alloc,omitempty"`
	Origin      string  `json:"origin,omitempty"` // "unknown" when the pointer is in no known allocation
	OffsetBytes int64   `json:"offset_bytes,omitempty"`
	ExtentBytes int64   `json:"extent_bytes,omitempty"`
	Read        bool    `json:"read,omitempty"`
	Written     bool    `json:"written,omitempty"`
	ReadKnown   bool    `json:"read_known,omitempty"`
	Role        string  `json:"role,omitempty"` // input | output | inout (pointers whose contents were captured)
	// Partial: the replay left some of the pointer's bytes untouched (the
	// kernel writes it in part): its role is inout, the contents before the
	// launch being part of the result.
	Partial  bool   `json:"partial,omitempty"`
	Before   string `json:"before,omitempty"`
	After    string `json:"after,omitempty"`
	Captured *bool  `json:"captured,omitempty"` // false: over the capture byte budget
}

// Alloc is the allocation a pointer points into.
type Alloc struct {
	ID     int64  `json:"id"`
	Bytes  int64  `json:"bytes"`
	Origin string `json:"origin"` // torch | cudaMalloc | host
}

// Scalar returns a scalar argument's value as a float64.
func (a Arg) Scalar() (float64, bool) {
	if a.Kind != "scalar" {
		return 0, false
	}
	s := strings.TrimSpace(string(a.Value))
	switch s {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// Elements returns the pointer's extent in elements of its dtype.
func (a Arg) Elements() int64 {
	n := dtypeBytes[a.DType]
	if n == 0 {
		return 0
	}
	return a.ExtentBytes / int64(n)
}

var dtypeBytes = map[string]int{"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "int16": 2,
	"uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "bool": 1, "bytes": 1}

// BeforeBytes reads the argument's contents before the launch.
func (l Launch) BeforeBytes(i int) ([]byte, error) { return l.file(l.Args[i].Before) }

// AfterBytes reads the argument's contents after the launch.
func (l Launch) AfterBytes(i int) ([]byte, error) { return l.file(l.Args[i].After) }

func (l Launch) file(name string) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("hostbuild: no captured contents (%q)", name)
	}
	return os.ReadFile(filepath.Join(l.Dir, name))
}

type tensorCall struct {
	Function string `json:"function"`
	SeqFrom  int    `json:"seq_from"`
	SeqTo    int    `json:"seq_to"`
	Tensors  []struct {
		Address string  `json:"address"`
		Shape   []int64 `json:"shape"`
		Strides []int64 `json:"strides"`
		DType   string  `json:"dtype"`
	} `json:"tensors"`
}

// ReadCaptures parses a capture directory: launches.jsonl, with shape hints
// filled in from tensors.jsonl (the tensors each Python-level call of a
// built module saw, matched by data pointer within the launches the call
// covered). A missing directory or file is no launches.
func ReadCaptures(dir string) ([]Launch, error) {
	f, err := os.Open(filepath.Join(dir, "launches.jsonl"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Launch
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		var l Launch
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("hostbuild: %s line %d: %w", filepath.Join(dir, "launches.jsonl"), n, err)
		}
		if l.Schema != CaptureSchema {
			return nil, fmt.Errorf("hostbuild: %s line %d: schema %q, want %q", filepath.Join(dir, "launches.jsonl"), n, l.Schema, CaptureSchema)
		}
		l.Dir = dir
		for i := range l.Args {
			if len(l.Args[i].ShapeHint) > 0 && l.Args[i].ShapeFrom == "" {
				l.Args[i].ShapeFrom = "accessor"
			}
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	calls, err := readTensorCalls(filepath.Join(dir, "tensors.jsonl"))
	if err != nil {
		return nil, err
	}
	probes, err := readProbes(filepath.Join(dir, "probes.jsonl"))
	if err != nil {
		return nil, err
	}
	for i := range out {
		l := &out[i]
		for _, p := range probes {
			switch {
			case p.Probe == "backward" && l.Seq >= p.SeqFrom && l.Seq < p.SeqTo:
				l.Probe = "backward probe of " + p.Function
			case p.Probe == "standin" && l.Seq >= p.SeqFrom && !slices.Contains(l.StandIns, p.File):
				l.StandIns = append(l.StandIns, p.File)
			}
		}
		for _, c := range calls {
			if l.Seq < c.SeqFrom || l.Seq >= c.SeqTo {
				continue
			}
			for j := range l.Args {
				a := &l.Args[j]
				if a.Kind != "pointer" || len(a.ShapeHint) > 0 {
					continue
				}
				for _, t := range c.Tensors {
					if sameAddress(t.Address, a.Address) && t.DType == a.DType {
						a.ShapeHint, a.Strides, a.ShapeFrom = t.Shape, t.Strides, "tensor"
						break
					}
				}
			}
		}
	}
	return out, nil
}

func sameAddress(a, b string) bool {
	x, err1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
	y, err2 := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 64)
	return err1 == nil && err2 == nil && x == y
}

// probe is a line of probes.jsonl: what the runtime did beyond the test's
// own calls (pyrt: the backward probe, data stand-ins).
type probe struct {
	Probe    string `json:"probe"` // backward | standin
	Function string `json:"function"`
	File     string `json:"file"`
	SeqFrom  int    `json:"seq_from"`
	SeqTo    int    `json:"seq_to"`
}

func readProbes(path string) ([]probe, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []probe
	for _, line := range strings.Split(string(b), "\n") {
		var p probe
		if json.Unmarshal([]byte(line), &p) == nil && p.Probe != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

func readTensorCalls(path string) ([]tensorCall, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []tensorCall
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var c tensorCall
		if json.Unmarshal(sc.Bytes(), &c) == nil {
			out = append(out, c)
		}
	}
	return out, sc.Err()
}
