// helmd: the Helm SDK (helm.sh/helm/v3 at the version Olares' app-service links) as one
// long-lived process per cluster, answering JSON lines on stdin/stdout. It replaces one Helm CLI
// process per call (olares_pack/cluster/helmcli.py says why and how it is driven).
//
// Each answer is what the CLI prints for the same call: stdout as `--output json` (or `get
// manifest`, `template`, `uninstall`) writes it, stderr as cobra's `Error: ...` line, wrapped
// the way the CLI wraps it (helm/helm cmd/helm/install.go runInstall, upgrade.go, uninstall.go,
// status.go, get_manifest.go, template.go at v3.19.5). What the CLI would redo in every process
// and this one does once per kubeconfig: read the kubeconfig, build the REST config and the
// kubectl factory, fetch discovery for the REST mapper and the OpenAPI v3 documents the
// validation reads.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/openapi/cached"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // the CLI links the client auth plugins too (cmd/helm/helm.go)
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/openapi"
	"k8s.io/kubectl/pkg/validation"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/output"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

type request struct {
	ID           int64             `json:"id"`
	Op           string            `json:"op"`
	Kubeconfig   string            `json:"kubeconfig"`
	Namespace    string            `json:"namespace"`
	Release      string            `json:"release"`
	Chart        string            `json:"chart"`
	Values       json.RawMessage   `json:"values"`
	Reuse        bool              `json:"reuse"`
	PostRenderer string            `json:"post_renderer"`
	Env          map[string]string `json:"env"`
}

type response struct {
	ID     int64  `json:"id"`
	OK     bool   `json:"ok"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// The CLI's settings from the environment (HELM_MAX_HISTORY, HELM_BURST_LIMIT, HELM_QPS), read
// once: the daemon's environment is the one the Python side would have given the CLI.
var settings = cli.New()

func nolog(string, ...interface{}) {}

func main() {
	// cmd/helm/helm.go main: the field manager of every object Helm writes is "helm", not the
	// program's name (which client-go would take otherwise).
	kube.ManagedFieldsManager = "helm"
	// Go's log and klog (client-go's warnings) go to this process's stderr: they are not tied to
	// one request, and several run at once.
	log.SetFlags(log.Lshortfile)

	var writeMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	answer := func(r response) {
		line, err := json.Marshal(r)
		if err != nil {
			line, _ = json.Marshal(response{ID: r.ID, Stderr: "Error: helmd: " + err.Error() + "\n"})
		}
		writeMu.Lock()
		defer writeMu.Unlock()
		out.Write(line)
		out.WriteByte('\n')
		out.Flush()
	}

	var inflight sync.WaitGroup
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var req request
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				answer(response{ID: -1, Stderr: "Error: helmd: bad request: " + jerr.Error() + "\n"})
			} else {
				// several threads of the Python side call at once (rehearse/live.py's device slots)
				inflight.Add(1)
				go func(req request) {
					defer inflight.Done()
					answer(handle(req))
				}(req)
			}
		}
		if err != nil {
			// EOF: the Python side closed us (or died: then the parent-death signal ends this
			// process anyway). What was asked is finished, so no release is left half-written.
			inflight.Wait()
			os.Exit(0)
		}
	}
}

func handle(req request) (res response) {
	res.ID = req.ID
	var stdout, stderr bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			stderr.WriteString(fmt.Sprintf("Error: helmd: %v\n%s", p, debug.Stack()))
			res.OK = false
		}
		res.Stdout, res.Stderr = stdout.String(), stderr.String()
	}()
	var err error
	switch req.Op {
	case "install":
		err = install(req, &stdout, &stderr)
	case "upgrade":
		err = upgrade(req, &stdout, &stderr)
	case "uninstall":
		err = uninstall(req, &stdout)
	case "status":
		err = status(req, &stdout)
	case "manifest":
		err = manifest(req, &stdout)
	case "template":
		err = template(req, &stdout, &stderr)
	case "version":
		stdout.WriteString(sdkVersion())
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		// cobra's Execute: `Error: <err>` on stderr (SilenceUsage is set in cmd/helm/root.go)
		fmt.Fprintf(&stderr, "Error: %s\n", err.Error())
		return
	}
	res.OK = true
	return
}

// sdkVersion: the version of the Helm module linked in, as `helm version --template {{ .Version }}`
// prints it for the CLI built from the same module version.
func sdkVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "helm.sh/helm/v3" {
				return d.Version
			}
		}
	}
	return chartutil.DefaultCapabilities.HelmVersion.Version
}

// ------------------------------------------------------------------ one cluster

// cluster: what every call on one kubeconfig shares.
type cluster struct {
	loader  clientcmd.ClientConfig
	config  *rest.Config
	shared  discovery.CachedDiscoveryInterface // discovery, and the OpenAPI v3 documents, cached in memory
	factory cmdutil.Factory
	v2      discovery.OpenAPISchemaInterface // the OpenAPI v2 document, fetched once if ever asked for
	// the kinds the server said take the fieldValidation parameter (see requestFactory.Validator)
	fieldValidation sync.Map
}

var (
	clustersMu sync.Mutex
	clusters   = map[string]*cluster{}
)

func clusterFor(kubeconfig string) (*cluster, error) {
	clustersMu.Lock()
	defer clustersMu.Unlock()
	if c, ok := clusters[kubeconfig]; ok {
		return c, nil
	}
	// as cli.EnvSettings' ConfigFlags load it for the CLI run with KUBECONFIG=<kubeconfig>
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	rules.Precedence = filepath.SplitList(kubeconfig)
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults})
	config, err := loader.ClientConfig()
	if err != nil {
		return nil, err
	}
	// pkg/cli/environment.go New's WrapConfigFn: the CLI's rate limit (Burst 100, QPS 0 = client-go's
	// 5/s), its retrying round tripper and user agent. Every client Helm makes per call (the release
	// storage's, the builder's per mapping, the dynamic one) is made again per request from this
	// config, with a token bucket of its own, as in a fresh CLI process.
	config.Burst = settings.BurstLimit
	config.QPS = settings.QPS
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &kube.RetryingRoundTripper{Wrapped: rt} })
	config.UserAgent = "Helm/" + strings.TrimPrefix(chartutil.DefaultCapabilities.HelmVersion.Version, "v")

	// The shared discovery client lives as long as the daemon and serves every request, four at a
	// time: a token bucket on it would throttle calls that each started with a full bucket in the
	// CLI. QPS < 0: client-go makes no rate limiter at all.
	dconf := rest.CopyConfig(config)
	dconf.QPS, dconf.Burst = -1, 0
	dc, err := discovery.NewDiscoveryClientForConfig(dconf)
	if err != nil {
		return nil, err
	}
	c := &cluster{loader: loader, config: config, shared: memory.NewMemCacheClient(dc)}
	c.factory = cmdutil.NewFactory(sharedGetter{c})
	c.v2 = openapi.NewOpenAPIGetter(c.shared)
	clusters[kubeconfig] = c
	return c, nil
}

func (c *cluster) restConfig() *rest.Config { return rest.CopyConfig(c.config) }

// sharedGetter: the factory's view of the cluster (its Validator reads the OpenAPI v3 documents
// through the shared discovery client, which keeps them).
type sharedGetter struct{ c *cluster }

func (g sharedGetter) ToRESTConfig() (*rest.Config, error) { return g.c.restConfig(), nil }
func (g sharedGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.c.shared, nil
}
func (g sharedGetter) ToRESTMapper() (meta.RESTMapper, error) {
	m := restmapper.NewDeferredDiscoveryRESTMapper(g.c.shared)
	return restmapper.NewShortcutExpander(m, g.c.shared, nil), nil
}
func (g sharedGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return g.c.loader }

// requestDiscovery: the shared cache as one request sees it. A CLI process starts with a
// discovery cache it has not fetched itself (~/.kube/cache), so a kind the cache does not know
// (a CRD created since) makes its REST mapper fetch discovery again, once; Fresh() says whether
// this request has done that. The memory cache alone would answer "fresh" for ever.
type requestDiscovery struct {
	discovery.CachedDiscoveryInterface
	fresh atomic.Bool
}

func (d *requestDiscovery) Fresh() bool { return d.fresh.Load() }
func (d *requestDiscovery) Invalidate() {
	d.CachedDiscoveryInterface.Invalidate()
	d.fresh.Store(true)
}

// requestGetter: the action.Configuration's RESTClientGetter for one request.
type requestGetter struct {
	c      *cluster
	mapper meta.RESTMapper
	once   sync.Once
	caps   discovery.CachedDiscoveryInterface
	err    error
}

func newRequestGetter(c *cluster) *requestGetter {
	view := &requestDiscovery{CachedDiscoveryInterface: c.shared}
	m := restmapper.NewDeferredDiscoveryRESTMapper(view)
	return &requestGetter{c: c, mapper: restmapper.NewShortcutExpander(m, view, nil)}
}

func (g *requestGetter) ToRESTConfig() (*rest.Config, error)    { return g.c.restConfig(), nil }
func (g *requestGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }
func (g *requestGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return g.c.loader
}

// ToDiscoveryClient: Helm asks it for the capabilities of each install and upgrade and
// invalidates it first (pkg/action/action.go getCapabilities: "always fetch the latest server
// version/capabilities"), so each request gets one of its own, fetched afresh as the CLI's is;
// invalidating the shared one would also drop the OpenAPI documents it keeps. Its limits are
// ConfigFlags' discovery defaults (burst 300, 50/s).
func (g *requestGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.once.Do(func() {
		conf := g.c.restConfig()
		conf.Burst, conf.QPS = 300, 50
		var dc *discovery.DiscoveryClient
		dc, g.err = discovery.NewDiscoveryClientForConfig(conf)
		if g.err == nil {
			g.caps = memory.NewMemCacheClient(dc)
		}
	})
	return g.caps, g.err
}

// requestFactory: the shared factory, but objects are built with the request's REST mapper.
type requestFactory struct {
	cmdutil.Factory
	c      *cluster
	getter *requestGetter
}

func (f requestFactory) NewBuilder() *resource.Builder { return resource.NewBuilder(f.getter) }

// Validator: kubectl's factoryImpl.Validator (k8s.io/kubectl pkg/cmd/util/factory_client_access.go
// at v0.34.2), which Helm asks for at every Build (pkg/kube/client.go), with one thing kept across
// calls. The schema it returns validates an object client-side only where the server does not
// take the fieldValidation parameter for its kind; to know, it parses the OpenAPI v3 document of
// the kind's group version (apps/v1: 70 % of helmd's CPU per install, measured) every time. A kind
// the server said takes it is remembered for the cluster: a server does not lose that (Kubernetes
// >= 1.27 takes it for every built-in kind and CRD). Any other answer is asked again in each
// call, as the CLI does.
func (f requestFactory) Validator(directive string) (validation.Schema, error) {
	if directive == metav1.FieldValidationIgnore {
		return validation.NullSchema{}, nil
	}
	schemas := validation.ConjunctiveSchema{validation.NewSchemaValidation(f.Factory), validation.NoDoubleKeySchema{}}
	dynamicClient, err := f.DynamicClient()
	if err != nil {
		return nil, err
	}
	q := resource.QueryParamFieldValidation
	primary := &fieldValidationSupport{known: &f.c.fieldValidation, seen: map[schema.GroupVersionKind]error{},
		next: resource.NewQueryParamVerifierV3(dynamicClient, cached.NewClient(f.c.shared.OpenAPIV3()), q)}
	secondary := resource.NewQueryParamVerifier(dynamicClient, f.c.v2, q)
	return validation.NewParamVerifyingSchema(schemas, resource.NewFallbackQueryParamVerifier(primary, secondary),
		directive), nil
}

// fieldValidationSupport: kubectl's cachingVerifier (one answer per kind within a call), and the
// cluster's kinds known to take the parameter.
type fieldValidationSupport struct {
	known *sync.Map
	next  resource.Verifier
	mu    sync.Mutex
	seen  map[schema.GroupVersionKind]error
}

func (v *fieldValidationSupport) HasSupport(gvk schema.GroupVersionKind) error {
	if _, ok := v.known.Load(gvk); ok {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err, ok := v.seen[gvk]; ok {
		return err
	}
	err := v.next.HasSupport(gvk)
	v.seen[gvk] = err
	if err == nil {
		v.known.Store(gvk, struct{}{})
	}
	return err
}

// configFor: what cmd/helm/helm.go's actionConfig.Init makes for one call (HELM_DRIVER=secret), on
// the shared cluster.
func configFor(req request) (*action.Configuration, error) {
	c, err := clusterFor(req.Kubeconfig)
	if err != nil {
		return nil, err
	}
	getter := newRequestGetter(c)
	kc := &kube.Client{Factory: requestFactory{c.factory, c, getter}, Namespace: req.Namespace, Log: nolog}
	var store *storage.Storage
	if cs, err := c.factory.KubernetesClientSet(); err == nil {
		d := driver.NewSecrets(cs.CoreV1().Secrets(req.Namespace))
		d.Log = nolog
		store = storage.Init(d)
	} else {
		// Every action asks KubeClient.IsReachable first, which meets this same error and returns
		// it before the storage is touched.
		store = storage.Init(driver.NewMemory())
	}
	return &action.Configuration{RESTClientGetter: getter, KubeClient: kc, Releases: store, Log: nolog,
		HookOutputFunc: func(_, _, _ string) io.Writer { return io.Discard }}, nil
}

// ------------------------------------------------------------------ the calls

// locate: ChartPathOptions.LocateChart as the CLI calls it (a local path: made absolute, or
// `path "..." not found`).
func locate(path string) (string, error) {
	return (&action.ChartPathOptions{}).LocateChart(path, settings)
}

// checkDependencies: the check both commands make before the action runs (no --dependency-update).
func checkDependencies(ch *chart.Chart) error {
	if req := ch.Metadata.Dependencies; req != nil {
		if err := action.CheckDependencies(ch, req); err != nil {
			return errors.Wrap(err, "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies")
		}
	}
	return nil
}

// values: the request's values as the CLI reads a --values file (sigs.k8s.io/yaml, so JSON
// numbers become float64 and coalesce with the chart's defaults the same way).
func values(raw json.RawMessage) (map[string]interface{}, error) {
	vals, err := chartutil.ReadValues(raw)
	if err != nil {
		return nil, errors.Wrap(err, "failed to parse values")
	}
	return vals, nil
}

func install(req request, stdout, stderr io.Writer) error {
	pr, err := postRenderer(req)
	if err != nil {
		return err
	}
	cfg, err := configFor(req)
	if err != nil {
		return errors.Wrap(err, "INSTALLATION FAILED")
	}
	client := action.NewInstall(cfg)
	client.DryRunOption = "none"
	client.CreateNamespace = true
	client.DisableHooks = true
	client.PostRenderer = pr
	client.Timeout = 300 * time.Second
	rel, err := runInstall(req, client, stderr)
	if err != nil {
		return errors.Wrap(err, "INSTALLATION FAILED")
	}
	return output.EncodeJSON(stdout, rel)
}

// runInstall: cmd/helm/install.go runInstall's steps, in its order, for a local chart.
func runInstall(req request, client *action.Install, stderr io.Writer) (*release.Release, error) {
	name, chartArg, err := client.NameAndChart([]string{req.Release, req.Chart})
	if err != nil {
		return nil, err
	}
	client.ReleaseName = name
	cp, err := locate(chartArg)
	if err != nil {
		return nil, err
	}
	vals, err := values(req.Values)
	if err != nil {
		return nil, err
	}
	ch, err := loader.Load(cp)
	if err != nil {
		return nil, err
	}
	switch ch.Metadata.Type { // checkIfInstallable
	case "", "application":
	default:
		return nil, errors.Errorf("%s charts are not installable", ch.Metadata.Type)
	}
	if ch.Metadata.Deprecated {
		fmt.Fprintln(stderr, "WARNING: This chart is deprecated")
	}
	if err := checkDependencies(ch); err != nil {
		return nil, err
	}
	client.Namespace = req.Namespace
	return client.RunWithContext(context.Background(), ch, vals)
}

func upgrade(req request, stdout, stderr io.Writer) error {
	pr, err := postRenderer(req)
	if err != nil {
		return err
	}
	cfg, err := configFor(req)
	if err != nil {
		return err
	}
	client := action.NewUpgrade(cfg)
	client.Namespace = req.Namespace
	client.DryRunOption = "none"
	client.DisableHooks = true
	client.PostRenderer = pr
	client.Timeout = 2400 * time.Second
	client.MaxHistory = settings.MaxHistory
	if req.Reuse {
		client.ReuseValues = true
	} else {
		client.ResetThenReuseValues = true
	}
	cp, err := locate(req.Chart)
	if err != nil {
		return err
	}
	vals, err := values(req.Values)
	if err != nil {
		return err
	}
	ch, err := loader.Load(cp)
	if err != nil {
		return err
	}
	if err := checkDependencies(ch); err != nil {
		return err
	}
	if ch.Metadata.Deprecated {
		fmt.Fprintln(stderr, "WARNING: This chart is deprecated")
	}
	rel, err := client.RunWithContext(context.Background(), req.Release, ch, vals)
	if err != nil {
		return errors.Wrap(err, "UPGRADE FAILED")
	}
	return output.EncodeJSON(stdout, rel)
}

func uninstall(req request, stdout io.Writer) error {
	cfg, err := configFor(req)
	if err != nil {
		return err
	}
	client := action.NewUninstall(cfg)
	client.DeletionPropagation = "background"
	client.Timeout = 300 * time.Second
	res, err := client.Run(req.Release)
	if err != nil {
		return err
	}
	if res != nil && res.Info != "" {
		fmt.Fprintln(stdout, res.Info)
	}
	fmt.Fprintf(stdout, "release \"%s\" uninstalled\n", req.Release)
	return nil
}

func status(req request, stdout io.Writer) error {
	cfg, err := configFor(req)
	if err != nil {
		return err
	}
	rel, err := action.NewStatus(cfg).Run(req.Release)
	if err != nil {
		return err
	}
	rel.Chart = nil // status.go: "strip chart metadata from the output"
	return output.EncodeJSON(stdout, rel)
}

func manifest(req request, stdout io.Writer) error {
	cfg, err := configFor(req)
	if err != nil {
		return err
	}
	rel, err := action.NewGet(cfg).Run(req.Release)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, rel.Manifest)
	return nil
}

// template: `helm template REL CHART --namespace NS --values F`, the client-only dry run; the
// cluster is not asked anything (the action replaces the kube client and the storage).
func template(req request, stdout, stderr io.Writer) error {
	pr, err := postRenderer(req)
	if err != nil {
		return err
	}
	cfg := &action.Configuration{Log: nolog, HookOutputFunc: func(_, _, _ string) io.Writer { return io.Discard }}
	client := action.NewInstall(cfg)
	client.DryRunOption = "true"
	client.DryRun = true
	client.ReleaseName = "release-name"
	client.Replace = true
	client.ClientOnly = true
	client.APIVersions = chartutil.VersionSet([]string{})
	client.PostRenderer = pr
	client.Timeout = 300 * time.Second
	rel, err := runInstall(req, client, stderr)
	if err != nil {
		if rel != nil {
			return fmt.Errorf("%w\n\nUse --debug flag to render out invalid YAML", err)
		}
		return err
	}
	var manifests bytes.Buffer
	fmt.Fprintln(&manifests, strings.TrimSpace(rel.Manifest))
	for _, h := range rel.Hooks {
		fmt.Fprintf(&manifests, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	_, err = stdout.Write(manifests.Bytes())
	return err
}

// ------------------------------------------------------------------ the post-renderer

// execRenderer: pkg/postrender/exec.go's execRender, with the request's environment: the Python
// side's post-renderers read which device slot they render for from it (OLARES_PACK_SLOT), which
// the CLI got as its own environment.
type execRenderer struct {
	path string
	env  []string
}

func postRenderer(req request) (postrender.PostRenderer, error) {
	if req.PostRenderer == "" {
		return nil, nil
	}
	path, err := exec.LookPath(req.PostRenderer)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		// the flag's Set fails in the CLI, and pflag says so
		err = errors.Wrapf(err, "unable to find binary at %s", req.PostRenderer)
		return nil, fmt.Errorf("invalid argument %q for %q flag: %v", req.PostRenderer, "--post-renderer", err)
	}
	return &execRenderer{path: path, env: mergedEnv(req.Env)}, nil
}

func mergedEnv(over map[string]string) []string {
	env := make([]string, 0, len(os.Environ())+len(over))
	seen := map[string]bool{}
	for _, kv := range os.Environ() {
		k := kv
		if i := strings.IndexByte(kv, '='); i >= 0 {
			k = kv[:i]
		}
		if v, ok := over[k]; ok {
			kv = k + "=" + v
			seen[k] = true
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(over))
	for k := range over {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+over[k])
	}
	return env
}

func (p *execRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	cmd := exec.Command(p.path)
	cmd.Env = p.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	go func() {
		defer stdin.Close()
		io.Copy(stdin, rendered)
	}()
	if err := cmd.Run(); err != nil {
		return nil, errors.Wrapf(err, "error while running command %s. error output:\n%s", p.path, stderr.String())
	}
	return &out, nil
}
