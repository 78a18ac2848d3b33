// Package kit is the one helper kit of the rewrite rules (every family under
// transforms/: device, cudaapi, amp, distributed, hf, compile, hazards, xla).
// It holds what more than one family needs, each name with one meaning:
//
//   - syntax queries (query.go, device.go): Start/End of a node, Dotted text
//     of an identifier chain, Qualify (a dotted string) and Qualified (a
//     node) resolved through the imports — a bare `torch` head counts as
//     torch even without an import, so a fix that adds `import torch` does
//     not change what the next pass resolves —, Callee/CallName of a call,
//     Args/Arguments/Kwarg/Positional of an argument list, literal values
//     (PlainString, Int, Bool, IsNone);
//   - statements: ExprStatement (the expression statement made of exactly a
//     node) and EnclosingStatement (the statement a node is anywhere inside);
//     lines: LineStart, LineEnd, LineIndent;
//   - walks: Calls and Nodes over the whole tree, WalkHits and CallsWith over
//     only the subtrees that mention a rule's words (walk.go);
//   - edits: add or drop an argument or keyword, remove or guard a statement,
//     parenthesise (device.go, query.go);
//   - the module-level DEVICE definition, the device-index helper and the
//     device-string parsers the device-placement rules share (device.go);
//   - Report, which fits a finding's edits to f-strings and keeps fixes out
//     of tests that compare CUDA with the CPU (report.go, crosscheck.go);
//   - Doc, the one renderer of a rule's documentation page (page.go).
//
// Everything is a pure function of a rule.Pass (or of a node and the
// source); nothing is cached between files. Facts several rules need per file
// go through rule.Pass.Memo.
package kit
