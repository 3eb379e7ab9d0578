// A stand-in for docker.io/beclab/llm-init, built to the contract the official charts define
// (beclab/apps llamacppllmbasev3/templates/llm-init.yaml and llamacpp.yaml at 27e57e7b): it
// downloads MODEL_SOURCE ("hf://<repo> [--include <file>] [--revision <rev>]", comma-separated)
// from HF_ENDPOINT into the Hugging Face cache at /cache/hf/hub (models--<org>--<name>/{blobs,
// snapshots,refs}). Without --include the whole repo, every file the Hub's listing names
// (GET /api/models/<repo>/revision/<rev>, its siblings), as `hf download <repo>` does: the vLLM
// base chart's contract (beclab/apps vllmllmbasev3 OlaresManifest.yaml at 155a1e9a, MODEL_SOURCE:
// "hf://<repo> ... Optionally append --include <file> or --revision <sha>"; templates/llm-init.yaml
// at 7e992c38: llm-init runs `hf download`). It writes the sentinel
// $RUN_DIR/model_download_finish the engine's wrapper blocks on and hands ENGINE_ARGS over in
// $RUN_DIR/engine_args, serves :$PORT (/livez, /readyz once the engine answers /v1/models) and
// reverse-proxies /v1 to the engine's Service (llamacpp:8081 or vllm:8000, by ENGINE_KIND).
//
// Not the real program: no progress page beyond one line, no gateway registration. The engine's
// Service is found by its DNS name, as the real one does (the node's cluster DNS, cluster/dns.py).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

var ready atomic.Bool
var state atomic.Value

func env(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func engineURL() *url.URL {
	kind := env("ENGINE_KIND", "llamacpp")
	port := map[string]string{"llamacpp": "8081", "vllm": "8000"}[kind]
	u, _ := url.Parse("http://" + kind + ":" + port)
	return u
}

type source struct {
	repo, revision string
	files          []string
}

func parseSource(s string) []source {
	var out []source
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(part)
		if len(f) == 0 || !strings.HasPrefix(f[0], "hf://") {
			continue
		}
		src := source{repo: strings.TrimPrefix(f[0], "hf://"), revision: "main"}
		for i := 1; i+1 < len(f); i++ {
			switch f[i] {
			case "--include":
				src.files = append(src.files, f[i+1])
			case "--revision":
				src.revision = f[i+1]
			}
		}
		out = append(out, src)
	}
	return out
}

// Every request has a deadline: a connection that hangs (a SYN to a ClusterIP kube-proxy has not
// programmed yet waits out the dialer's 30 s; a stalled response would wait forever) is retried
// instead. The engine is polled with a short one, the hub with one that fits the stand-in model.
var hubClient = &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{
	DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, ResponseHeaderTimeout: 30 * time.Second}}

// a new connection (and DNS answer) per poll: a kept-alive one would keep asking whatever the
// first answer reached
var engineClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func request(method, u string) (*http.Response, error) {
	req, _ := http.NewRequest(method, u, nil)
	if t := os.Getenv("HF_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	return hubClient.Do(req)
}

func fetch(cache, endpoint string, src source, file string) error {
	u := strings.TrimRight(endpoint, "/") + "/" + src.repo + "/resolve/" + url.PathEscape(src.revision) + "/" + file
	head, err := request("HEAD", u)
	if err != nil {
		return err
	}
	head.Body.Close()
	if head.StatusCode != 200 {
		return fmt.Errorf("HEAD %s: %s", u, head.Status)
	}
	commit := head.Header.Get("X-Repo-Commit")
	etag := strings.Trim(head.Header.Get("X-Linked-Etag"), "\"")
	if etag == "" {
		etag = strings.Trim(head.Header.Get("ETag"), "\"")
	}
	dir := filepath.Join(cache, "models--"+strings.ReplaceAll(src.repo, "/", "--"))
	blob := filepath.Join(dir, "blobs", etag)
	snap := filepath.Join(dir, "snapshots", commit, file)
	for _, d := range []string{filepath.Dir(blob), filepath.Dir(snap), filepath.Join(dir, "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if _, err := os.Stat(blob); err == nil {
		log.Printf("%s: in the cache (%s), not downloaded again", file, etag)
	} else {
		log.Printf("downloading %s", u)
		resp, err := request("GET", u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		tmp := blob + ".incomplete"
		out, err := os.Create(tmp)
		if err != nil {
			return err
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(out, h), resp.Body)
		out.Close()
		if err != nil {
			return err
		}
		if got := hex.EncodeToString(h.Sum(nil)); len(etag) == 64 && got != etag {
			os.Remove(tmp)
			return fmt.Errorf("%s: sha256 %s, the hub published %s", file, got, etag)
		}
		if err := os.Rename(tmp, blob); err != nil {
			return err
		}
		if len(etag) == 64 {
			log.Printf("%s: %d bytes, sha256 checked", file, n)
		} else {
			log.Printf("%s: %d bytes (a file kept in git: its ETag is no sha256)", file, n)
		}
	}
	rel, _ := filepath.Rel(filepath.Dir(snap), blob)
	os.Remove(snap)
	if err := os.Symlink(rel, snap); err != nil {
		return err
	}
	if src.revision == commit {
		return nil // a commit asked for by its hash has no ref
	}
	return os.WriteFile(filepath.Join(dir, "refs", src.revision), []byte(commit), 0o644)
}

// listing: every file of the repo at its revision, from the Hub's model info (siblings).
func listing(endpoint string, src source) ([]string, error) {
	u := strings.TrimRight(endpoint, "/") + "/api/models/" + src.repo + "/revision/" + url.PathEscape(src.revision)
	resp, err := request("GET", u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var info struct {
		Siblings []struct {
			Rfilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return nil, fmt.Errorf("GET %s: %v", u, err)
	}
	var files []string
	for _, s := range info.Siblings {
		files = append(files, s.Rfilename)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s lists no file", u)
	}
	log.Printf("%s@%s: the whole repo, %d files", src.repo, src.revision, len(files))
	return files, nil
}

func download() {
	cache := env("HF_HUB_CACHE", "/cache/hf/hub")
	runDir := env("RUN_DIR", "/run/llm-init")
	endpoint := env("HF_ENDPOINT", "https://huggingface.co")
	for {
		err := error(nil)
		for _, src := range parseSource(os.Getenv("MODEL_SOURCE")) {
			files := src.files
			if len(files) == 0 {
				if files, err = listing(endpoint, src); err != nil {
					break
				}
			}
			for _, f := range files {
				if err = fetch(cache, endpoint, src, f); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			break
		}
		state.Store("download failed: " + err.Error())
		log.Printf("download failed, retrying in 5 s: %v", err)
		time.Sleep(5 * time.Second)
	}
	if err := os.WriteFile(filepath.Join(runDir, "engine_args"), []byte(os.Getenv("ENGINE_ARGS")), 0o644); err != nil {
		log.Printf("engine_args: %v", err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "model_download_finish"), []byte(time.Now().UTC().Format(time.RFC3339)), 0o644); err != nil {
		log.Fatalf("sentinel: %v", err)
	}
	state.Store("model downloaded, waiting for the engine")
	log.Printf("model downloaded: %s", filepath.Join(runDir, "model_download_finish"))
	for i := 0; ; i++ {
		resp, err := engineClient.Get(engineURL().String() + "/v1/models")
		said := ""
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				ready.Store(true)
				state.Store("ready")
				log.Printf("engine ready at %s", engineURL())
				return
			}
			said = resp.Status
		} else {
			said = err.Error()
		}
		if i%10 == 9 {
			log.Printf("engine not ready at %s: %s", engineURL(), said)
		}
		time.Sleep(time.Second)
	}
}

func main() {
	log.SetFlags(log.LstdFlags | log.LUTC)
	// as a container's PID 1 a signal without a handler is ignored: stop at once on SIGTERM
	// (the pod would otherwise take its whole grace period to go)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-stop; os.Exit(0) }()
	state.Store("downloading " + os.Getenv("MODEL_SOURCE"))
	go download()
	proxy := httputil.NewSingleHostReverseProxy(engineURL())
	proxy.FlushInterval = -1
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, state.Load().(string), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, state.Load().(string), http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "olares-pack llm-init stand-in: %s\n", state.Load())
	})
	addr := ":" + env("PORT", "8090")
	log.Printf("llm-init stand-in listening on %s, engine %s", addr, engineURL())
	log.Fatal(http.ListenAndServe(addr, mux))
}
