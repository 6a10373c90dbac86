// Package templates holds the Markdown and HTML templates, embedded so the
// binary needs no files beside it.
package templates

import "embed"

// FS holds md/ (PR comments, job summaries) and html/ (server pages).
//
//go:embed md html
var FS embed.FS
