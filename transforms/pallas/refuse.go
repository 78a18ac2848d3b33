package pallas

import (
	"errors"
	"fmt"
)

// Refusal codes (the PPL family): why the rule drafter did not draft a kernel.
const (
	CodeClass       = "PPL001" // the kernel's class has no rule template
	CodeUnsupported = "PPL002" // a construct the translator cannot express exactly
	CodeNoSpec      = "PPL003" // no KernelSpec: nothing to shape the draft by
	CodeNoUnit      = "PPL004" // no isolated CUDA unit (Triton, unresolved source)
	CodeDType       = "PPL005" // a dtype TPU kernels do not support (float64)
	CodeDataIndex   = "PPL006" // a data-dependent address (gather/scatter by value)
)

// Refusal is a coded reason not to draft. The drafter never guesses: code it
// cannot translate exactly is refused with one of these.
type Refusal struct {
	Code    string
	Message string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

func refuse(code, format string, a ...any) error {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, a...)}
}

// AsRefusal returns the refusal inside err, if any.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}
