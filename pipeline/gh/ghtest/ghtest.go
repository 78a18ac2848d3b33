// Package ghtest is a GitHub-compatible fake REST server for tests: it keeps
// repositories, pull requests, labels, issues, comments and permissions in
// memory, mints installation tokens for a GitHub App (checking the app JWT),
// records every request, and can inject failures (secondary rate limits with
// Retry-After, 422 "already exists").
package ghtest

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"
)

// Request is one recorded request.
type Request struct {
	Method, Path, Query string
	Body                string
	Auth                string // the Authorization header
	Status              int
}

// PR is a pull request as the fake stores it.
type PR struct {
	Number    int      `json:"number"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	State     string   `json:"state"`
	Draft     bool     `json:"draft"`
	HeadOwner string   `json:"-"`
	Head      string   `json:"-"`
	Base      string   `json:"-"`
	Labels    []string `json:"-"`
	Merged    bool     `json:"-"`
	Repo      string   `json:"-"` // owner/name
}

// Repo is a repository as the fake stores it.
type Repo struct {
	Owner, Name, DefaultBranch, CloneURL string
	CanPush                              bool
	// ForkCloneURL is the clone URL of the fork CreateFork returns.
	ForkOwner, ForkCloneURL string
}

// Comment is an issue comment.
type Comment struct {
	Repo   string
	Number int
	Body   string
}

type fault struct {
	method, suffix string
	status         int
	retryAfter     string
	body           string
	left           int
}

// Server is the fake.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	reqs     []Request
	repos    map[string]*Repo
	prs      []*PR
	comments []Comment
	issues   []Comment
	perms    map[string]string // "owner/repo:user" → permission
	tokens   map[string]bool
	faults   []*fault
	nextNum  int
	// AppKey, when set, verifies app JWTs on the access-token endpoint.
	AppKey *rsa.PublicKey
	AppID  int64
	// Minted are the installation tokens handed out.
	Minted []string
}

// New starts a fake that accepts the given tokens; it is closed at test end.
func New(t testing.TB, tokens ...string) *Server {
	s := &Server{repos: map[string]*Repo{}, perms: map[string]string{}, tokens: map[string]bool{}, nextNum: 1}
	for _, tok := range tokens {
		s.tokens[tok] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}", s.getRepo)
	mux.HandleFunc("POST /repos/{owner}/{repo}/forks", s.fork)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.listPRs)
	mux.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.createPR)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/pulls/{n}", s.editPR)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{n}/labels", s.addLabels)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{n}/comments", s.comment)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues", s.createIssue)
	mux.HandleFunc("GET /repos/{owner}/{repo}/collaborators/{user}/permission", s.permission)
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", s.accessToken)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		defer func() {
			s.mu.Lock()
			s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body),
				Auth: r.Header.Get("Authorization"), Status: rec.status})
			s.mu.Unlock()
		}()
		if f := s.takeFault(r); f != nil {
			if f.retryAfter != "" {
				rec.Header().Set("Retry-After", f.retryAfter)
			}
			writeJSON(rec, f.status, json.RawMessage(f.body))
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/app/") && !s.authorized(r) {
			writeJSON(rec, 401, map[string]string{"message": "Bad credentials"})
			return
		}
		mux.ServeHTTP(rec, r)
	}))
	t.Cleanup(s.Close)
	return s
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(c int) { r.status = c; r.ResponseWriter.WriteHeader(c) }

func (s *Server) authorized(r *http.Request) bool {
	a := r.Header.Get("Authorization")
	for _, p := range []string{"Bearer ", "token "} {
		if strings.HasPrefix(a, p) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.tokens[strings.TrimPrefix(a, p)]
		}
	}
	return false
}

func (s *Server) takeFault(r *http.Request) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if f.left > 0 && f.method == r.Method && strings.HasSuffix(r.URL.Path, f.suffix) {
			f.left--
			return f
		}
	}
	return nil
}

// Fail makes the next n requests with method whose path ends in suffix fail
// with status, an optional Retry-After and a JSON body.
func (s *Server) Fail(method, suffix string, n, status int, retryAfter, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if body == "" {
		body = `{"message":"error"}`
	}
	s.faults = append(s.faults, &fault{method: method, suffix: suffix, status: status, retryAfter: retryAfter, body: body, left: n})
}

// SecondaryLimit makes the next request matching method/suffix hit a
// secondary rate limit with Retry-After: seconds.
func (s *Server) SecondaryLimit(method, suffix string, seconds int) {
	s.Fail(method, suffix, 1, 403, strconv.Itoa(seconds),
		`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`)
}

// AddRepo registers a repository.
func (s *Server) AddRepo(r Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	s.repos[r.Owner+"/"+r.Name] = &r
}

// SetPermission sets a user's permission on owner/repo.
func (s *Server) SetPermission(owner, repo, user, perm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.perms[owner+"/"+repo+":"+user] = perm
}

// AddToken accepts another token.
func (s *Server) AddToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[tok] = true
}

// Requests returns the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count returns how many recorded requests match method and path suffix.
func (s *Server) Count(method, suffix string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

// PRs returns copies of the pull requests.
func (s *Server) PRs() []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PR, len(s.prs))
	for i, p := range s.prs {
		out[i] = *p
		out[i].Labels = append([]string(nil), p.Labels...)
	}
	return out
}

// ClosePR closes a pull request as a human would (merged or not).
func (s *Server) ClosePR(number int, merged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.prs {
		if p.Number == number {
			p.State, p.Merged = "closed", merged
		}
	}
}

// MintedTokens returns the installation tokens handed out so far.
func (s *Server) MintedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.Minted...)
}

// Comments returns the comments posted.
func (s *Server) Comments() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Comment(nil), s.comments...)
}

// Issues returns the issues opened.
func (s *Server) Issues() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Comment(nil), s.issues...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) repoJSON(r *Repo, push bool) map[string]any {
	return map[string]any{
		"name": r.Name, "full_name": r.Owner + "/" + r.Name, "owner": map[string]any{"login": r.Owner},
		"default_branch": r.DefaultBranch, "clone_url": r.CloneURL,
		"permissions": map[string]bool{"push": push, "pull": true},
		"html_url":    s.URL + "/" + r.Owner + "/" + r.Name,
	}
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.PathValue("owner") + "/" + r.PathValue("repo")
	repo, ok := s.repos[key]
	if !ok {
		writeJSON(w, 404, map[string]string{"message": "Not Found"})
		return
	}
	writeJSON(w, 200, s.repoJSON(repo, repo.CanPush))
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, ok := s.repos[r.PathValue("owner")+"/"+r.PathValue("repo")]
	if !ok || repo.ForkOwner == "" {
		writeJSON(w, 404, map[string]string{"message": "Not Found"})
		return
	}
	f := &Repo{Owner: repo.ForkOwner, Name: repo.Name, DefaultBranch: repo.DefaultBranch, CloneURL: repo.ForkCloneURL, CanPush: true}
	s.repos[f.Owner+"/"+f.Name] = f
	j := s.repoJSON(f, true)
	j["fork"] = true
	writeJSON(w, 202, j)
}

func (s *Server) prJSON(p *PR) map[string]any {
	labels := []map[string]string{}
	for _, l := range p.Labels {
		labels = append(labels, map[string]string{"name": l})
	}
	owner, repo, _ := strings.Cut(p.Repo, "/")
	m := map[string]any{
		"number": p.Number, "title": p.Title, "body": p.Body, "state": p.State, "draft": p.Draft,
		"html_url": fmt.Sprintf("%s/%s/%s/pull/%d", s.URL, owner, repo, p.Number),
		"head":     map[string]any{"ref": p.Head, "label": p.HeadOwner + ":" + p.Head, "user": map[string]string{"login": p.HeadOwner}},
		"base":     map[string]any{"ref": p.Base},
		"labels":   labels,
	}
	if p.Merged {
		m["merged_at"] = time.Unix(1700000000, 0).UTC().Format(time.RFC3339)
	}
	return m
}

func (s *Server) listPRs(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	key := r.PathValue("owner") + "/" + r.PathValue("repo")
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	out := []map[string]any{}
	for _, p := range s.prs {
		if p.Repo != key || (state != "all" && p.State != state) {
			continue
		}
		if h := q.Get("head"); h != "" && h != p.HeadOwner+":"+p.Head {
			continue
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		out = append(out, s.prJSON(p))
	}
	writeJSON(w, 200, out)
}

func (s *Server) createPR(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title, Head, Base, Body string
		Draft                   bool
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.PathValue("owner") + "/" + r.PathValue("repo")
	if len(in.Body) > 65536 {
		writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []map[string]string{{"resource": "Issue", "field": "body", "code": "custom", "message": "body is too long (maximum is 65536 characters)"}}})
		return
	}
	ho, hb, ok := strings.Cut(in.Head, ":")
	if !ok {
		ho, hb = r.PathValue("owner"), in.Head
	}
	for _, p := range s.prs {
		if p.Repo == key && p.State == "open" && p.HeadOwner == ho && p.Head == hb {
			writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []map[string]string{{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + in.Head + "."}}})
			return
		}
	}
	p := &PR{Number: s.nextNum, Title: in.Title, Body: in.Body, State: "open", Draft: in.Draft, HeadOwner: ho, Head: hb, Base: in.Base, Repo: key}
	s.nextNum++
	s.prs = append(s.prs, p)
	writeJSON(w, 201, s.prJSON(p))
}

func (s *Server) findPR(r *http.Request) *PR {
	n, _ := strconv.Atoi(r.PathValue("n"))
	key := r.PathValue("owner") + "/" + r.PathValue("repo")
	for _, p := range s.prs {
		if p.Number == n && p.Repo == key {
			return p
		}
	}
	return nil
}

func (s *Server) editPR(w http.ResponseWriter, r *http.Request) {
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.findPR(r)
	if p == nil {
		writeJSON(w, 404, map[string]string{"message": "Not Found"})
		return
	}
	if v, ok := in["title"].(string); ok {
		p.Title = v
	}
	if v, ok := in["body"].(string); ok {
		if len(v) > 65536 {
			writeJSON(w, 422, map[string]string{"message": "body is too long"})
			return
		}
		p.Body = v
	}
	if v, ok := in["state"].(string); ok {
		p.State = v
	}
	writeJSON(w, 200, s.prJSON(p))
}

func (s *Server) addLabels(w http.ResponseWriter, r *http.Request) {
	var in []string
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.findPR(r)
	if p == nil {
		writeJSON(w, 404, map[string]string{"message": "Not Found"})
		return
	}
	for _, l := range in {
		dup := false
		for _, h := range p.Labels {
			dup = dup || h == l
		}
		if !dup {
			p.Labels = append(p.Labels, l)
		}
	}
	out := []map[string]string{}
	for _, l := range p.Labels {
		out = append(out, map[string]string{"name": l})
	}
	writeJSON(w, 200, out)
}

func (s *Server) comment(w http.ResponseWriter, r *http.Request) {
	var in struct{ Body string }
	json.NewDecoder(r.Body).Decode(&in)
	n, _ := strconv.Atoi(r.PathValue("n"))
	s.mu.Lock()
	s.comments = append(s.comments, Comment{Repo: r.PathValue("owner") + "/" + r.PathValue("repo"), Number: n, Body: in.Body})
	s.mu.Unlock()
	writeJSON(w, 201, map[string]any{"id": len(s.comments), "body": in.Body})
}

func (s *Server) createIssue(w http.ResponseWriter, r *http.Request) {
	var in struct{ Title, Body string }
	json.NewDecoder(r.Body).Decode(&in)
	s.mu.Lock()
	n := s.nextNum
	s.nextNum++
	s.issues = append(s.issues, Comment{Repo: r.PathValue("owner") + "/" + r.PathValue("repo"), Number: n, Body: in.Title + "\n" + in.Body})
	s.mu.Unlock()
	writeJSON(w, 201, map[string]any{"number": n, "title": in.Title})
}

func (s *Server) permission(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	perm, ok := s.perms[r.PathValue("owner")+"/"+r.PathValue("repo")+":"+r.PathValue("user")]
	s.mu.Unlock()
	if !ok {
		perm = "none"
	}
	writeJSON(w, 200, map[string]any{"permission": perm, "user": map[string]string{"login": r.PathValue("user")}})
}

func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	raw := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if s.AppKey != nil {
		tok, err := jwt.Parse(raw, func(t *jwt.Token) (any, error) {
			if _, ok := t.Method.(*jwt.SigningMethodRSA); !ok {
				return nil, fmt.Errorf("unexpected signing method %v", t.Header["alg"])
			}
			return s.AppKey, nil
		})
		if err != nil || !tok.Valid {
			writeJSON(w, 401, map[string]string{"message": "A JSON web token could not be decoded"})
			return
		}
		claims, _ := tok.Claims.(jwt.MapClaims)
		if iss := fmt.Sprint(claims["iss"]); s.AppID != 0 && iss != strconv.FormatInt(s.AppID, 10) {
			writeJSON(w, 401, map[string]string{"message": "wrong issuer " + iss})
			return
		}
	}
	s.mu.Lock()
	tok := fmt.Sprintf("ghs_installation%s%04dtokenvalue", r.PathValue("id"), len(s.Minted))
	s.Minted = append(s.Minted, tok)
	s.tokens[tok] = true
	s.mu.Unlock()
	writeJSON(w, 201, map[string]any{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
}
