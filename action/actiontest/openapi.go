package actiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/udgamlabs/udgam-ci/internal/scripttest"
)

// The fake is held to GitHub's own OpenAPI description of its REST API
// (npm @octokit/openapi, pinned by version and sha256 in
// scripts/ghapi/install.sh, cached outside the repository): every request
// through it and every answer it gives must match the operation the
// description defines, so a route, field or status GitHub does not have
// fails the test that used it.

// githubAPIBase is where the description's paths live; the fake serves
// them under /api/v3, as GitHub Enterprise does.
const githubAPIBase = "https://api.github.com"

// description is GitHub's REST description, loaded once per test binary
// (13 MB of JSON: BENCHMARKS.md says what it costs).
var description struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

func loadDescription() (*openapi3.T, routers.Router, error) {
	description.once.Do(func() {
		file, err := installDescription()
		if err != nil {
			description.err = err
			return
		}
		description.doc, description.router, description.err = readDescription(file)
	})
	return description.doc, description.router, description.err
}

// readDescription parses the description, makes its objects refuse
// undescribed fields and routes its operations.
func readDescription(file string) (*openapi3.T, routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("load GitHub's REST description %s: %w", file, err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != githubAPIBase {
		return nil, nil, fmt.Errorf("GitHub's REST description %s: servers are not just %s", file, githubAPIBase)
	}
	forbidUndescribedFields(doc)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("route GitHub's REST description %s: %w", file, err)
	}
	return doc, router, nil
}

// installDescription runs scripts/ghapi/install.sh, which prints the
// description's path on its last line.
func installDescription() (string, error) {
	file, err := scripttest.Install("ghapi/install.sh")
	if err != nil {
		return "", fmt.Errorf("install GitHub's REST description: %w", err)
	}
	if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("install GitHub's REST description: scripts/ghapi/install.sh printed %q, not a file", file)
	}
	return file, nil
}

// forbidUndescribedFields makes every object schema with listed properties
// and no word on others refuse others: GitHub's description leaves
// additionalProperties unsaid, which would let the fake invent fields. An
// allOf member is left alone (it must accept its siblings' properties).
func forbidUndescribedFields(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	no := false
	var walk func(ref *openapi3.SchemaRef, inAllOf bool)
	walk = func(ref *openapi3.SchemaRef, inAllOf bool) {
		if ref == nil || ref.Value == nil {
			return
		}
		s := ref.Value
		if seen[s] {
			return
		}
		seen[s] = true
		if !inAllOf && len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			s.AdditionalProperties.Has = &no
		}
		for _, p := range s.Properties {
			walk(p, false)
		}
		walk(s.Items, false)
		walk(s.AdditionalProperties.Schema, false)
		for _, m := range s.AnyOf {
			walk(m, false)
		}
		for _, m := range s.OneOf {
			walk(m, false)
		}
		for _, m := range s.AllOf {
			walk(m, true)
		}
	}
	content := func(c openapi3.Content) {
		for _, mt := range c {
			walk(mt.Schema, false)
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				content(op.RequestBody.Value.Content)
			}
			for _, r := range op.Responses.Map() {
				if r.Value != nil {
					content(r.Value.Content)
				}
			}
		}
	}
}

// universalErrors are the answers GitHub documents for every endpoint
// (docs.github.com, "Troubleshooting the REST API") that the description
// lists for only some: 401 for bad credentials, 403 for a token without
// the permission (a fork PR's read-only token), 404 for what does not exist
// or is hidden from the token. Their bodies must still be the description's
// basic-error.
var universalErrors = map[int]bool{http.StatusUnauthorized: true, http.StatusForbidden: true, http.StatusNotFound: true}

// described wraps the fake's handler: each request (method, path, query,
// body) is checked against the description's operation before the fake
// sees it, and the fake's answer (status, headers, body) after; every
// mismatch goes to report.
func described(doc *openapi3.T, router routers.Router, report func(string), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			report(fmt.Sprintf("%s %s: read the request body: %v", r.Method, r.URL.RequestURI(), err))
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for _, p := range checkExchange(doc, router, r, body, rec.Result().StatusCode, rec.Header(), rec.Body.Bytes()) {
			report(p)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// checkExchange returns what in one request and its answer GitHub's
// description does not allow, each naming the request.
func checkExchange(doc *openapi3.T, router routers.Router, r *http.Request, body []byte, status int, header http.Header, respBody []byte) []string {
	name := r.Method + " " + r.URL.RequestURI()
	path, ok := strings.CutPrefix(r.URL.Path, "/api/v3/")
	if !ok {
		return []string{name + ": not under /api/v3, where the fake serves GitHub's REST API"}
	}
	req := r.Clone(context.Background())
	req.URL.Scheme, req.URL.Host, req.Host = "https", "api.github.com", "api.github.com"
	// The contents API's {path} takes slashes, which the router's path
	// segments do not: it routes on one segment and validates the whole.
	var filePath string
	if i := strings.Index(path, "/contents/"); i >= 0 && strings.HasPrefix(path, "repos/") && strings.Count(path[:i], "/") == 2 {
		path, filePath = path[:i]+"/contents/file", path[i+len("/contents/"):]
	}
	req.URL.Path, req.URL.RawPath = "/"+path, ""
	req.RequestURI = ""
	req.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := router.FindRoute(req)
	if err != nil {
		return []string{fmt.Sprintf("%s: GitHub's REST description has no such operation: %v", name, err)}
	}
	if filePath != "" {
		params["path"] = filePath
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	var problems []string
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		problems = append(problems, fmt.Sprintf("%s: request does not match %s (%s): %v", name, route.Operation.OperationID, route.Path, err))
	}
	if universalErrors[status] && route.Operation.Responses.Status(status) == nil {
		if err := checkBasicError(doc, respBody); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %d answer is not GitHub's basic-error: %v", name, status, err))
		}
		return problems
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(respBody)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		problems = append(problems, fmt.Sprintf("%s: %d answer does not match %s (%s): %v", name, status, route.Operation.OperationID, route.Path, err))
	}
	return problems
}

func checkBasicError(doc *openapi3.T, body []byte) error {
	ref := doc.Components.Schemas["basic-error"]
	if ref == nil || ref.Value == nil {
		return errors.New("the description has no basic-error schema")
	}
	v, err := decodeJSON(body)
	if err != nil {
		return err
	}
	return ref.Value.VisitJSON(v, openapi3.MultiErrors())
}

func decodeJSON(body []byte) (any, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	return v, nil
}

// conformTo is the check every fake GitHub runs under: the description,
// and t.Errorf for each mismatch.
func conformTo(t testing.TB, next http.Handler) http.Handler {
	t.Helper()
	doc, router, err := loadDescription()
	if err != nil {
		t.Fatalf("actiontest: %v", err)
	}
	return described(doc, router, func(p string) { t.Errorf("fake GitHub: %s", p) }, next)
}
