package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's "Command line" block lists every command (issue 32:
// contamination was missing), and no inline code in its prose runs two
// commands together (the contamination commands sat inside push's).
func TestReadmeListsEveryCommand(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Command line\n")
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok || block == "" {
		t.Fatal("README.md has no Command line block")
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
			t.Errorf("README.md's Command line block does not list `udgam-ci %s`", name)
		}
	}
	var prose string
	for i, p := range strings.Split(string(b), "\n```") {
		if i%2 == 0 { // outside fenced blocks
			prose += p + "\n"
		}
	}
	for _, span := range regexp.MustCompile("`[^`]+`").FindAllString(prose, -1) {
		if strings.Count(span, "udgam-ci ") > 1 {
			t.Errorf("README.md runs several commands in one inline code span: %s", span)
		}
	}
}
