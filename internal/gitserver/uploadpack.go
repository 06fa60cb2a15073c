package gitserver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
)

// Omit makes the server leave objects (full hashes) out of every pack it
// sends for the named repository, as a faulty or hostile server (or a man
// in the middle on http://) could: the client gets a well-formed pack that
// lacks them. No objects: back to git's own packs.
func (s *HTTPServer) Omit(repo string, objects ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.omit == nil {
		s.omit = map[string]map[string]bool{}
	}
	if len(objects) == 0 {
		delete(s.omit, repo)
		return
	}
	set := map[string]bool{}
	for _, o := range objects {
		set[o] = true
	}
	s.omit[repo] = set
}

// omitted is the set Omit gave for the repository a request is for (nil:
// none), and that repository's bare directory.
func (s *HTTPServer) omitted(r *http.Request) (map[string]bool, string) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
		return nil, ""
	}
	repo := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/git-upload-pack"), ".git")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.omit[repo], s.Root + "/" + repo + ".git"
}

// refuseBlobWant answers an upload-pack request that wants a blob with
// git's error and reports true; any other request is left to be served,
// its body as it came.
func refuseBlobWant(w http.ResponseWriter, r *http.Request, root string) bool {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
		return false
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	body := io.Reader(bytes.NewReader(raw))
	if r.Header.Get("Content-Encoding") == "gzip" {
		if body, err = gzip.NewReader(body); err != nil {
			return false
		}
	}
	req, err := readUploadRequest(body)
	if err != nil {
		return false
	}
	bare := root + "/" + strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/git-upload-pack"), ".git") + ".git"
	for _, want := range req.wants {
		if typ, err := runGit(bare, "cat-file", "-t", want); err == nil && typ == "blob" {
			w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
			pktLine(w, "ERR upload-pack: not our ref "+want)
			return true
		}
	}
	return false
}

// uploadRequest is what a client asks of git-upload-pack (protocol v0,
// stateless RPC, as go-git and git speak over HTTP).
type uploadRequest struct {
	wants, haves, shallows []string
	deepen                 int
	sideband               bool
	filter                 string // "blob:none" and the like, as git rev-list takes it
}

// serveUploadPack answers a git-upload-pack request itself: the objects
// git rev-list names for it, less the omitted ones, packed by git
// pack-objects, after the shallow and ACK/NAK sections the client expects.
// Only what the tests need: a depth of 1 or none, a filter, no multi_ack.
func serveUploadPack(w http.ResponseWriter, r *http.Request, bare string, omit map[string]bool) {
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	req, err := readUploadRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pack, err := packWithout(bare, req, omit)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var out bytes.Buffer
	if req.deepen > 0 { // as git: no section for a client that only lists its shallow commits
		if err := writeShallows(&out, bare, req); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	writeAck(&out, bare, req.haves)
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	_, _ = w.Write(out.Bytes())
	if !req.sideband {
		_, _ = w.Write(pack)
		return
	}
	// side-band-64k: band 1 carries the pack, at most 65515 bytes a packet
	for len(pack) > 0 {
		n := min(len(pack), 65515)
		_, _ = io.WriteString(w, fmt.Sprintf("%04x\x01", n+5))
		_, _ = w.Write(pack[:n])
		pack = pack[n:]
	}
	_, _ = io.WriteString(w, "0000")
}

// readUploadRequest parses the request's pkt-lines.
func readUploadRequest(r io.Reader) (*uploadRequest, error) {
	br := bufio.NewReader(r)
	req := &uploadRequest{}
	for {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err == io.EOF {
			return req, nil
		} else if err != nil {
			return nil, err
		}
		n, err := strconv.ParseUint(string(size[:]), 16, 16)
		if err != nil {
			return nil, fmt.Errorf("pkt-line length %q: %w", size, err)
		}
		if n < 4 {
			continue // flush or delimiter
		}
		line := make([]byte, n-4)
		if _, err := io.ReadFull(br, line); err != nil {
			return nil, err
		}
		f := strings.Fields(string(line))
		switch {
		case len(f) >= 2 && f[0] == "want":
			req.wants = append(req.wants, f[1])
			for _, c := range f[2:] {
				req.sideband = req.sideband || c == "side-band-64k"
			}
		case len(f) == 2 && f[0] == "have":
			req.haves = append(req.haves, f[1])
		case len(f) == 2 && f[0] == "shallow":
			req.shallows = append(req.shallows, f[1])
		case len(f) == 2 && f[0] == "deepen":
			if req.deepen, err = strconv.Atoi(f[1]); err != nil || req.deepen > 1 {
				return nil, fmt.Errorf("deepen %q: only a depth of 1 is served", f[1])
			}
		case len(f) == 2 && f[0] == "filter":
			req.filter = f[1]
		case len(f) == 1 && f[0] == "done":
			return req, nil
		}
	}
}

// packWithout lists the objects the request needs with git rev-list,
// drops the omitted ones and packs the rest.
func packWithout(bare string, req *uploadRequest, omit map[string]bool) ([]byte, error) {
	args := []string{"rev-list", "--objects"}
	if req.deepen == 1 {
		args = append(args, "--no-walk")
	}
	if req.filter != "" {
		args = append(args, "--filter="+req.filter)
	}
	args = append(args, req.wants...)
	if len(req.haves) > 0 {
		args = append(append(args, "--not"), known(bare, req.haves)...)
	}
	list, err := runGit(bare, args...)
	if err != nil {
		return nil, err
	}
	var keep bytes.Buffer
	for _, line := range strings.Split(list, "\n") {
		if sha, _, _ := strings.Cut(line, " "); sha != "" && !omit[sha] {
			keep.WriteString(line + "\n")
		}
	}
	cmd := exec.Command("git", "pack-objects", "--stdout", "--quiet")
	cmd.Dir, cmd.Stdin = bare, &keep
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git pack-objects: %w: %s", err, errb.String())
	}
	return out.Bytes(), nil
}

// known keeps the commits the repository has (a client's haves may not be).
func known(bare string, hashes []string) []string {
	var out []string
	for _, h := range hashes {
		if _, err := runGit(bare, "cat-file", "-e", h+"^{commit}"); err == nil {
			out = append(out, h)
		}
	}
	return out
}

// writeShallows sends the shallow-update section of a depth of 1: each
// wanted commit that has parents becomes a shallow boundary.
func writeShallows(w io.Writer, bare string, req *uploadRequest) error {
	for _, want := range req.wants {
		parents, err := runGit(bare, "rev-list", "--parents", "-n", "1", want)
		if err != nil {
			return err
		}
		if strings.Contains(parents, " ") {
			pktLine(w, "shallow "+want+"\n")
		}
	}
	_, err := io.WriteString(w, "0000")
	return err
}

// writeAck acknowledges the first have the repository knows, or sends NAK.
func writeAck(w io.Writer, bare string, haves []string) {
	if common := known(bare, haves); len(common) > 0 {
		pktLine(w, "ACK "+common[0]+"\n")
		return
	}
	pktLine(w, "NAK\n")
}

func pktLine(w io.Writer, s string) { _, _ = fmt.Fprintf(w, "%04x%s", len(s)+4, s) }
