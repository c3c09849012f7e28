package testenv

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Prometheus is a real Prometheus server (bin/prometheus) scraping targets.
type Prometheus struct {
	// Address is its base URL.
	Address string
	cmd     *exec.Cmd
	dir     string
}

// StartPrometheus runs bin/prometheus ($LOCKSTEP_BIN when set) on a free
// port, scraping every target (host:port, path /metrics) each second, and
// waits until it is ready. Stop it with Stop.
func StartPrometheus(targets ...string) (*Prometheus, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return StartPrometheusOn(port, targets...)
}

// FreePort is a port nothing listens on now: for a server whose address
// must be known before it starts.
func FreePort() (int, error) { return freePort() }

// StartPrometheusOn is StartPrometheus on a given port.
func StartPrometheusOn(port int, targets ...string) (*Prometheus, error) {
	bin := os.Getenv("LOCKSTEP_BIN")
	if bin == "" {
		bin = filepath.Join(RepoRoot(), "bin")
	}
	exe := filepath.Join(bin, "prometheus")
	if _, err := os.Stat(exe); err != nil {
		return nil, fmt.Errorf("%w (run 'make tools', which builds bin/prometheus)", err)
	}
	dir, err := os.MkdirTemp("", "lockstep-prometheus")
	if err != nil {
		return nil, err
	}
	quoted := make([]string, len(targets))
	for i, t := range targets {
		quoted[i] = fmt.Sprintf("%q", t)
	}
	config := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n- job_name: test\n  static_configs:\n  - targets: [%s]\n",
		strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		return nil, err
	}
	p := &Prometheus{Address: fmt.Sprintf("http://127.0.0.1:%d", port), dir: dir}
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(exe, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", exe, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.Address + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
			err = fmt.Errorf("/-/ready answered %s", resp.Status)
		}
		if time.Now().After(deadline) {
			_ = p.Stop()
			out, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			return nil, fmt.Errorf("prometheus not ready after 60s: %w\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond) // polling a process coming up, with a deadline
	}
}

// Stop ends the server and removes its data.
func (p *Prometheus) Stop() error {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
	return os.RemoveAll(p.dir)
}

// WaitForSample waits until query has at least one sample, so that a test's
// first measurement sees its target scraped.
func (p *Prometheus) WaitForSample(ctx context.Context, query string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.Address+"/api/v1/query?"+url.Values{"query": {query}}.Encode(), nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
			if strings.Contains(string(body), `"value"`) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no sample of %s: %w", query, ctx.Err())
		case <-time.After(200 * time.Millisecond): // the next scrape
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Exporter serves the gauge test_error_ratio{ns="..."}, one series per
// namespace a test set: a target whose values the tests move.
type Exporter struct{ ratios sync.Map }

// Set reports v for namespace ns from now on.
func (e *Exporter) Set(ns, v string) { e.ratios.Store(ns, v) }

// ServeHTTP writes the series in Prometheus's text format.
func (e *Exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, "# TYPE test_error_ratio gauge")
	e.ratios.Range(func(ns, v any) bool {
		fmt.Fprintf(w, "test_error_ratio{ns=%q} %s\n", ns, v)
		return true
	})
}
