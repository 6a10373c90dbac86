package runner

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
)

// fingerprintVersion names the recipe below; a change to it must change
// every fingerprint, so no old baseline is taken as unchanged by mistake.
const fingerprintVersion = "udgam-ci.gguf-fingerprint/v1"

// descriptiveKeys are the metadata keys the fingerprint leaves out: GGUF's
// naming and provenance keys, which llama.cpp reads for display only. Every
// other key is in, general.* ones included (the tokenizer record, the file
// type): when in doubt it is a change.
var descriptiveKeys = []string{
	"general.name", "general.basename", "general.finetune", "general.version", "general.size_label",
	"general.description", "general.author", "general.organization", "general.url", "general.doi",
	"general.uuid", "general.repo_url", "general.license", "general.license.name", "general.license.link",
	"general.tags", "general.languages", "general.datasets", "general.quantized_by",
	"general.source.url", "general.source.doi", "general.source.uuid", "general.source.repo_url",
	"general.parameter_count",     // derived from the tensors, which are in
	"general.udgam_ci.conversion", // the converter's record: its tool, source and warnings
}

// descriptivePrefixes cover GGUF's numbered provenance keys
// (general.base_model.0.name, ...).
var descriptivePrefixes = []string{"general.base_model."}

// Descriptive reports whether the fingerprint leaves key out.
func Descriptive(key string) bool {
	if slices.Contains(descriptiveKeys, key) {
		return true
	}
	for _, p := range descriptivePrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Fingerprint hashes what in a GGUF file can change a score: every
// metadata key and its typed value but the descriptive ones, taken in key
// order (the order of metadata changes nothing), then every tensor's name,
// type, shape and data, in name order (where tensors lie in the file and
// its alignment padding change nothing). Two files with one fingerprint
// load as one model. A file of GGUF version 1 gets "", never unchanged.
func Fingerprint(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	g, err := ggml.Decode(f, -1)
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	return fingerprint(f, g.Tensors())
}

// fingerprint hashes the open GGUF f, whose tensors ollama's decoder read.
func fingerprint(f *os.File, tensors ggml.Tensors) (string, error) {
	h := sha256.New()
	writeField(h, "recipe", []string{fingerprintVersion})
	kv, err := metadata(io.NewSectionReader(f, 0, tensorsEnd(tensors)))
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	if kv == nil {
		return "", nil
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		writeField(h, "kv", []string{k, kv[k]})
	}
	items := slices.Clone(tensors.Items())
	slices.SortFunc(items, func(a, b *ggml.Tensor) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range items {
		shape := make([]string, len(t.Shape))
		for i, n := range t.Shape {
			shape[i] = strconv.FormatUint(n, 10)
		}
		writeField(h, "tensor", append([]string{t.Name, strconv.FormatUint(uint64(t.Kind), 10)}, shape...))
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], t.Size())
		h.Write(n[:])
		data := io.NewSectionReader(f, int64(tensors.Offset+t.Offset), int64(t.Size()))
		if got, err := io.Copy(h, data); err != nil || got != int64(t.Size()) {
			return "", fmt.Errorf("fingerprint: tensor %s: %d of %d bytes read: %v", t.Name, got, t.Size(), err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// tensorsEnd bounds the metadata's reader: it ends before the tensor data.
func tensorsEnd(ts ggml.Tensors) int64 { return int64(ts.Offset) }

// GGUF's value types, as the file stores them.
const (
	ggufUint8 = iota
	ggufInt8
	ggufUint16
	ggufInt16
	ggufUint32
	ggufInt32
	ggufFloat32
	ggufBool
	ggufString
	ggufArray
	ggufUint64
	ggufInt64
	ggufFloat64
)

// ggufSizes is the stored size of each fixed-size value type.
var ggufSizes = map[uint32]int{ggufUint8: 1, ggufInt8: 1, ggufUint16: 2, ggufInt16: 2, ggufUint32: 4, ggufInt32: 4,
	ggufFloat32: 4, ggufBool: 1, ggufUint64: 8, ggufInt64: 8, ggufFloat64: 8}

// metadata reads the GGUF header's key-value pairs as each key's type and
// stored bytes hashed (the values' exact bits, so 1.0 as float32 and as
// float64 differ), leaving out the descriptive keys. nil for version 1,
// whose counts are 32-bit.
func metadata(r io.Reader) (map[string]string, error) {
	br := bufio.NewReader(r)
	var head struct {
		Magic   [4]byte
		Version uint32
		Tensors uint64
		KVs     uint64
	}
	if err := binary.Read(br, binary.LittleEndian, &head.Magic); err != nil {
		return nil, err
	}
	if err := binary.Read(br, binary.LittleEndian, &head.Version); err != nil {
		return nil, err
	}
	if head.Version < 2 {
		return nil, nil
	}
	if err := binary.Read(br, binary.LittleEndian, &head.Tensors); err != nil {
		return nil, err
	}
	if err := binary.Read(br, binary.LittleEndian, &head.KVs); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for range head.KVs {
		key, err := readString(br)
		if err != nil {
			return nil, err
		}
		var typ uint32
		if err := binary.Read(br, binary.LittleEndian, &typ); err != nil {
			return nil, err
		}
		h := sha256.New()
		var sink io.Writer = h
		if Descriptive(key) {
			sink = io.Discard
		}
		if err := copyValue(sink, br, typ); err != nil {
			return nil, fmt.Errorf("metadata %s: %w", key, err)
		}
		if sink != io.Discard {
			out[key] = strconv.FormatUint(uint64(typ), 10) + ":" + hex.EncodeToString(h.Sum(nil))
		}
	}
	return out, nil
}

// readString reads a GGUF string; the decoder has already accepted the
// file, so its length is sane.
func readString(r io.Reader) (string, error) {
	var n uint64
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return "", err
	}
	var b strings.Builder
	if _, err := io.CopyN(&b, r, int64(n)); err != nil {
		return "", err
	}
	return b.String(), nil
}

// copyValue copies one stored value of type typ from r to w, length
// prefixes included.
func copyValue(w io.Writer, r io.Reader, typ uint32) error {
	if size, ok := ggufSizes[typ]; ok {
		_, err := io.CopyN(w, r, int64(size))
		return err
	}
	switch typ {
	case ggufString:
		var n [8]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return err
		}
		w.Write(n[:])
		_, err := io.CopyN(w, r, int64(binary.LittleEndian.Uint64(n[:])))
		return err
	case ggufArray:
		var hdr [12]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		w.Write(hdr[:])
		elem, n := binary.LittleEndian.Uint32(hdr[:4]), binary.LittleEndian.Uint64(hdr[4:])
		if elem == ggufArray {
			return errors.New("nested arrays")
		}
		if size, ok := ggufSizes[elem]; ok {
			_, err := io.CopyN(w, r, int64(n)*int64(size))
			return err
		}
		for range n {
			if err := copyValue(w, r, elem); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown value type %d", typ)
}
