// Ground truth for benchmarks/check_corpus.py: whether a Go source parses, by go/parser (what `gofmt -e` runs).
//
// Protocol (stdin, stdout): a line "LENGTH" (bytes), then the source; the answer is one line: "ok", or
// "error LINE MESSAGE". Usage: go run parse_go.go
package main

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		header, err := in.ReadString('\n')
		if err != nil {
			return
		}
		length, _ := strconv.Atoi(strings.TrimSpace(header))
		source := make([]byte, length)
		if _, err := io.ReadFull(in, source); err != nil {
			return
		}
		_, err = parser.ParseFile(token.NewFileSet(), "source.go", source, parser.AllErrors)
		var list scanner.ErrorList
		if err == nil {
			fmt.Fprintln(out, "ok")
		} else if errors.As(err, &list) && len(list) > 0 {
			fmt.Fprintf(out, "error %d %s\n", list[0].Pos.Line, strings.ReplaceAll(list[0].Msg, "\n", " "))
		} else {
			fmt.Fprintf(out, "error 0 %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		}
		out.Flush()
	}
}
