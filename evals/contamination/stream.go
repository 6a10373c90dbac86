package contamination

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
	"unsafe"
)

// Memory per file being scanned does not grow with the length of a record:
// lines are read through a buffer of lineBuffer bytes, and a line longer
// than that (a JSON record, or a text line) is scanned in pieces of about
// that size, the text field decoded as it streams by. A word is carried
// from one piece to the next whole up to maxCarry bytes; a longer run of
// letters without a separator is cut there (no test item has such a word).
const (
	lineBuffer = 1 << 20
	maxCarry   = 64 << 10
)

// recordStream hands one record's text to the matcher in pieces, cut
// between words.
type recordStream struct {
	m     *matcher
	src   *source
	line  int    // the record's line
	off   int    // bytes of the record's text passed to the matcher
	carry []byte // the end of the last piece: a word that may go on
}

// start begins the text of the record on line n (for plain text, a line;
// the matcher is reset by the caller where n-grams must not run on).
func (s *recordStream) start(n int) { s.line, s.off, s.carry = n, 0, s.carry[:0] }

// write scans p, which more of the record's text may follow.
func (s *recordStream) write(p []byte) {
	cut := cutPoint(p)
	if len(s.carry)+cut == 0 {
		s.carry = append(s.carry, p...)
		return
	}
	text := string(append(s.carry, p[:cut]...)) // copied: p is the reader's buffer
	s.m.scan(s.src, s.line, text, s.off)
	s.m.detach()
	s.off += len(text)
	s.carry = append(s.carry[:0], p[cut:]...)
}

// end scans what is carried: the record's text is complete.
func (s *recordStream) end() {
	if len(s.carry) > 0 {
		s.m.scan(s.src, s.line, string(s.carry), s.off)
		s.m.detach()
		s.off += len(s.carry)
		s.carry = s.carry[:0]
	}
}

// cutPoint returns where to cut p so that no word is split: just after its
// last ASCII separator (never inside a UTF-8 sequence), looking back at most
// maxCarry bytes; failing that, before an incomplete rune at its end.
func cutPoint(p []byte) int {
	for i := len(p) - 1; i >= 0 && len(p)-i <= maxCarry; i-- {
		if b := p[i]; b < utf8.RuneSelf && asciiClass[b] == 0 {
			return i + 1
		}
	}
	for i := len(p) - 1; i >= 0 && len(p)-i < utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return len(p)
			}
			return i
		}
	}
	return len(p)
}

// readError names a failed read of in at line n; a compressed stream that
// ends early says so, rather than surfacing as malformed JSON later.
func readError(in *Input, n int, err error) error {
	if in.Compression != "" && errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s line %d: truncated %s stream: the file ends inside its compressed data (%w)", in.Path, n, in.Compression, err)
	}
	return fmt.Errorf("%s line %d: %w", in.Path, n, err)
}

// binaryError refuses a file with a NUL byte, which no text has: a binary
// file under a text name.
func binaryError(in *Input, n int) error {
	return fmt.Errorf("%s line %d: binary data (a NUL byte), not text", in.Path, n)
}

// scanLines scans a JSON Lines or plain-text stream into m and tf.
func scanLines(ctx context.Context, m *matcher, in *Input, src *source, field string, r io.Reader, tf *TrainFile) error {
	br := bufio.NewReaderSize(r, lineBuffer)
	rs := &recordStream{m: m, src: src}
	plain := in.Format == "text"
	m.reset() // plain text: words run on across lines
	var scratch []byte
	for n := 1; ; {
		chunk, err := br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !full && err != io.EOF {
			return readError(in, n, err)
		}
		if len(chunk) == 0 {
			return nil // EOF
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if bytes.IndexByte(chunk, 0) >= 0 {
			return binaryError(in, n)
		}
		tf.Records++
		switch {
		case plain:
			rs.start(n)
			rs.write(chunk)
			for full {
				if chunk, err = br.ReadSlice('\n'); err != nil && !errors.Is(err, bufio.ErrBufferFull) && err != io.EOF {
					return readError(in, n, err)
				}
				full = errors.Is(err, bufio.ErrBufferFull)
				if bytes.IndexByte(chunk, 0) >= 0 {
					return binaryError(in, n)
				}
				rs.write(chunk)
			}
			if err == io.EOF {
				rs.end()
			}
		case full: // a record longer than the buffer: stream its text
			rest := &restOfLine{pending: chunk, br: br}
			m.reset()
			rs.start(n)
			ok, perr := streamField(bufio.NewReaderSize(rest, 64<<10), field, rs.write)
			if rest.err != nil {
				return readError(in, n, rest.err)
			}
			if rest.nul {
				return binaryError(in, n)
			}
			if perr != nil {
				return fmt.Errorf("%s line %d: %w", in.Path, n, perr)
			}
			if !ok {
				tf.noText(n)
			}
			rs.end()
			if _, err := io.Copy(io.Discard, rest); err != nil {
				return readError(in, n, err)
			}
			if rest.eof {
				return nil
			}
		default:
			line := bytes.TrimSuffix(chunk, []byte("\n"))
			if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
				tf.Records--
				break
			}
			text, ok, err := jsonField(line, field, &scratch)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", in.Path, n, err)
			}
			if !ok {
				tf.noText(n)
				break
			}
			// The text is read where it lies, without a copy: a record's
			// words are looked at only while it is scanned (reset), and
			// what a report keeps is cloned (matcher.record).
			m.reset()
			m.scan(src, n, unsafe.String(unsafe.SliceData(text), len(text)), 0)
		}
		if err == io.EOF {
			return nil
		}
		n++
	}
}

// restOfLine reads the rest of the line whose first part is pending, from
// br, up to and including its newline; err keeps a failed read of br.
type restOfLine struct {
	pending []byte
	br      *bufio.Reader
	eol     bool // the line's end has been read from br
	eof     bool // and it was the end of the file
	nul     bool // a NUL byte was seen
	err     error
}

func (r *restOfLine) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.eol {
			return 0, io.EOF
		}
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			r.eol = true
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			r.eol, r.eof = true, true
		default:
			r.err = err
		}
		r.nul = r.nul || bytes.IndexByte(chunk, 0) >= 0
		r.pending = chunk
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// streamField is jsonField for a line too long to hold: it reads one JSON
// object from r and hands the decoded string value of the top-level key to
// emit in pieces. found is false when the key is absent.
func streamField(r *bufio.Reader, key string, emit func([]byte)) (found bool, err error) {
	c := nextNonSpace(r)
	if c != '{' {
		return false, errors.New("not a JSON object")
	}
	if c = nextNonSpace(r); c == '}' {
		return false, nil
	}
	var k []byte
	for {
		if c != '"' {
			return false, fmt.Errorf("malformed JSON: want a key, got %s", quoteByte(c))
		}
		k = k[:0]
		long := false
		if err := readString(r, func(p []byte) {
			if len(k)+len(p) > len(key) {
				long = true
				return
			}
			k = append(k, p...)
		}, 1<<10); err != nil {
			return false, err
		}
		if c = nextNonSpace(r); c != ':' {
			return false, fmt.Errorf("malformed JSON: want ':', got %s", quoteByte(c))
		}
		c = nextNonSpace(r)
		if !long && string(k) == key {
			if c != '"' {
				return false, fmt.Errorf("field %q is not a string", key)
			}
			return true, readString(r, emit, 64<<10)
		}
		if err := skipValueStream(r, c); err != nil {
			return false, err
		}
		switch c = nextNonSpace(r); c {
		case ',':
			c = nextNonSpace(r)
		case '}':
			return false, nil
		default:
			return false, fmt.Errorf("malformed JSON: want ',' or '}', got %s", quoteByte(c))
		}
	}
}

// end is what nextNonSpace and readString see at the end of the line.
const end = -1

func nextNonSpace(r *bufio.Reader) int {
	for {
		b, err := r.ReadByte()
		if err != nil {
			return end
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return int(b)
		}
	}
}

func quoteByte(c int) string {
	if c == end {
		return "the end of the line"
	}
	return fmt.Sprintf("%q", rune(c))
}

// readString decodes a JSON string whose opening quote has been read,
// handing the decoded bytes to emit every size bytes and at its end, as encoding/json decodes them (invalid surrogates become U+FFFD).
func readString(r *bufio.Reader, emit func([]byte), size int) error {
	var out []byte
	flush := func(force bool) {
		if len(out) > 0 && (force || len(out) >= size) {
			emit(out)
			out = out[:0]
		}
	}
	for {
		b, err := r.ReadByte()
		if err != nil || b == '\n' {
			return errors.New("malformed JSON: unterminated string")
		}
		switch b {
		case '"':
			flush(true)
			return nil
		case '\\':
			e, err := r.ReadByte()
			if err != nil {
				return errors.New("malformed JSON: unterminated string")
			}
			if d, ok := simpleEscape(e); ok {
				out = append(out, d)
				break
			}
			if e != 'u' {
				return fmt.Errorf("malformed JSON: bad escape \\%c", e)
			}
			ahead, _ := r.Peek(10) // four digits, and \uXXXX for a low surrogate
			c, n, ok := unicodeEscape(ahead)
			if !ok {
				return errors.New(`malformed JSON: bad \u escape`)
			}
			r.Discard(n)
			out = utf8.AppendRune(out, c)
		default:
			out = append(out, b)
		}
		flush(false)
	}
}

// skipValueStream reads past the JSON value that starts with c.
func skipValueStream(r *bufio.Reader, c int) error {
	switch c {
	case end:
		return errors.New("malformed JSON: value missing")
	case '"':
		return readString(r, func([]byte) {}, 1<<10)
	case '{', '[':
		depth := 1
		for depth > 0 {
			b, err := r.ReadByte()
			if err != nil || b == '\n' {
				return errors.New("malformed JSON: unclosed object or array")
			}
			switch b {
			case '"':
				if err := readString(r, func([]byte) {}, 1<<10); err != nil {
					return err
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
		}
		return nil
	}
	for {
		b, err := r.ReadByte()
		if err != nil {
			return nil
		}
		if b == ',' || b == '}' || b == ' ' || b == '\t' || b == '\r' || b == '\n' {
			r.UnreadByte()
			return nil
		}
	}
}
