package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The command line page's first block lists every command (issue 32:
// contamination was missing).
func TestDocsListEveryCommand(t *testing.T) {
	t.Parallel()
	const page = "docs/cli.md"
	b, err := os.ReadFile(filepath.Join("../..", page))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "# Command line\n")
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok || block == "" {
		t.Fatalf("%s has no Command line block", page)
	}
	list := strings.Split(block, "\n")
	listed := func(name string) bool {
		words := strings.Fields(name)
		for _, line := range list {
			f := strings.Fields(line)
			if len(f) < len(words)+1 || f[0] != "udgam-ci" {
				continue
			}
			if strings.Join(f[1:len(words)], " ") != strings.Join(words[:len(words)-1], " ") {
				continue
			}
			for _, alt := range strings.Split(f[len(words)], "|") {
				if alt == words[len(words)-1] {
					return true
				}
			}
		}
		return false
	}
	for name := range commands() {
		if !listed(name) {
			t.Errorf("%s's Command line block does not list `udgam-ci %s`", page, name)
		}
	}
}

// No inline code in the README's or docs/'s prose runs two commands
// together (the contamination commands sat inside push's).
func TestDocsOneCommandPerSpan(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(pages, "../../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var prose string
		for i, part := range strings.Split(string(b), "\n```") {
			if i%2 == 0 { // outside fenced blocks
				prose += part + "\n"
			}
		}
		for _, span := range regexp.MustCompile("`[^`]+`").FindAllString(prose, -1) {
			if strings.Count(span, "udgam-ci ") > 1 {
				t.Errorf("%s runs several commands in one inline code span: %s", filepath.Base(p), span)
			}
		}
	}
}
