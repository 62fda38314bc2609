// Package lexer splits the source text of the alerting rule language into tokens.
package lexer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind identifies the lexical class of a token.
type Kind int

// Token kinds.
const (
	EOF Kind = iota
	Illegal
	Ident
	Int
	Float
	String
	Duration
	Comment

	Assign   // =
	Eq       // ==
	NotEq    // !=
	Lt       // <
	LtEq     // <=
	Gt       // >
	GtEq     // >=
	Plus     // +
	Minus    // -
	Star     // *
	Slash    // /
	Not      // !
	And      // &&
	Or       // ||
	Dot      // .
	Comma    // ,
	Colon    // :
	LParen   // (
	RParen   // )
	LBrace   // {
	RBrace   // }
	LBracket // [
	RBracket // ]

	KwRule
	KwWhen
	KwFor
	KwThen
	KwTrue
	KwFalse
	KwNull
)

var kindNames = map[Kind]string{
	EOF:      "EOF",
	Illegal:  "ILLEGAL",
	Ident:    "IDENT",
	Int:      "INT",
	Float:    "FLOAT",
	String:   "STRING",
	Duration: "DURATION",
	Comment:  "COMMENT",
	Assign:   "=",
	Eq:       "==",
	NotEq:    "!=",
	Lt:       "<",
	LtEq:     "<=",
	Gt:       ">",
	GtEq:     ">=",
	Plus:     "+",
	Minus:    "-",
	Star:     "*",
	Slash:    "/",
	Not:      "!",
	And:      "&&",
	Or:       "||",
	Dot:      ".",
	Comma:    ",",
	Colon:    ":",
	LParen:   "(",
	RParen:   ")",
	LBrace:   "{",
	RBrace:   "}",
	LBracket: "[",
	RBracket: "]",
	KwRule:   "rule",
	KwWhen:   "when",
	KwFor:    "for",
	KwThen:   "then",
	KwTrue:   "true",
	KwFalse:  "false",
	KwNull:   "null",
}

var keywords = map[string]Kind{
	"rule":  KwRule,
	"when":  KwWhen,
	"for":   KwFor,
	"then":  KwThen,
	"true":  KwTrue,
	"false": KwFalse,
	"null":  KwNull,
}

// String returns the name of the kind, or the operator it stands for.
func (k Kind) String() string {
	if name, ok := kindNames[k]; ok {
		return name
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// IsKeyword reports whether k is a reserved word.
func (k Kind) IsKeyword() bool {
	return k >= KwRule && k <= KwNull
}

// Pos is a position in the source text. Line and Column are 1-based;
// Column counts runes, not bytes.
type Pos struct {
	Offset int
	Line   int
	Column int
}

func (p Pos) String() string {
	return fmt.Sprintf("%d:%d", p.Line, p.Column)
}

// Token is a single lexical element together with its position.
type Token struct {
	Kind Kind
	Text string
	Pos  Pos
}

func (t Token) String() string {
	switch t.Kind {
	case Ident, Int, Float, String, Duration, Illegal:
		return fmt.Sprintf("%s(%q)@%s", t.Kind, t.Text, t.Pos)
	default:
		return fmt.Sprintf("%s@%s", t.Kind, t.Pos)
	}
}

// Error describes a malformed token.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
}

type Lexer struct {
	src          string
	offset       int
	line         int
	column       int
	keepComments bool
	peeked       *Token
	errs         []*Error
}

func New(src string, keepComments bool) *Lexer {
	return &Lexer{src: src, line: 1, column: 1, keepComments: keepComments}
}

func (l *Lexer) Next() Token {
	if l.peeked != nil {
		tok := *l.peeked
		l.peeked = nil
		return tok
	}
	for {
		tok := l.scan()
		if tok.Kind == Comment && !l.keepComments {
			continue
		}
		return tok
	}
}

func (l *Lexer) Peek() Token {
	if l.peeked == nil {
		tok := l.Next()
		l.peeked = &tok
	}
	return *l.peeked
}

func (l *Lexer) All() []Token {
	var toks []Token
	for {
		tok := l.Next()
		toks = append(toks, tok)
		if tok.Kind == EOF {
			return toks
		}
	}
}

func (l *Lexer) Errors() []*Error {
	return l.errs
}

func (l *Lexer) pos() Pos {
	return Pos{Offset: l.offset, Line: l.line, Column: l.column}
}

func (l *Lexer) peekRune() rune {
	if l.offset >= len(l.src) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.offset:])
	return r
}

func (l *Lexer) advance() rune {
	if l.offset >= len(l.src) {
		return -1
	}
	r, size := utf8.DecodeRuneInString(l.src[l.offset:])
	l.offset += size
	if r == '\n' {
		l.line++
		l.column = 1
	} else {
		l.column++
	}
	return r
}

func (l *Lexer) errorf(pos Pos, format string, args ...any) Token {
	l.errs = append(l.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
	return Token{Kind: Illegal, Text: l.src[pos.Offset:l.offset], Pos: pos}
}

func (l *Lexer) scan() Token {
	for unicode.IsSpace(l.peekRune()) {
		l.advance()
	}
	start := l.pos()
	r := l.peekRune()
	switch {
	case r == -1:
		return Token{Kind: EOF, Pos: start}
	case r == '#':
		for r := l.peekRune(); r != '\n' && r != -1; r = l.peekRune() {
			l.advance()
		}
		return Token{Kind: Comment, Text: l.src[start.Offset:l.offset], Pos: start}
	case isIdentStart(r):
		for isIdentPart(l.peekRune()) {
			l.advance()
		}
		text := l.src[start.Offset:l.offset]
		if kw, ok := keywords[text]; ok {
			return Token{Kind: kw, Text: text, Pos: start}
		}
		return Token{Kind: Ident, Text: text, Pos: start}
	case r >= '0' && r <= '9':
		return l.scanNumber(start)
	case r == '"':
		return l.scanString(start)
	}
	l.advance()
	return l.scanOperator(r, start)
}

func (l *Lexer) scanNumber(start Pos) Token {
	kind := Int
	for isDigit(l.peekRune()) {
		l.advance()
	}
	if l.peekRune() == '.' {
		kind = Float
		l.advance()
		if !isDigit(l.peekRune()) {
			return l.errorf(start, "expected digit after decimal point")
		}
		for isDigit(l.peekRune()) {
			l.advance()
		}
	}
	if unit := l.peekRune(); kind == Int && strings.ContainsRune("smhd", unit) {
		l.advance()
		if isIdentPart(l.peekRune()) {
			return l.errorf(start, "invalid duration suffix")
		}
		kind = Duration
	}
	return Token{Kind: kind, Text: l.src[start.Offset:l.offset], Pos: start}
}

func (l *Lexer) scanString(start Pos) Token {
	l.advance() // opening quote
	var sb strings.Builder
	for {
		r := l.advance()
		switch r {
		case -1, '\n':
			return l.errorf(start, "unterminated string literal")
		case '"':
			return Token{Kind: String, Text: sb.String(), Pos: start}
		case '\\':
			esc := l.advance()
			switch esc {
			case 'n':
				sb.WriteRune('\n')
			case 't':
				sb.WriteRune('\t')
			case '"', '\\':
				sb.WriteRune(esc)
			default:
				return l.errorf(start, "unknown escape sequence \\%c", esc)
			}
		default:
			sb.WriteRune(r)
		}
	}
}

var twoCharOps = map[string]Kind{
	"==": Eq,
	"!=": NotEq,
	"<=": LtEq,
	">=": GtEq,
	"&&": And,
	"||": Or,
}

var oneCharOps = map[rune]Kind{
	'=': Assign,
	'<': Lt,
	'>': Gt,
	'+': Plus,
	'-': Minus,
	'*': Star,
	'/': Slash,
	'!': Not,
	'.': Dot,
	',': Comma,
	':': Colon,
	'(': LParen,
	')': RParen,
	'{': LBrace,
	'}': RBrace,
	'[': LBracket,
	']': RBracket,
}

func (l *Lexer) scanOperator(first rune, start Pos) Token {
	if second := l.peekRune(); second != -1 {
		if kind, ok := twoCharOps[string([]rune{first, second})]; ok {
			l.advance()
			return Token{Kind: kind, Text: l.src[start.Offset:l.offset], Pos: start}
		}
	}
	if kind, ok := oneCharOps[first]; ok {
		return Token{Kind: kind, Text: string(first), Pos: start}
	}
	return l.errorf(start, "unexpected character %q", first)
}

func isIdentStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r)
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || isDigit(r)
}

func isDigit(r rune) bool {
	return r >= '0' && r <= '9'
}
