package rpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sepp-io/sepp/rpc"
)

// requireTool returns the path of the first of names on PATH. Where none
// is, the test skips saying why, or fails under SEPP_REQUIRE_ALL (CI),
// like the admin UI's browser tests.
func requireTool(t *testing.T, install string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	why := "no " + strings.Join(names, " or ") + " on PATH (" + install + ")"
	if os.Getenv("SEPP_REQUIRE_ALL") != "" {
		t.Fatal("SEPP_REQUIRE_ALL is set (CI) but " + why)
	}
	t.Skip("browser test skipped: " + why)
	return ""
}

// buildTypeScriptSDK compiles sdk/typescript/src with the SDK's own
// tsconfig (ES2020 modules, strict) into a temporary directory and returns
// the directory holding index.js: the files a user serves to a browser
// when they use the package without a bundler.
func buildTypeScriptSDK(t *testing.T) string {
	t.Helper()
	tsc := requireTool(t, "apt-get install node-typescript", "tsc")
	sdk, err := filepath.Abs(filepath.Join("..", "sdk", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, err := json.Marshal(map[string]any{
		"extends": filepath.Join(sdk, "tsconfig.json"),
		"compilerOptions": map[string]any{
			"rootDir": sdk, "outDir": filepath.Join(dir, "out"), "declaration": false, "sourceMap": false,
		},
		"include": []string{filepath.Join(sdk, "src", "**", "*.ts")},
	})
	if err != nil {
		t.Fatal(err)
	}
	tsconfig := filepath.Join(dir, "tsconfig.json")
	if err := os.WriteFile(tsconfig, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tsc, "-p", tsconfig).CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
	js := filepath.Join(dir, "out", "src")
	if _, err := os.Stat(filepath.Join(js, "index.js")); err != nil {
		t.Fatalf("tsc wrote no index.js: %v", err)
	}
	return js
}

// browserPage is a page that imports the SDK as an ES module from its own
// origin, enqueues a job on the sepp node at API (another origin), reserves
// it, acks it and writes what it got into #out, with data-state "done" or
// "error".
const browserPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>sepp from a browser</title></head>
<body><pre id="out">running</pre>
<script type="module">
import { SeppClient } from "/sdk/index.js";
const out = document.getElementById("out");
const queue = new URLSearchParams(location.search).get("queue");
try {
  const c = await SeppClient.connect(%q, { retryTimeoutMs: 3000 });
  const r = await c.enqueue({ queue, jobType: "greet", payload: "hello from " + location.origin });
  const ds = await c.reserve(queue, { max: 1 });
  if (ds.length !== 1) throw new Error("reserved " + ds.length + " jobs");
  await c.ack(ds[0].ctx);
  await c.close();
  out.textContent = JSON.stringify({ enqueued: r.jobId, reserved: ds[0].job.id, payload: new TextDecoder().decode(ds[0].job.payload) });
  out.dataset.state = "done";
} catch (e) {
  out.textContent = String(e && e.name) + ": " + String(e && e.message);
  out.dataset.state = "error";
}
</script></body></html>
`

// servePage serves browserPage and the compiled SDK on a new 127.0.0.1
// port, an origin of its own. The page calls the API at *apiURL, read at
// each request: the API server's allow list must name the page's origin,
// so the page server may have to start first.
func servePage(t *testing.T, sdkDir string, apiURL *string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/sdk/", http.StripPrefix("/sdk/", http.FileServer(http.Dir(sdkDir))))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, browserPage, *apiURL)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestAPIServer_CORSFromABrowser loads, in headless Chromium, a page from
// one origin that uses the TypeScript SDK (compiled by tsc, imported as an
// ES module) against a sepp API port on another origin: with the page's
// origin in cors_allowed_origins it enqueues and reserves its job; from
// an origin not listed the browser refuses the call after the preflight
// and nothing reaches the queue.
func TestAPIServer_CORSFromABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium := requireTool(t, "apt-get install chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
	sdkDir := buildTypeScriptSDK(t)

	// Two page origins (127.0.0.1, two ports) and the API port on a
	// third; it allows the first only.
	var apiURL string
	allowed := servePage(t, sdkDir, &apiURL)
	refused := servePage(t, sdkDir, &apiURL)
	apiURL = serveAPIWith(t, rpc.APIOptions{CORSAllowedOrigins: []string{allowed}})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
	)...)
	defer acancel()
	tab, tcancel := chromedp.NewContext(actx)
	defer tcancel()

	run := func(page, queue string) (state, out string) {
		t.Helper()
		err := chromedp.Do(tab,
			chromedp.Navigate(page+"/?queue="+queue),
			chromedp.WaitVisible(chromedp.CSS("#out[data-state]")),
		)
		if err != nil {
			t.Fatalf("load %s: %v", page, err)
		}
		out, err = chromedp.Run(tab, chromedp.Text(chromedp.CSS("#out")))
		if err != nil {
			t.Fatal(err)
		}
		state, err = chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("out").dataset.state`))
		if err != nil {
			t.Fatal(err)
		}
		return state, out
	}

	t.Run("AllowedOriginEnqueuesAndReserves", func(t *testing.T) {
		state, out := run(allowed, "from-allowed")
		if state != "done" {
			t.Fatalf("page of %s against %s: %s %s", allowed, apiURL, state, out)
		}
		var got struct{ Enqueued, Reserved, Payload string }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("page wrote %q: %v", out, err)
		}
		if got.Enqueued == "" || got.Reserved != got.Enqueued || got.Payload != "hello from "+allowed {
			t.Errorf("page got %+v: want the job it enqueued, payload %q", got, "hello from "+allowed)
		}
	})

	t.Run("OtherOriginRefusedByTheBrowser", func(t *testing.T) {
		state, out := run(refused, "from-refused")
		// The browser hides why: fetch fails with "TypeError: Failed to
		// fetch", which the SDK reports once its retries are spent.
		if state != "error" || !strings.Contains(out, "Failed to fetch") {
			t.Fatalf("page of %s: %s %q, want an error from fetch", refused, state, out)
		}
		// The preflight failed, so no call was sent: nothing was enqueued.
		resp, err := http.Post(apiURL+"/sepp.v1.QueueService/Reserve", "application/json", strings.NewReader(`{"queue":"from-refused","max":10}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct{ Jobs []json.RawMessage }
		if err := json.Unmarshal(body, &got); resp.StatusCode != http.StatusOK || err != nil || len(got.Jobs) != 0 {
			t.Errorf("queue from-refused after the refused page: %d %s, want no jobs", resp.StatusCode, body)
		}
	})
}
