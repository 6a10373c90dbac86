package runfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// DecodeStrict is the one reading of every JSON document a user uploads
// (a run file's header and records, an audit report) into v. Beyond
// encoding/json it refuses bytes that are not UTF-8, an object that names
// a key twice, a key that names one of v's fields in another case, and
// anything but whitespace after the value: encoding/json would rewrite
// the bytes, take a key in any case and keep the last of two, and what is
// stored would differ from what was sent. refuseUnknown also refuses keys
// that name no field. Its cost is linear in len(b).
func DecodeStrict(b []byte, v any, refuseUnknown bool) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("not valid UTF-8 (byte %d)", invalidUTF8At(b)+1)
	}
	if err := checkKeys(b, reflect.TypeOf(v)); err != nil {
		return err
	}
	return decodeOne(b, v, refuseUnknown)
}

// decodeOne decodes one JSON value and refuses what follows it but
// whitespace, so two records glued on one line are an error rather than
// half a record. The rest is checked by one scan: json.Decoder.Token
// rescans buffered whitespace on every read, quadratic in its length.
func decodeOne(b []byte, v any, refuseUnknown bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if refuseUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return errors.New("invalid JSON: trailing data: more after the JSON value (want one)")
	}
	return nil
}

// maxKeyDepth is encoding/json's own bound on nesting: deeper, the decoder
// refuses the document, so checkKeys need not look.
const maxKeyDepth = 10000

// checkKeys refuses a JSON value in which an object names a key twice or
// names a field of t (the type it decodes into) in another case, naming
// the key's path. It reads the bytes once, without decoding values, so
// every record can be checked; what is not JSON is left to the decoder to
// name. Memory grows with the nesting and the keys, never their product.
func checkKeys(b []byte, t reflect.Type) error {
	type frame struct {
		parent  *frame
		obj     bool
		fields  *fieldSet    // the struct this object decodes into (nil: keys are free)
		next    reflect.Type // what the next value decodes into (nil: unchecked)
		elem    reflect.Type // a map's or array's values
		last    string       // the last key read
		keys    []string     // seen so far, until a map is cheaper
		seen    map[string]bool
		wantKey bool
	}
	path := func(f *frame, k string) string {
		var parts []string
		for p := f.parent; p != nil; p = p.parent {
			if p.obj {
				parts = append(parts, p.last)
			}
		}
		slices.Reverse(parts)
		return strings.Join(append(parts, k), ".")
	}
	var stack []*frame
	for i := 0; i < len(b); i++ {
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch c := b[i]; c {
		case '"':
			j := i + 1
			for ; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
			if j >= len(b) {
				return nil
			}
			if top != nil && top.obj && top.wantKey {
				k := string(b[i+1 : j])
				if bytes.IndexByte(b[i+1:j], '\\') >= 0 && json.Unmarshal(b[i:j+1], &k) != nil {
					return nil
				}
				if top.seen == nil && len(top.keys) >= 8 {
					top.seen = map[string]bool{}
					for _, s := range top.keys {
						top.seen[s] = true
					}
				}
				if top.seen[k] || top.seen == nil && slices.Contains(top.keys, k) {
					return fmt.Errorf("key %q appears twice (JSON readers disagree on which one counts)", path(top, k))
				}
				if top.seen != nil {
					top.seen[k] = true
				} else {
					top.keys = append(top.keys, k)
				}
				top.next = top.elem
				if f := top.fields; f != nil {
					ft, ok := f.exact[k]
					if !ok {
						if want, folded := f.folded[foldKey(k)]; folded {
							return fmt.Errorf("key %q: the field is %q (keys are case-sensitive)", path(top, k), path(top, want))
						}
					}
					top.next = ft
				}
				top.last, top.wantKey = k, false
			}
			i = j
		case '{', '[':
			if len(stack) >= maxKeyDepth {
				return nil
			}
			typ := t
			if top != nil {
				typ = top.next
			}
			f := &frame{parent: top, obj: c == '{', wantKey: c == '{'}
			if f.obj {
				f.keys = make([]string, 0, 8)
			}
			switch typ = decodedAs(typ); {
			case typ == nil:
			case c == '{' && typ.Kind() == reflect.Struct:
				f.fields = fieldsOf(typ)
			case c == '{' && typ.Kind() == reflect.Map:
				f.elem = typ.Elem()
			case c == '[' && (typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array):
				f.elem = typ.Elem()
			}
			f.next = f.elem
			stack = append(stack, f)
		case '}', ']':
			if top == nil {
				return nil
			}
			stack = stack[:len(stack)-1]
		case ',':
			if top != nil && top.obj {
				top.wantKey = true
			}
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decodedAs is the type whose keys checkKeys can check, when a value is
// decoded into t: t without its pointers; nil for an interface, or a type
// that decodes itself.
func decodedAs(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// fieldSet is a struct's JSON keys, as encoding/json names its fields.
type fieldSet struct {
	exact  map[string]reflect.Type
	folded map[string]string // foldKey(key) → key
}

var fieldSets sync.Map // reflect.Type → *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{exact: map[string]reflect.Type{}, folded: map[string]string{}}
	for _, f := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && tag == "" {
			if ft := f.Type; ft.Kind() == reflect.Struct || ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
				continue // its fields are promoted, and listed on their own
			}
			if !f.IsExported() {
				continue
			}
		}
		name := tag
		if name == "" {
			name = f.Name
		}
		fs.exact[name] = f.Type
		fs.folded[foldKey(name)] = name
	}
	got, _ := fieldSets.LoadOrStore(t, fs)
	return got.(*fieldSet)
}

// foldKey folds a key as encoding/json does when it matches keys to
// fields, so that "VERDICT", or "\u212al" (a Kelvin sign) for "kl", is seen
// for the key it matches.
func foldKey(s string) string {
	return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, s)
}
