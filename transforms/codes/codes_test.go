package codes

import (
	"strings"
	"testing"
)

func TestFamilyOf(t *testing.T) {
	for id, want := range map[string]string{
		"PDV001": "PDV", "PIO900": "PIO", "V-MISMATCH": "V-", "V-TPU-COMPILE": "V-", "EMU-INCLUDE": "EMU-",
		"L-GATE": "L-", "CAP-NO-TESTS": "CAP-", "SBX-DISK": "SBX-",
	} {
		if got := FamilyOf(id); got != want {
			t.Errorf("FamilyOf(%s) = %q, want %q", id, got, want)
		}
	}
}

func TestIDShape(t *testing.T) {
	for id, ok := range map[string]bool{
		"PDV001": true, "PKN900": true, "V-MISMATCH": true, "EMU-UNSUPPORTED": true, "L-GATE": true,
		"PDV01": false, "pdv001": false, "V-": false, "UTF-8": false, "X-GitHub-Event": false, "ABCDE-X": false,
	} {
		if ID.MatchString(id) != ok {
			t.Errorf("ID.MatchString(%q) = %v, want %v", id, !ok, ok)
		}
	}
}

func TestRegisterLookup(t *testing.T) {
	Register("test", "a test family", Code{Code: "ZZT-ONE", Name: "one", Title: "One", Doc: "The first."},
		Code{Code: "ZZT-TWO", Name: "two", Severity: Error, Title: "Two", Doc: "The second."})
	e, ok := Lookup(" `zzt-one` ")
	if !ok || e.Name != "one" || e.Group != "test" || e.About != "a test family" || e.Severity != Info || e.Rule {
		t.Fatalf("Lookup(zzt-one) = %+v, %v", e, ok)
	}
	if _, ok := Lookup("ZZT-THREE"); ok {
		t.Error("an unregistered code was found")
	}
	RegisterRule(Code{Code: "PZT001", Name: "zz-rule", Title: "A rule", Doc: "Its page."}, "safe")
	var order []string
	for _, e := range All() {
		if strings.HasPrefix(e.Code.Code, "ZZT-") || e.Code.Code == "PZT001" {
			order = append(order, e.Code.Code)
		}
	}
	if strings.Join(order, " ") != "PZT001 ZZT-ONE ZZT-TWO" {
		t.Errorf("All order: %v (rules first, then by family and ID)", order)
	}
	if n := Families()["ZZT-"]; n != 2 {
		t.Errorf("Families()[ZZT-] = %d, want 2", n)
	}
}

func TestRegisterRefuses(t *testing.T) {
	for name, c := range map[string]Code{
		"twice":   {Code: "ZZR-TWICE", Name: "twice", Title: "Twice", Doc: "Registered twice."},
		"no doc":  {Code: "ZZR-NODOC", Name: "nodoc", Title: "No doc"},
		"bad id":  {Code: "zz-bad", Name: "bad", Title: "Bad", Doc: "Lower case."},
		"no name": {Code: "ZZR-NONAME", Title: "No name", Doc: "Nameless."},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "twice" {
				Register("test", "", c)
			}
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%s) did not panic", c.Code)
				}
			}()
			Register("test", "", c)
		})
	}
}
