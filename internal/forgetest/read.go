package forgetest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Inject adds statuses as if they had been posted (API github or
// gitlab; Repo as a post would record it), without a request; a zero
// Time is Now.
func (s *Server) Inject(sts ...Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range sts {
		if st.Time.IsZero() {
			st.Time = orNow(s.Now)
		}
		s.statuses = append(s.statuses, st)
	}
}

// Reads counts the read requests, answered or not.
func (s *Server) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// orNow is now(), or time.Now when now is nil.
func orNow(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}

// reads answers the read routes of a Server.
type reads struct{ s *Server }

// history is every status of one API, repository and commit, grouped by
// context, each group oldest first, groups in context order.
func (r reads) history(api, repo, commit string) [][]Status {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	by := map[string][]Status{}
	for _, st := range s.statuses {
		if st.API == api && st.Repo == repo && st.Commit == commit {
			by[st.Context] = append(by[st.Context], st)
		}
	}
	var out [][]Status
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for c := range by {
			if !yield(c) {
				return
			}
		}
	}) {
		out = append(out, by[c])
	}
	return out
}

// readable counts a read and checks it as the forge would: the token in
// header, a full commit id.
func (rd reads) readable(w http.ResponseWriter, r *http.Request, header, want string) bool {
	s := rd.s
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	if !s.admit(w) {
		return false
	}
	if r.Header.Get(header) != want {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return false
	}
	if !isSHA(r.PathValue("sha")) {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return false
	}
	return true
}

// page reads page and its size from q (size under sizeKey, default def,
// at most max) and cuts n items: the bounds [from, to).
func page(q url.Values, sizeKey string, def, max, n int) (int, int, int, int) {
	size, err := strconv.Atoi(q.Get(sizeKey))
	if err != nil || size <= 0 {
		size = def
	}
	size = min(size, max)
	p, err := strconv.Atoi(q.Get("page"))
	if err != nil || p < 1 {
		p = 1
	}
	from := min((p-1)*size, n)
	return p, size, from, min(from+size, n)
}

// githubRead is GET /repos/{owner}/{repo}/commits/{sha}/status: the
// newest status of each context. GitHub pages with per_page (default 30,
// at most 100) and counts them all in total_count; Gitea pages with
// limit (at most 50), names the state "status" and counts the page in
// total_count, all of them in X-Total-Count.
func (rd reads) githubRead(gitea bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := rd.s
		if !rd.readable(w, r, "Authorization", "Bearer "+s.Token) {
			return
		}
		var latest []Status
		for _, h := range rd.history("github", r.PathValue("owner")+"/"+r.PathValue("repo"), r.PathValue("sha")) {
			latest = append(latest, h[len(h)-1])
		}
		sizeKey, def, most := "per_page", 30, 100
		if gitea {
			sizeKey, def, most = "limit", 30, 50
		}
		_, _, from, to := page(r.URL.Query(), sizeKey, def, most, len(latest))
		stateKey := "state"
		if gitea {
			stateKey = "status"
		}
		items := []map[string]any{}
		for i, st := range latest[from:to] {
			items = append(items, map[string]any{"id": from + i + 1, stateKey: st.State, "context": st.Context,
				"description": st.Description, "target_url": st.TargetURL,
				"created_at": st.Time.UTC().Format(time.RFC3339), "updated_at": st.Time.UTC().Format(time.RFC3339)})
		}
		total := len(latest)
		if gitea {
			w.Header().Set("X-Total-Count", strconv.Itoa(total))
			total = len(items)
		}
		writeJSON(w, map[string]any{"state": combined(latest), "sha": r.PathValue("sha"), "total_count": total, "statuses": items})
	}
}

// combined is GitHub's combined state: failure if any failed, pending if
// any is pending (or none is there), else success.
func combined(sts []Status) string {
	state := "success"
	if len(sts) == 0 {
		state = "pending"
	}
	for _, st := range sts {
		switch st.State {
		case "failure", "error":
			return "failure"
		case "pending":
			state = "pending"
		}
	}
	return state
}

// gitlabRead is GET /projects/{id}/repository/commits/{sha}/statuses:
// the newest status of each name (all=true: every one), pages of
// per_page (default 20, at most 100) with X-Next-Page and X-Total. A
// name's status is one job that moves: created when first posted,
// started when it first ran, finished when it succeeded or failed.
func (rd reads) gitlabRead(w http.ResponseWriter, r *http.Request) {
	s := rd.s
	if !rd.readable(w, r, "PRIVATE-TOKEN", s.Token) {
		return
	}
	all := r.URL.Query().Get("all") == "true"
	var items []map[string]any
	for _, h := range rd.history("gitlab", r.PathValue("id"), r.PathValue("sha")) {
		for i := range h {
			if !all && i != len(h)-1 {
				continue
			}
			st := h[i]
			item := map[string]any{"id": len(items) + 1, "sha": st.Commit, "status": st.State, "name": st.Context,
				"description": st.Description, "target_url": nil, "created_at": h[0].Time.UTC().Format(time.RFC3339),
				"started_at": nil, "finished_at": nil}
			if st.TargetURL != "" {
				item["target_url"] = st.TargetURL
			}
			for _, e := range h[:i+1] {
				if e.State == "running" {
					item["started_at"] = e.Time.UTC().Format(time.RFC3339)
					break
				}
			}
			if slices.Contains([]string{"success", "failed", "canceled"}, st.State) {
				item["finished_at"] = st.Time.UTC().Format(time.RFC3339)
			}
			items = append(items, item)
		}
	}
	p, size, from, to := page(r.URL.Query(), "per_page", 20, 100, len(items))
	next := ""
	if to < len(items) {
		next = strconv.Itoa(p + 1)
	}
	w.Header().Set("X-Page", strconv.Itoa(p))
	w.Header().Set("X-Per-Page", strconv.Itoa(size))
	w.Header().Set("X-Next-Page", next)
	w.Header().Set("X-Total", strconv.Itoa(len(items)))
	writeJSON(w, append([]map[string]any{}, items[from:to]...))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, strings.ReplaceAll(err.Error(), "\n", " "), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(b)
}
