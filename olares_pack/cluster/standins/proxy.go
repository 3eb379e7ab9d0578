// A stand-in for docker.io/beclab/aboveos-bitnami-openresty as the per-user client of a shared
// app uses it (beclab/apps llamacppgptoss120bggufv2/llamacppgptoss120bggufv2/templates/
// clientproxy.yaml): Bitnami's OpenResty image loads every server block mounted under
// /opt/bitnami/openresty/nginx/conf/server_blocks/. This reads each block's `listen PORT;` and its
// `location / { proxy_pass URL; }` and reverse-proxies that port to that URL, streaming (the
// blocks set proxy_buffering off). Nothing else of nginx's configuration is honoured.
package main

import (
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
)

var (
	listenRe = regexp.MustCompile(`(?m)^\s*listen\s+(\d+)\s*;`)
	passRe   = regexp.MustCompile(`(?m)^\s*proxy_pass\s+(\S+?)\s*;`)
)

func main() {
	dir := "/opt/bitnami/openresty/nginx/conf/server_blocks"
	if len(os.Args) > 1 && filepath.IsAbs(os.Args[len(os.Args)-1]) {
		dir = os.Args[len(os.Args)-1]
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.conf"))
	done := make(chan error)
	n := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		l, p := listenRe.FindSubmatch(text), passRe.FindSubmatch(text)
		if l == nil || p == nil {
			log.Printf("%s: no listen/proxy_pass, skipped", f)
			continue
		}
		target, err := url.Parse(string(p[1]))
		if err != nil {
			log.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.FlushInterval = -1
		addr := ":" + string(l[1])
		log.Printf("proxy stand-in: %s -> %s (%s)", addr, target, f)
		n++
		go func() { done <- http.ListenAndServe(addr, proxy) }()
	}
	if n == 0 {
		log.Fatalf("no server block with listen and proxy_pass in %s", dir)
	}
	log.Fatal(<-done)
}
