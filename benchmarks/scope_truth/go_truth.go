// Ground truth for benchmarks/scope.py: the definitions of Go files, from go/parser and go/ast.
//
// Input (stdin): a JSON array of file paths. Output (stdout): one JSON line per file, in input order:
//
//	{"path", "lines", "parse_errors", "defs": [[kind, first, header, last, open, doc_first], ...]}
//
// or {"path", "error"} when the file cannot be read. Lines are 0-based (go/token counts lines at \n).
//
//	kind: "func" (functions and methods with a body), "struct" or "interface" (type declarations);
//	first: the first line of the span: the header line, then up over the contiguous comment-only lines directly
//	       above (no blank line between; a blank line inside a /* */ comment is part of it), the rule every
//	       language of the benchmark shares;
//	header: the line of the `func` or `type` keyword (in a grouped `type (...)`, the line of the type's name);
//	last: the line of the closing brace;
//	open: the line of the `{` that opens the body;
//	doc_first: the first line of the doc comment group (FuncDecl.Doc, GenDecl.Doc or TypeSpec.Doc), else header:
//	           the Go parser's own answer, which the caller checks against `first`.
//
// Usage: go run go_truth.go < files.json
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"sort"
)

type result struct {
	Path        string  `json:"path"`
	Lines       int     `json:"lines,omitempty"`
	ParseErrors int     `json:"parse_errors"`
	Defs        [][]any `json:"defs"`
	Error       string  `json:"error,omitempty"`
}

// commentOnly reports, for each 0-based line, whether all of it is inside comments (whitespace aside), and it is
// either not blank or inside a block comment.
func commentOnly(src []byte, file *token.File, comments []*ast.CommentGroup) []bool {
	inComment := make([]bool, len(src))
	for _, group := range comments {
		for _, c := range group.List {
			for i := file.Offset(c.Pos()); i < file.Offset(c.End()); i++ {
				inComment[i] = true
			}
		}
	}
	lines := make([]bool, file.LineCount()+1)
	// A blank line inside a block comment belongs to the comment: it is no gap between comment and definition.
	line, nonBlank, allComment, start := 0, false, true, 0
	for i, b := range src {
		if b == '\n' {
			lines[line] = allComment && (nonBlank || inComment[start])
			line, nonBlank, allComment, start = line+1, false, true, i+1
			continue
		}
		if b == ' ' || b == '\t' || b == '\r' || b == '\v' || b == '\f' {
			continue
		}
		nonBlank = true
		if !inComment[i] {
			allComment = false
		}
	}
	if line < len(lines) && start < len(src) {
		lines[line] = allComment && (nonBlank || inComment[start])
	}
	return lines
}

func truth(path string) result {
	src, err := os.ReadFile(path)
	if err != nil {
		return result{Path: path, Error: err.Error()}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	res := result{Path: path, Defs: [][]any{}}
	var list scanner.ErrorList
	if errors.As(err, &list) {
		res.ParseErrors = len(list)
	} else if err != nil {
		return result{Path: path, Error: err.Error()}
	}
	if f == nil {
		return res
	}
	file := fset.File(f.Pos())
	res.Lines = file.LineCount()
	if len(src) > 0 && src[len(src)-1] == '\n' {
		res.Lines++ // the empty line after a final \n, as the caller counts lines
	}
	// Unadjusted: a `//line` directive must not move the positions away from the lines of this file.
	line := func(p token.Pos) int { return fset.PositionFor(p, false).Line - 1 }
	onlyComments := commentOnly(src, file, f.Comments)
	first := func(header int) int {
		for header > 0 && onlyComments[header-1] {
			header--
		}
		return header
	}
	docFirst := func(doc *ast.CommentGroup, header int) int {
		if doc == nil {
			return header
		}
		return line(doc.Pos())
	}
	add := func(kind string, header int, last, open token.Pos, doc *ast.CommentGroup) {
		res.Defs = append(res.Defs, []any{kind, first(header), header, line(last), line(open), docFirst(doc, header)})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch d := n.(type) {
		case *ast.FuncDecl:
			if d.Body != nil { // a body-less declaration is implemented in assembly: nothing to rewrite
				add("func", line(d.Pos()), d.Body.Rbrace, d.Body.Lbrace, d.Doc)
			}
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				break
			}
			for _, spec := range d.Specs {
				ts := spec.(*ast.TypeSpec)
				var kind string
				var open, closing token.Pos
				switch t := ts.Type.(type) {
				case *ast.StructType:
					kind, open, closing = "struct", t.Fields.Opening, t.Fields.Closing
				case *ast.InterfaceType:
					kind, open, closing = "interface", t.Methods.Opening, t.Methods.Closing
				default:
					continue
				}
				if d.Lparen.IsValid() { // grouped: `type ( ... )`, each type from its own name
					add(kind, line(ts.Pos()), closing, open, ts.Doc)
				} else {
					add(kind, line(d.TokPos), closing, open, d.Doc)
				}
			}
		}
		return true
	})
	sort.SliceStable(res.Defs, func(i, j int) bool { return res.Defs[i][2].(int) < res.Defs[j][2].(int) })
	return res
}

func main() {
	var files []string
	if err := json.NewDecoder(os.Stdin).Decode(&files); err != nil {
		panic(err)
	}
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for _, path := range files {
		if err := enc.Encode(truth(path)); err != nil {
			panic(err)
		}
	}
	if err := out.Flush(); err != nil {
		panic(err)
	}
}
