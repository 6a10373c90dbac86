// Package structure holds no code: its tests hold the module to its shape.
// They read the package graph with `go list` and fail when
//
//   - production code imports a reference, a test model or a test helper
//     (the packages in referencePackages and every package whose last
//     element ends in "test");
//   - a package imports one later in the flow base -> contracts -> stopping
//     rule -> checkpoint -> GGUF -> scoring -> run file -> comparison ->
//     comment/server -> wiring (stages lists each package's place;
//     ARCHITECTURE.md draws it, and TestFlowDocumented fails when the two
//     differ);
//   - a package under internal/ imports one of the module outside it:
//     internal/ holds only base packages (references live in reference/);
//   - a file built without cgo imports a package whose files all need it
//     (TestBuildsWithoutCgo: `CGO_ENABLED=0 go vet ./...` builds);
//   - a production package other than the commands depends on a check (checks:
//     runner/hftok and runner/tokcheck, which `model check-tokenizer` sets
//     beside the production text preparation, runner/textprep);
//   - go.mod's requirements are not marked as `go mod tidy` marks them
//     (a direct import listed "// indirect", or the other way round);
//   - an edit to llama.cpp in scripts/engine/patches is not numbered in
//     order, opens without a header saying why, or is missing from
//     scripts/engine.sh's list (TestEnginePatches; make check-patches
//     applies them).
package structure
