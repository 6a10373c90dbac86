package converttest

import (
	"fmt"

	"github.com/ollama/ollama/convert/sentencepiece"
	"google.golang.org/protobuf/proto"
)

// SentencePieceModel is a tokenizer.model (SentencePiece's protobuf) of
// model type mt: <unk>, <s>, </s>, the 256 byte pieces, "▁", then extra
// normal pieces with falling scores.
func SentencePieceModel(mt sentencepiece.TrainerSpec_ModelType, extra ...string) ([]byte, error) {
	piece := func(p string, score float32, typ sentencepiece.ModelProto_SentencePiece_Type) *sentencepiece.ModelProto_SentencePiece {
		return &sentencepiece.ModelProto_SentencePiece{Piece: &p, Score: &score, Type: &typ}
	}
	m := &sentencepiece.ModelProto{
		TrainerSpec:    &sentencepiece.TrainerSpec{ModelType: &mt, ByteFallback: proto.Bool(true)},
		NormalizerSpec: &sentencepiece.NormalizerSpec{Name: proto.String("identity"), AddDummyPrefix: proto.Bool(true), RemoveExtraWhitespaces: proto.Bool(false)},
	}
	m.Pieces = append(m.Pieces, piece("<unk>", 0, sentencepiece.ModelProto_SentencePiece_UNKNOWN),
		piece("<s>", 0, sentencepiece.ModelProto_SentencePiece_CONTROL), piece("</s>", 0, sentencepiece.ModelProto_SentencePiece_CONTROL))
	for b := range 256 {
		m.Pieces = append(m.Pieces, piece(fmt.Sprintf("<0x%02X>", b), 0, sentencepiece.ModelProto_SentencePiece_BYTE))
	}
	m.Pieces = append(m.Pieces, piece("▁", -1, sentencepiece.ModelProto_SentencePiece_NORMAL))
	for i, p := range extra {
		m.Pieces = append(m.Pieces, piece(p, -2-float32(i), sentencepiece.ModelProto_SentencePiece_NORMAL))
	}
	return proto.Marshal(m)
}
