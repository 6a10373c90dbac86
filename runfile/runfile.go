// Package runfile reads and writes udgam-ci run files: JSON Lines with one
// header line and then one record per document (fresh text) or per item
// (probes). Records are appended as they complete, so a killed run can be
// resumed; readers recompute every summary from the records.
package runfile

import (
	"strconv"
	"time"
)

// Schema is the first field of every header.
const Schema = "udgam-ci.run/v1"

// Test names.
const (
	TestFresh  = "fresh"
	TestProbes = "probes"
)

// Header is line 1 of a run file.
type Header struct {
	Schema        string         `json:"schema"`
	ID            string         `json:"id"`
	Test          string         `json:"test"`
	Model         Model          `json:"model"`
	Dataset       Dataset        `json:"dataset"`
	Settings      Settings       `json:"settings"`
	Runtime       Runtime        `json:"runtime"`
	Git           Git            `json:"git"`
	Sample        *Sample        `json:"sample,omitempty"`
	Shard         *Shard         `json:"shard,omitempty"`
	Contamination *Contamination `json:"contamination,omitempty"`
	Sequential    *Sequential    `json:"sequential,omitempty"`
	// Reused is set when the run scored nothing: its model is unchanged
	// from a baseline's, whose records it holds (Unchanged).
	Reused    *Reused   `json:"reused,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// Model identifies the scored model.
type Model struct {
	Name     string `json:"name"`
	Revision string `json:"revision,omitempty"`
	File     string `json:"file,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	// Fingerprint hashes what in the GGUF can change a score
	// (runner.Fingerprint); empty in runs made before it was recorded.
	Fingerprint string      `json:"fingerprint,omitempty"`
	Arch        string      `json:"arch,omitempty"`
	Params      uint64      `json:"params,omitempty"`
	Dtype       string      `json:"dtype,omitempty"`
	Conversion  *Conversion `json:"conversion,omitempty"`
}

// Conversion records how a GGUF was made from a checkpoint, when it was.
type Conversion struct {
	From   string `json:"from"`             // "safetensors"
	Tool   string `json:"tool"`             // converter and version
	Dtype  string `json:"dtype"`            // requested output type
	Source string `json:"source,omitempty"` // hub repo or directory
	// Warning says what the conversion found wrong with the checkpoint
	// (a tokenizer that adds BOS where its config says not to); "; "
	// between several.
	Warning string `json:"warning,omitempty"`
}

// Dataset identifies the documents or items.
type Dataset struct {
	Name     string `json:"name"`
	Revision string `json:"revision,omitempty"`
	SHA256   string `json:"sha256"`
	Count    int    `json:"count"`
	// Smoke marks the embedded smoke sample: never the benchmark.
	Smoke bool `json:"smoke,omitempty"`
	// Constant holds, for probes, each type's accuracy in percent when
	// always giving the same answer (text or position), the best such:
	// the floor a score on that type must beat to mean anything.
	Constant map[string]float64 `json:"constant,omitempty"`
}

// Settings are everything that changes results. Two runs whose settings
// differ must not be compared silently (see Diff).
type Settings struct {
	AddBOS          bool   `json:"add_bos"`
	BOSMode         string `json:"bos_mode"` // auto|yes|no as asked
	BOSID           int32  `json:"bos_id"`   // -1 when the tokenizer has none
	Window          int    `json:"window,omitempty"`
	Stride          int    `json:"stride,omitempty"`
	Dtype           string `json:"dtype"`
	TokenizerSHA256 string `json:"tokenizer_sha256"`
	Engine          string `json:"engine"`
	Formulation     string `json:"formulation,omitempty"`
	// TextPrep says how text was prepared before llama.cpp tokenized it.
	// Nil in runs made before it was recorded.
	TextPrep *TextPrep `json:"text_prep,omitempty"`
	// Template says how text is wrapped before scoring: TemplateNone, raw
	// text (empty in runs made before it was recorded means the same).
	Template string `json:"template,omitempty"`
	// ChatTemplateSHA256 hashes the tokenizer's chat template when the
	// model has one; recorded so a template edited between revisions
	// shows, never judged since no template is applied.
	ChatTemplateSHA256 string `json:"chat_template_sha256,omitempty"`
}

// TemplateNone: no chat or prompt template is applied; the tests score
// the documents and prompts as they are.
const TemplateNone = "none"

// TemplateOf is the run's template setting, TemplateNone for runs made
// before it was recorded.
func (s Settings) TemplateOf() string {
	if s.Template == "" {
		return TemplateNone
	}
	return s.Template
}

// Text preparations (TextPrep.By).
const (
	// PrepHF: the GGUF carries udgam-ci's tokenizer record, and text is
	// split on added tokens and normalized as the checkpoint's Hugging Face
	// tokenizer does before llama.cpp sees it.
	PrepHF = "hf"
	// PrepLlama: the GGUF has no such record (it was not converted by
	// udgam-ci); llama.cpp tokenizes the text as it is, and text holding a
	// control token's literal is refused.
	PrepLlama = "llama.cpp"
)

// TextPrep records the text preparation of a run.
type TextPrep struct {
	By         string `json:"by"`                   // PrepHF or PrepLlama
	Normalizer string `json:"normalizer,omitempty"` // steps applied in Go, e.g. "NFC"
	// AddedTokens is how many added tokens are matched in text (PrepHF).
	AddedTokens int `json:"added_tokens,omitempty"`
	// Unverified says what the converter could not establish (the user
	// passed --allow-unverified-tokenizer); empty when verified.
	Unverified string `json:"unverified,omitempty"`
}

// String is the preparation in one line, as settings diffs and pages show it.
func (t *TextPrep) String() string {
	if t == nil {
		return ""
	}
	s := t.By
	if t.Normalizer != "" {
		s += ", normalizer " + t.Normalizer
	}
	if t.By == PrepHF {
		s += ", " + strconv.Itoa(t.AddedTokens) + " added tokens matched"
	}
	if t.Unverified != "" {
		s += ", UNVERIFIED: " + t.Unverified
	}
	return s
}

// Runtime holds settings that do not change results: shown, never judged.
type Runtime struct {
	Threads   int    `json:"threads,omitempty"`
	BatchSize int    `json:"batch_size,omitempty"`
	Context   int    `json:"context,omitempty"`
	Host      string `json:"host,omitempty"`
	GPU       string `json:"gpu,omitempty"`
	// CPU is the CPU target the engine was compiled for: a variant's level
	// (x86-64-v3) where a launcher chose one, "native" for make build.
	CPU string `json:"cpu,omitempty"`
}

// DefaultBaseRef is the branch a run is compared with when nothing names
// one: the report server's, the store's and the Action's default baseline
// branch.
const DefaultBaseRef = "main"

// Git says which commit of the training repository the run belongs to.
type Git struct {
	Repo string `json:"repo,omitempty"` // OWNER/NAME
	SHA  string `json:"sha,omitempty"`
	Ref  string `json:"ref,omitempty"` // "main" or the PR's head ref
	PR   *int   `json:"pr"`
}

// Sample records a seeded subset so two models' runs stay paired.
type Sample struct {
	N    int      `json:"n"`
	Seed int64    `json:"seed"`
	IDs  []string `json:"ids"`
}

// Contamination records what a scan of the training data found among the
// run's documents or items, and whether the run left them out.
type Contamination struct {
	Report      string   `json:"report"`       // the scan report's file name
	SHA256      string   `json:"sha256"`       // of the report file
	N           int      `json:"n"`            // its n-gram length
	MinFraction float64  `json:"min_fraction"` // found means: more than this fraction of n-grams
	Checked     int      `json:"checked"`      // documents or items the scan checked
	IDs         []string `json:"ids"`          // found, sorted
	Excluded    bool     `json:"excluded"`     // the run did not score them
}

// RuleUntilDecided is the stopping rule of `--until decided`.
const RuleUntilDecided = "until-decided"

// Sequential records a run scored in a seeded random order that stops once
// its anytime-valid comparison with a baseline decides (`--until
// decided`): the rule, the order's seed, the level and minimum effect it
// decides at, the budget, and, once it stopped, where and why. Its records
// are in the order they were scored.
type Sequential struct {
	Rule      string  `json:"rule"`       // RuleUntilDecided
	Seed      uint64  `json:"seed"`       // of the order (compare.Tracker.Order over the set's ids)
	Level     float64 `json:"level"`      // e.g. 0.95
	MinEffect float64 `json:"min_effect"` // in the test's unit: bits per byte, accuracy points
	Budget    string  `json:"budget,omitempty"`
	Baseline  string  `json:"baseline"` // the baseline run's id
	Total     int     `json:"total"`    // records in the whole set
	// Bytes is the whole set's text in bytes (Fresh Text), what the share
	// of the set scored is counted against; 0 for probes and in runs made
	// before it was recorded.
	Bytes int64 `json:"bytes,omitempty"`
	// Unit is UnitSpan when the records are the windows' scored spans of
	// the documents (runfile.Span), sampled one by one; "" when whole
	// records are (documents, items).
	Unit string `json:"unit,omitempty"`
	Stop *Stop  `json:"stop,omitempty"`
}

// UnitSpan is Sequential.Unit of a run over spans.
const UnitSpan = "span"

// Stop is where a sequential run stopped and why (compare/sequential's
// reasons: beyond, within, budget, complete), with the anytime-valid
// interval of the whole set's delta then, in the test's unit.
type Stop struct {
	Reason string     `json:"reason"`
	Scored int        `json:"scored"`
	CI     [2]float64 `json:"ci"`
}

// Shard records which part of the data a run scored.
type Shard struct {
	Index int `json:"index"` // 1-based
	Count int `json:"count"`
}

// Doc is one fresh-text record.
type Doc struct {
	ID      string  `json:"id"`
	Source  string  `json:"source"`
	Bytes   int     `json:"bytes"`  // UTF-8 bytes counted in the score
	Tokens  int     `json:"tokens"` // tokens scored
	Bits    float64 `json:"bits"`   // -sum log2 p over the scored tokens
	Windows int     `json:"windows"`
	// FirstUnscored is set when no BOS was used: the first token had no
	// context, so it was not scored and its bytes are not in Bytes.
	FirstUnscored bool `json:"first_unscored,omitempty"`
	TextBytes     int  `json:"text_bytes,omitempty"` // all bytes of the text
	// Spans are a whole document's windows' scored spans, in order: the
	// units `--until decided` samples (spans.go).
	Spans []Span `json:"spans,omitempty"`
	// Of, Span and OfSpans mark a span record, which a sequential run
	// over spans writes: span Span (from 1) of the OfSpans of document Of.
	Of      string `json:"of,omitempty"`
	Span    int    `json:"span,omitempty"`
	OfSpans int    `json:"of_spans,omitempty"`
}

// Item is one probe record. Pred and Answer index Choices.
type Item struct {
	ID       string    `json:"id"`
	Type     string    `json:"type"`
	Level    int       `json:"level"`
	Logprobs []float64 `json:"logprobs"`
	Norm     []float64 `json:"norm,omitempty"` // logprob per byte of " "+choice
	Pred     int       `json:"pred"`
	Answer   int       `json:"answer"`
	Correct  bool      `json:"correct"`
	Tie      bool      `json:"tie,omitempty"`
	Tokens   int       `json:"tokens,omitempty"` // continuation tokens over all choices
	// Variant names the prompt variant the item was scored with; empty
	// for the published template. A variant's id is "<item id>@<variant>".
	Variant string `json:"variant,omitempty"`
}

// Run is a whole run file in memory.
type Run struct {
	Header Header
	Docs   []Doc  // when Header.Test == "fresh"
	Items  []Item // when Header.Test == "probes": the published template's
	// Variants are the probes records of prompt variants (Item.Variant
	// set), kept apart so every score of Items is the published one.
	Variants []Item
}

// Len is the number of records.
func (r *Run) Len() int { return len(r.Docs) + len(r.Items) + len(r.Variants) }

// IDs lists every record's id: documents, items, then variant items.
func (r *Run) IDs() []string {
	ids := make([]string, 0, r.Len())
	for i := range r.Docs {
		ids = append(ids, r.Docs[i].ID)
	}
	for _, items := range [][]Item{r.Items, r.Variants} {
		for i := range items {
			ids = append(ids, items[i].ID)
		}
	}
	return ids
}
