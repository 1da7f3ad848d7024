package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// cdpBrowser is one headless Chromium driven over the DevTools protocol
// (--remote-debugging-pipe: JSON messages, each ended by a NUL byte, in on
// the browser's fd 3 and out on its fd 4), for checks that visit many
// pages: one browser start for all of them (a start costs as much CPU as
// a page of the Web UI), pages of a single-page app followed without
// reloading it (follow), and each page read as soon as it shows what the
// check waits for, not after a fixed virtual-time budget that a loaded
// machine may not meet. On this 2-core machine under load a round's page
// took 15-30 s as one `chromium --dump-dom` each, 1-2 s this way.
type cdpBrowser struct {
	cmd     *exec.Cmd
	in      io.WriteCloser // the browser's fd 3
	stderr  *strings.Builder
	session string // the one page target's, flat mode

	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpMessage
	onEvent func(method string, params json.RawMessage) // nil: events are dropped
	readErr error
	closed  chan struct{} // the browser's output ended
}

type cdpMessage struct {
	ID     int             `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts headless Chromium with one page (1600×1000) and
// stops it when the test ends.
func startBrowser(t *testing.T, ctx context.Context) *cdpBrowser {
	t.Helper()
	toR, toW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &cdpBrowser{in: toW, stderr: &strings.Builder{}, pending: map[int]chan cdpMessage{}, closed: make(chan struct{})}
	b.cmd = exec.CommandContext(ctx, chromiumBin(t), "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "--window-size=1600,1000", "about:blank")
	b.cmd.ExtraFiles = []*os.File{toR, fromW}
	b.cmd.Stderr = b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	toR.Close()
	fromW.Close()
	go b.read(fromR)
	t.Cleanup(func() {
		b.call(context.Background(), "", "Browser.close", nil, nil)
		b.in.Close()
		exited := make(chan struct{})
		go func() { b.cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			b.cmd.Process.Kill()
			<-exited
		}
	})

	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "newWindow": true, "width": 1600, "height": 1000}, &target); err != nil {
		t.Fatal(err)
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatal(err)
	}
	b.session = attached.SessionID
	if err := b.call(ctx, b.session, "Page.enable", nil, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

// read delivers the browser's replies to their calls, and its events to
// onEvent when it is set (else they are dropped).
func (b *cdpBrowser) read(r io.ReadCloser) {
	defer r.Close()
	br := bufio.NewReader(r)
	var err error
	for {
		var line []byte
		line, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m cdpMessage
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		if m.ID == 0 {
			b.mu.Lock()
			on := b.onEvent
			b.mu.Unlock()
			if on != nil && m.Method != "" {
				on(m.Method, m.Params)
			}
			continue
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	b.mu.Lock()
	b.readErr = err
	b.mu.Unlock()
	close(b.closed)
}

// call sends method to the browser (session "") or the page, and decodes
// its result into result when that is not nil.
func (b *cdpBrowser) call(ctx context.Context, session, method string, params, result any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return fmt.Errorf("chromium: %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("chromium: %s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-b.closed:
		return fmt.Errorf("chromium: %s: the browser exited (%v)\n%s", method, b.readErr, tail(b.stderr.String(), 2000))
	case <-ctx.Done():
		return fmt.Errorf("chromium: %s: %w", method, ctx.Err())
	}
}

// watch calls on with every event the page sends from now on, after
// enabling the domains named (e.g. "Runtime", "Log", "Network").
func (b *cdpBrowser) watch(ctx context.Context, on func(method string, params json.RawMessage), domains ...string) error {
	b.mu.Lock()
	b.onEvent = on
	b.mu.Unlock()
	for _, d := range domains {
		if err := b.call(ctx, b.session, d+".enable", nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// errNotReady is load's and follow's error when the page never showed
// what ready waits for; they still return the last DOM with it.
var errNotReady = errors.New("page not ready")

// load opens url as a new document in the page, reads its DOM every
// 250 ms until ready accepts it or within passes (errNotReady, with the
// last DOM), then writes a screenshot (PNG) when screenshot is set.
func (b *cdpBrowser) load(ctx context.Context, url string, within time.Duration, ready func(dom string) bool, screenshot string) (string, error) {
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.call(ctx, b.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return "", err
	}
	if nav.ErrorText != "" {
		return "", fmt.Errorf("chromium: %s: %s", url, nav.ErrorText)
	}
	return b.wait(ctx, url, within, ready, screenshot)
}

// follow is load by a click on a link to url (same origin) in the current
// page: a single-page app's router shows it without reloading its code,
// which is most of a page load's time. The app must not show the
// previous page's data under the new address; see checkWebUI.
func (b *cdpBrowser) follow(ctx context.Context, url string, within time.Duration, ready func(dom string) bool, screenshot string) (string, error) {
	href, err := json.Marshal(url)
	if err != nil {
		return "", err
	}
	click := `(function () { var a = document.createElement("a"); a.href = ` + string(href) +
		`; document.body.appendChild(a); a.click(); a.remove(); })()`
	if err := b.call(ctx, b.session, "Runtime.evaluate", map[string]any{"expression": click}, nil); err != nil {
		return "", err
	}
	return b.wait(ctx, url, within, ready, screenshot)
}

func (b *cdpBrowser) wait(ctx context.Context, url string, within time.Duration, ready func(dom string) bool, screenshot string) (string, error) {
	deadline := time.Now().Add(within)
	var dom string
	var err error
	for {
		var ev struct {
			Result struct {
				Value string `json:"value"`
			} `json:"result"`
		}
		if err := b.call(ctx, b.session, "Runtime.evaluate", map[string]any{
			"expression": "document.documentElement ? document.documentElement.outerHTML : ''", "returnByValue": true}, &ev); err != nil {
			return "", err
		}
		dom = ev.Result.Value
		if ready(dom) {
			break
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("%s: %w within %v", url, errNotReady, within)
			break
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return dom, ctx.Err()
		}
	}
	if screenshot != "" {
		var shot struct {
			Data string `json:"data"`
		}
		if err := b.call(ctx, b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
			return dom, err
		}
		png, derr := base64.StdEncoding.DecodeString(shot.Data)
		if derr != nil || len(png) == 0 {
			return dom, fmt.Errorf("chromium: screenshot of %s: %d bytes (%v)", url, len(png), derr)
		}
		if werr := os.WriteFile(screenshot, png, 0o644); werr != nil {
			return dom, werr
		}
	}
	return dom, err
}
