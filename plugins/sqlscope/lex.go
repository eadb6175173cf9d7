package sqlscope

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// kind is the class of a token.
type kind uint8

const (
	word   kind = iota + 1 // a bare identifier or keyword
	quoted                 // an identifier in backticks, double quotes or brackets
	str                    // a string literal in single quotes
	number                 // a numeric literal
	punct                  // one character of punctuation or an operator
)

// token is one lexeme: its class, its text as written, its value (a word in upper case, a
// quoted identifier unescaped, the character of a punctuation), and whether whitespace or a
// comment came before it (so a statement is re-emitted with the same adjacency: X'0A' stays
// one literal).
type token struct {
	kind  kind
	text  string
	value string
	gap   bool
}

func (t token) is(w string) bool { return t.kind == word && t.value == w }

// lex splits src into tokens, dropping whitespace and comments. It refuses every construct
// the two dialects read differently or that hides code, rather than guess: backslashes in
// literals (an escape in MySQL, a character in SQLite), '#' comments and "--" not followed by
// whitespace (MySQL only), executable comments (/*! … */), bytes outside printable ASCII except
// in literals, carriage returns not before a line feed, identifiers that start with a digit,
// parameters and variables (?, :, @, $).
func lex(src string) ([]token, error) {
	if !utf8.ValidString(src) {
		return nil, fmt.Errorf("the file is not valid UTF-8")
	}
	var out []token
	gap := false
	for i := 0; i < len(src); {
		if len(out) > MaxTokens {
			return nil, fmt.Errorf("more than %d tokens", MaxTokens)
		}
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\v':
			i++
			gap = true
			continue
		case c == '\r':
			if i+1 >= len(src) || src[i+1] != '\n' {
				return nil, fmt.Errorf("a carriage return outside a line break")
			}
			i++
			gap = true
			continue
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			if i+2 < len(src) && src[i+2] > ' ' {
				return nil, fmt.Errorf(`"--" must be followed by a space to start a comment`)
			}
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			if err := commentText(src[i : i+end]); err != nil {
				return nil, err
			}
			i += end
			gap = true
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("a comment /* is not closed")
			}
			body := src[i+2 : i+2+end]
			if strings.HasPrefix(body, "!") || strings.HasPrefix(body, "M!") {
				return nil, fmt.Errorf("executable comments (/*! … */) are not allowed")
			}
			if err := commentText(body); err != nil {
				return nil, err
			}
			i += end + 4
			gap = true
			continue
		}
		start := i
		var t token
		switch {
		case isWordStart(c):
			for i < len(src) && isWordPart(src[i]) {
				i++
			}
			t = token{kind: word, value: strings.ToUpper(src[start:i])}
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			n, err := numberLen(src[i:])
			if err != nil {
				return nil, err
			}
			i += n
			t = token{kind: number}
		case c == '\'':
			n, v, err := delimited(src[i:], '\'', '\'')
			if err != nil {
				return nil, err
			}
			i += n
			t = token{kind: str, value: v}
		case c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			n, v, err := delimited(src[i:], c, closer)
			if err != nil {
				return nil, err
			}
			i += n
			t = token{kind: quoted, value: v}
		case strings.IndexByte("(),.;=<>!+-*/%&|^~", c) >= 0:
			i++
			t = token{kind: punct, value: string(c)}
		default:
			return nil, fmt.Errorf("the character %q is not allowed outside literals", rune(c))
		}
		t.text, t.gap = src[start:i], gap
		gap = false
		out = append(out, t)
	}
	return out, nil
}

// commentText refuses a comment holding a carriage return alone or control characters, which
// could end it for one dialect and not the other.
func commentText(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t' && c != '\n' && c != '\r') || c == 0x7f || (c == '\r' && (i+1 >= len(s) || s[i+1] != '\n')) {
			return fmt.Errorf("a control character in a comment")
		}
	}
	return nil
}

// delimited reads a literal opened by open at s[0] and closed by closer, a doubled closer
// standing for itself (except for brackets, which have no escape). It returns the length read
// and the value. Backslashes and NUL bytes are refused.
func delimited(s string, open, closer byte) (int, string, error) {
	var v strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			return 0, "", fmt.Errorf("backslashes are not allowed in literals (MySQL and SQLite read them differently)")
		case c == 0:
			return 0, "", fmt.Errorf("a NUL byte in a literal")
		case c == closer:
			if open != '[' && i+1 < len(s) && s[i+1] == closer {
				v.WriteByte(c)
				i++
				continue
			}
			return i + 1, v.String(), nil
		default:
			v.WriteByte(c)
		}
	}
	return 0, "", fmt.Errorf("a literal opened with %c is not closed", open)
}

// numberLen reads a numeric literal: decimal with optional fraction and exponent, 0x… or 0b….
// A literal followed by a letter, digit, '_' or '$' (MySQL's identifiers that start with a
// digit, such as 1e_users) is refused.
func numberLen(s string) (int, error) {
	i := 0
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		i = 2
		for i < len(s) && isHex(s[i]) {
			i++
		}
	case len(s) > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B'):
		i = 2
		for i < len(s) && (s[i] == '0' || s[i] == '1') {
			i++
		}
	default:
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i < len(s) && s[i] == '.' {
			i++
			for i < len(s) && isDigit(s[i]) {
				i++
			}
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if j < len(s) && isDigit(s[j]) {
				for j < len(s) && isDigit(s[j]) {
					j++
				}
				i = j
			}
		}
	}
	if i < len(s) && (isWordPart(s[i]) || s[i] == '.') {
		return 0, fmt.Errorf("%q: identifiers may not start with a digit", s[:min(len(s), i+1)])
	}
	return i, nil
}

func isWordStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isWordPart(c byte) bool  { return isWordStart(c) || isDigit(c) || c == '$' }
func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isHex(c byte) bool       { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }
